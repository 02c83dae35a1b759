//! Measures a task's activation moments ([`crate::profile::moments`]) on the same
//! text as the sensitivity measurement: the profiling split of the task's files,
//! each example as its prompt and first reference (never the evaluation split),
//! run through the whole model in chunks while an observer sums each layer's FFN
//! activations and their products.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::engine::{LoadOptions, Model};
use crate::model::ModelInfo;
use crate::profile::moments::{find_moments, layer_passes, moments_path, write_moments, MomentsHeader, MomentsObserver, MOMENTS_FORMAT};
use crate::profile::ranking::ModelFingerprint;
use crate::profile::text::{data_names, profiling_text, text_nll};
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

/// Most bytes of sums one text pass holds (a packed f32 triangle per layer): a model
/// whose layers need more is measured in several passes over the same text, a
/// group of layers each ([`layer_passes`]), with the same sums as one pass.
/// [`MOMENTS_PASS_BYTES_ENV`] sets another budget (a device with less memory).
pub const MOMENTS_PASS_BYTES: u64 = 4 << 30;

/// Environment variable overriding [`MOMENTS_PASS_BYTES`] (bytes).
pub const MOMENTS_PASS_BYTES_ENV: &str = "SELECTINFER_MOMENTS_PASS_BYTES";

/// Runs the text through the model, summing every layer's activations (in as many
/// passes as [`MOMENTS_PASS_BYTES`] needs), and writes the moments file that
/// `out_for` names for the measured model; returns its header and path.
pub fn measure_moments(req: &MomentsRequest, out_for: impl FnOnce(&ModelFingerprint) -> PathBuf) -> anyhow::Result<(MomentsHeader, PathBuf)> {
    use std::io::Write;
    let model = Model::load(&req.model, &LoadOptions::default())?;
    let info = ModelInfo::from_gguf(model.gguf())?;
    let fingerprint = crate::profile::fingerprint(&req.model, &info)?;
    let out = out_for(&fingerprint);
    let out = out.as_path();
    let activation = info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    let n_ff: Vec<usize> = info.n_ff.iter().map(|&n| n as usize).collect();
    let text = profiling_text(&req.data, req.task)?;
    let budget = match std::env::var(MOMENTS_PASS_BYTES_ENV) {
        Ok(v) => v.trim().parse::<u64>().with_context(|| format!("{MOMENTS_PASS_BYTES_ENV}={v:?} is not a number of bytes"))?,
        Err(_) => MOMENTS_PASS_BYTES,
    };
    let passes = layer_passes(&n_ff, budget);
    // Each pass's layers go to a body file beside `out` (gigabytes for a 1.5B
    // model), which the header then precedes in the file written atomically.
    let body = crate::fsutil::TempPath::beside(out);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(body.path()).with_context(|| format!("writing {}", body.path().display()))?);
    let (mut tokens, mut chunks) = (Vec::with_capacity(n_ff.len()), 0);
    for (i, layers) in passes.iter().enumerate() {
        if passes.len() > 1 {
            eprintln!("profile moments: layers {}..{} (pass {} of {})", layers.start, layers.end, i + 1, passes.len());
        }
        let (observer, moments) = MomentsObserver::for_layers(activation, &n_ff, layers.clone(), req.threads.max(1) as usize);
        chunks = text_nll("moments", &model, &text, req.ctx, Some(req.chunks), req.threads, Some(Box::new(observer)))?.chunks;
        let measured = std::mem::take(&mut *moments.lock().expect("moments lock"));
        anyhow::ensure!(measured.iter().all(|m| m.tokens > 0), "no activations were observed (is {} a gated-FFN model?)", req.model.display());
        for m in &measured {
            file.write_all(&m.bytes()).with_context(|| format!("writing {}", body.path().display()))?;
            tokens.push(m.tokens);
        }
    }
    file.flush().with_context(|| format!("writing {}", body.path().display()))?;
    drop(file);
    let header = MomentsHeader {
        format: MOMENTS_FORMAT.into(),
        task: req.task,
        model: fingerprint,
        data: data_names(&req.data),
        ctx: req.ctx,
        chunks,
        tokens,
        n_ff,
    };
    write_moments(out, &header, body.path())?;
    Ok((header, out.to_path_buf()))
}

/// Chunk length and most chunks of `profile moments` (and of moments measured on
/// first use).
pub const MOMENTS_CTX: usize = 512;
pub const MOMENTS_CHUNKS: usize = 16;

/// Measures the moments and writes DIR/moments/TASK.SHA12.bin, keyed by the
/// measured model (under a temporary name, renamed when complete).
pub fn write_task_moments(dir: &Path, req: &MomentsRequest) -> anyhow::Result<()> {
    let (header, out) = measure_moments(req, |model| moments_path(dir, req.task, &model.sha256))?;
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
        "slice: {} is missing; measuring the {task} activation moments the refit reads on {} (once; on 2 cores about 2 minutes for a 270M model, 14 for a 1.5B one)",
        path.display(),
        model.display()
    );
    let data = task.profiling_data().iter().map(PathBuf::from).collect();
    write_task_moments(dir, &MomentsRequest { model: model.to_path_buf(), task, data, ctx: MOMENTS_CTX, chunks: MOMENTS_CHUNKS, threads })
}

