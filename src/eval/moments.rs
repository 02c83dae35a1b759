//! Measures a task's activation moments ([`crate::profile::moments`]) on the same
//! text as the sensitivity measurement: the profiling split of the task's files,
//! each example as its prompt and first reference (never the evaluation split),
//! run through the whole model in chunks while an observer sums each layer's FFN
//! activations and their products.

use std::path::{Path, PathBuf};

use super::perplexity::{data_names, perplexity_observed, profiling_text};
use crate::engine::{LoadOptions, Model};
use crate::model::ModelInfo;
use crate::profile::moments::{find_moments, moments_path, write_moments, LayerMoments, MomentsHeader, MomentsObserver, MOMENTS_FORMAT};
use crate::tasks::Task;

/// What to measure.
#[derive(Debug, Clone)]
pub struct MomentsRequest {
    /// The whole model (the one slices are cut from, or the F16 it was converted from).
    pub model: PathBuf,
    pub task: Task,
    /// Task files whose profiling split is read (normally [`Task::profiling_data`]).
    pub data: Vec<PathBuf>,
    /// Chunk length and most chunks.
    pub ctx: usize,
    pub chunks: usize,
    pub threads: i32,
}

/// Runs the text through the model once, summing every layer's activations.
pub fn measure_moments(req: &MomentsRequest) -> anyhow::Result<(MomentsHeader, Vec<LayerMoments>)> {
    let model = Model::load(&req.model, &LoadOptions::default())?;
    let info = ModelInfo::from_gguf(model.gguf())?;
    let activation = info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    let n_ff: Vec<usize> = info.n_ff.iter().map(|&n| n as usize).collect();
    let (observer, moments) = MomentsObserver::new(activation, &n_ff);
    let text = profiling_text(&req.data, req.task)?;
    let run = perplexity_observed(&model, &text, req.ctx, Some(req.chunks), req.threads, Some(Box::new(observer)))?;
    let layers = std::mem::take(&mut *moments.lock().expect("moments lock"));
    anyhow::ensure!(layers.iter().all(|m| m.tokens > 0), "no activations were observed (is {} a gated-FFN model?)", req.model.display());
    let header = MomentsHeader {
        format: MOMENTS_FORMAT.into(),
        task: req.task,
        model: crate::profile::fingerprint(&req.model, &info)?,
        data: data_names(&req.data),
        ctx: req.ctx,
        chunks: run.chunks,
        tokens: layers.iter().map(|m| m.tokens).collect(),
        n_ff,
    };
    Ok((header, layers))
}

/// Chunk length and most chunks of `profile moments` (and of moments measured on
/// first use).
pub const MOMENTS_CTX: usize = 512;
pub const MOMENTS_CHUNKS: usize = 16;

/// Measures the moments and writes DIR/moments/TASK.SHA12.bin, keyed by the
/// measured model (under a temporary name, renamed when complete).
pub fn write_task_moments(dir: &Path, req: &MomentsRequest) -> anyhow::Result<()> {
    let (header, layers) = measure_moments(req)?;
    let out = moments_path(dir, req.task, &header.model.sha256);
    write_moments(&out, &header, &layers)?;
    eprintln!("profile moments: {} tokens in {} chunks -> {}", header.tokens[0], header.chunks, out.display());
    Ok(())
}

/// The moments a refit slice reads, measured as `profile moments` would (the task's
/// bundled profiling text, on the model being sliced, `sha`) when the profile has
/// none of it or of the files it was converted from (`lineage`) yet: the refit is
/// `slice`'s default, and moments (some hundred MB per task) are regenerated, not
/// committed. They are keyed by the model, so no other model's moments change.
pub fn measure_on_first_use(dir: &Path, model: &Path, task: Task, threads: i32, sha: &str, lineage: &[String]) -> anyhow::Result<()> {
    if find_moments(dir, task, sha, lineage)?.is_some() {
        return Ok(());
    }
    let path = moments_path(dir, task, sha);
    eprintln!(
        "slice: {} is missing; measuring the {task} activation moments the refit reads on {} (once; about 2 minutes for a 270M model on 2 cores)",
        path.display(),
        model.display()
    );
    let data = task.profiling_data().iter().map(PathBuf::from).collect();
    write_task_moments(dir, &MomentsRequest { model: model.to_path_buf(), task, data, ctx: MOMENTS_CTX, chunks: MOMENTS_CHUNKS, threads })
}

