//! Measures a task's per-layer output sensitivity
//! ([`crate::profile::sensitivity::LayerSensitivity`]): the whole model's
//! perplexity on the task's profiling text, then, for each layer in turn, the
//! perplexity with only that layer sliced as `slice` would slice it (the top delta*N
//! of the task ranking, then the model-wide ranking up to gamma*N). The slice is
//! applied by zeroing the dropped neurons' activations in the graph
//! ([`NeuronMask`]), which computes what the one-layer file computes without
//! writing it (tests compare the two).
//!
//! The text is the profiling split of the task's bundled files, each example as its
//! prompt and first reference: the same examples the profile saw, none of the
//! evaluation split, so a budget spent by these costs is not tuned on the scores it
//! is judged by.

use std::path::PathBuf;

use super::mask::NeuronMask;
use crate::engine::{LoadOptions, Model};
use crate::model::ModelInfo;
use crate::profile::keep::{keep_from_profile, slice_rankings, Secondary};
use crate::profile::ranking::{lineage, Importance};
use crate::profile::sensitivity::{LayerCost, LayerSensitivity, SENSITIVITY_FORMAT};
use crate::profile::text::{data_names, profiling_text, text_nll};
use crate::tasks::Task;

/// What to measure.
#[derive(Debug, Clone)]
pub struct SensitivityRequest {
    /// The whole model the profile was made from (or a conversion of it).
    pub model: PathBuf,
    /// Profile directory.
    pub profile: PathBuf,
    pub task: Task,
    /// Ranking the one-layer slices are taken from.
    pub importance: Importance,
    /// gamma and delta of each one-layer slice.
    pub load: f64,
    pub static_share: f64,
    /// Task files whose profiling split is scored (normally [`Task::profiling_data`]).
    pub data: Vec<PathBuf>,
    /// Chunk length and most chunks.
    pub ctx: usize,
    pub chunks: usize,
    pub threads: i32,
    /// Print one line per layer to stderr.
    pub progress: bool,
}

/// Runs the measurement (n_layer + 1 perplexity runs).
pub fn measure(req: &SensitivityRequest) -> anyhow::Result<LayerSensitivity> {
    anyhow::ensure!(req.load > 0.0 && req.load < 1.0, "--load (gamma) must be in (0, 1) to slice a layer, got {}", req.load);
    anyhow::ensure!(req.static_share >= 0.0 && req.static_share <= req.load, "--static (delta) must be in [0, --load], got {}", req.static_share);
    let model = Model::load(&req.model, &LoadOptions::default())?;
    let info = ModelInfo::from_gguf(model.gguf())?;
    let activation = info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    // The paper's slice (the model-wide secondary ranking) of the chosen importance.
    let fp = crate::profile::fingerprint(&req.model, &info)?;
    let (base, secondary) = slice_rankings(&req.profile, req.importance, Secondary::Model, req.task, &fp, &lineage(model.gguf()))?;

    let text = profiling_text(&req.data, req.task)?;
    let run = |mask: Option<NeuronMask>| {
        text_nll("sensitivity", &model, &text, req.ctx, Some(req.chunks), req.threads, mask.map(|m| Box::new(m) as Box<_>))
    };
    let whole = run(None)?;
    if req.progress {
        eprintln!("sensitivity: whole model {:.4} ({} tokens in {} chunks)", whole.ppl, whole.tokens, whole.chunks);
    }
    let mut layers = Vec::with_capacity(info.n_layer);
    for l in 0..info.n_layer {
        let keep = keep_from_profile(&base.layers[l], &secondary.layers[l], req.load, req.static_share);
        let keeps: Vec<Option<Vec<u32>>> = (0..info.n_layer).map(|i| (i == l).then(|| keep.kept.clone())).collect();
        let p = run(Some(NeuronMask::new(activation, keeps)))?;
        let cost = p.mean_nll - whole.mean_nll;
        if req.progress {
            eprintln!("sensitivity: layer {l}: {:.4} ({:+.2}%)", p.ppl, cost.exp_m1() * 100.0);
        }
        layers.push(LayerCost { layer: l, ppl: p.ppl, cost });
    }
    Ok(LayerSensitivity {
        format: SENSITIVITY_FORMAT.into(),
        task: req.task,
        importance: req.importance,
        model: base.model.clone(),
        load: req.load,
        static_share: req.static_share,
        data: data_names(&req.data),
        ctx: req.ctx,
        chunks: whole.chunks,
        tokens: whole.tokens,
        reference_ppl: whole.ppl,
        layers,
    })
}
