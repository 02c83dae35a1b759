//! Per-layer output sensitivity of a task (issue #16): what slicing ONE layer costs
//! the model's output, measured as the increase of the mean negative log-likelihood
//! of the task's profiling text when only that layer is sliced at gamma and every
//! other layer stays whole. `selectinfer profile sensitivity` writes one file per
//! task and measured model (`DIR/sensitivity/<task>.<sha12>.json`, keyed like the
//! moments, or under `DIR/contribution/` for the contribution ranking);
//! `slice --budget output` reads it
//! ([`crate::select::variant::Budget::Output`]). The measurement itself runs the
//! engine and lives with the fit ([`crate::fit::sensitivity`]).

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context};

use super::ranking::{Importance, ModelFingerprint};
use crate::tasks::Task;

/// Format tag of a sensitivity file.
pub const SENSITIVITY_FORMAT: &str = "selectinfer-sensitivity/1";

/// What one layer's slice costs the output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerCost {
    /// Layer index.
    pub layer: usize,
    /// Perplexity with only this layer sliced.
    pub ppl: f64,
    /// Increase of the mean NLL over the whole model's (nats; ln of the perplexity
    /// ratio). May be slightly negative for a layer whose slice costs nothing.
    pub cost: f64,
}

/// A task's per-layer output sensitivity.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerSensitivity {
    /// [`SENSITIVITY_FORMAT`].
    pub format: String,
    /// The task whose slice and text were measured.
    pub task: Task,
    /// Ranking the one-layer slices were taken from.
    pub importance: Importance,
    /// The measured model.
    pub model: ModelFingerprint,
    /// Load share gamma of the sliced layer.
    pub load: f64,
    /// Static share delta of the sliced layer.
    pub static_share: f64,
    /// Text scored: the task's profiling split, each example's prompt and first
    /// reference (never the evaluation split), from these files.
    pub data: Vec<String>,
    /// Chunk length and chunks scored.
    pub ctx: usize,
    pub chunks: usize,
    /// Tokens scored per run.
    pub tokens: usize,
    /// Perplexity of the whole model on the same text.
    pub reference_ppl: f64,
    /// One entry per layer, in layer order.
    pub layers: Vec<LayerCost>,
}

/// The sensitivity file of `task` measured on the model with sha256 `model_sha`,
/// in a ranking directory (the profile directory, or its `contribution/` for that
/// ranking).
pub fn sensitivity_path(ranking_dir: &Path, task: Task, model_sha: &str) -> PathBuf {
    ranking_dir.join("sensitivity").join(format!("{task}.{}.json", &model_sha[..model_sha.len().min(12)]))
}

/// The un-keyed name of earlier versions (`sensitivity/<task>.json`): read only
/// when it names the model, never written.
pub fn legacy_sensitivity_path(ranking_dir: &Path, task: Task) -> PathBuf {
    ranking_dir.join("sensitivity").join(format!("{task}.json"))
}

/// The sensitivity file a slice of the model `sha` (converted from `lineage`)
/// reads: measured on it, else on a file it was converted from, else the un-keyed
/// file of an earlier version when it names one of these. `None` when there is none.
pub fn find_sensitivity(ranking_dir: &Path, task: Task, sha: &str, lineage: &[String]) -> anyhow::Result<Option<PathBuf>> {
    let model_of = |p: &Path| read_sensitivity(p).map(|s| s.model.sha256);
    super::ranking::find_for_model(|s| sensitivity_path(ranking_dir, task, s), legacy_sensitivity_path(ranking_dir, task), model_of, sha, lineage)
}

/// Reads and checks a sensitivity file.
pub fn read_sensitivity(path: &Path) -> anyhow::Result<LayerSensitivity> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let s: LayerSensitivity = serde_json::from_slice(&bytes).with_context(|| format!("{} is not a sensitivity file", path.display()))?;
    ensure!(s.format == SENSITIVITY_FORMAT, "{} has format {:?}, expected {SENSITIVITY_FORMAT:?}", path.display(), s.format);
    ensure!(
        s.layers.iter().enumerate().all(|(i, c)| c.layer == i && c.cost.is_finite()),
        "{} must list every layer once, in order, with a finite cost",
        path.display()
    );
    ensure!(s.layers.len() == s.model.n_layer, "{} lists {} layers of a {}-layer model", path.display(), s.layers.len(), s.model.n_layer);
    Ok(s)
}
