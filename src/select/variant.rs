//! Selection variants of `slice` beyond the paper's (issue #16), each recorded in
//! the sliced file's metadata:
//!
//! - **importance** ([`Importance`]): which ranking a profile slice uses, mean
//!   |a_n| (the paper's) or the contribution mean a_n^2 x ||W_down[:, n]||^2;
//! - **budget** ([`Budget`]): the same width gamma*N in every sparsified layer (the
//!   paper's), or per-layer widths for the same total FFN bytes, spent where a
//!   neuron captures the largest share of its layer's importance mass; the
//!   sparsified range is then the layers that keep fewer than all their neurons;
//!   or widths for the same bytes weighted by what each layer's slice costs the
//!   output (measured per task, [`crate::profile::sensitivity`]);
//! - **compensation** ([`Compensation`]): nothing, or the mean contribution of the
//!   dropped neurons over the profiling tokens, W_down[:, dropped] x mean(a_dropped),
//!   written as the layer's `ffn_down` bias (training-free bias compensation, as in
//!   FLAP). llama.cpp's llama builder loads an optional `ffn_down.bias`, and so do
//!   its gemma3 builder with patch 0009 and its qwen2 and qwen3 builders with patch
//!   0010; other builders do not, so compensation is refused there;
//! - **secondary** ([`Secondary`]): where the loaded neurons beyond the static
//!   delta*N come from: the model-wide ranking (the paper's, so a slice keeps
//!   neurons other tasks use) or the task's own ranking (the slice is the task's top
//!   gamma*N).

use std::ops::Range;
use std::path::Path;

use anyhow::{bail, ensure, Context};

use super::meta::key;
pub use crate::fit::computed::ComputedFit;
use crate::fit::down_bias_unread;
pub use crate::fit::Compensation;
use crate::gguf::{GgufFile, Value};
use crate::model::ModelInfo;
pub use crate::profile::ranking::Importance;
pub use crate::profile::keep::Secondary;
use crate::profile::keep::{count, slice_rankings};
use crate::profile::ranking::{model_ranking_path, read_ranking, task_ranking_path, ModelFingerprint, Ranking};
use crate::profile::moments::required_moments;
use crate::profile::sensitivity::{find_sensitivity, read_sensitivity, sensitivity_path, LayerSensitivity};
use crate::tasks::Task;
use crate::util::Decided;

/// How the loaded neurons are spread over layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Budget {
    /// round(gamma*N) in every layer of the range (the paper's).
    #[default]
    Uniform,
    /// The same total FFN bytes, per-layer widths by captured importance share.
    Sensitivity,
    /// The same total FFN bytes, per-layer widths by what each layer's slice costs
    /// the output (the task's measured sensitivity file, `profile sensitivity`).
    Output,
}

impl Budget {
    /// The name used on the command line and in metadata.
    pub fn name(self) -> &'static str {
        match self {
            Budget::Uniform => "uniform",
            Budget::Sensitivity => "sensitivity",
            Budget::Output => "output",
        }
    }

    /// Whether per-layer widths are chosen (the range then follows the widths).
    pub fn is_per_layer(self) -> bool {
        self != Budget::Uniform
    }
}

/// Least cost (nats) a layer's measured sensitivity counts for under
/// [`Budget::Output`]: a layer whose slice cost nothing (or measured slightly
/// negative, within the measurement's noise) still ranks its own neurons, but below
/// every layer with a measured cost.
pub const MIN_LAYER_COST: f64 = 1e-4;

/// The compensation of a profile slice of `src` when none is asked for: the refit
/// (`Refit`, measured to keep more of every task's score than the paper's selection
/// on both models here, docs/selection.md) where the loader reads the bias it
/// writes and the model has no down biases of its own; nothing elsewhere, and
/// nothing for a random slice (`profile_slice` false). `Err` carries why the refit
/// does not apply, for the caller to tell.
pub fn default_compensation(src: &GgufFile, info: &ModelInfo, profile_slice: bool) -> Result<Compensation, String> {
    if !profile_slice {
        return Ok(Compensation::None);
    }
    if let Some(why) = down_bias_unread(info) {
        return Err(format!("the refit writes {why}"));
    }
    if let Some(t) = src.tensors.iter().find(|t| t.name.ends_with(".ffn_down.bias")) {
        return Err(format!("{} already has {}, and compensating a model with down biases is not supported", src.path.display(), t.name));
    }
    Ok(Compensation::Refit)
}

/// The compensation of a slice and why: as asked (`asked`); else
/// [`default_compensation`]'s, where a refit also needs `refit_ready` to hold (its
/// moments; `Err` says what is missing). `slice` measures the moments on first use
/// (always ready); `chat` does not (measuring loads the whole model, which a memory
/// budget may not hold). The value is `None` with the reason where the refit does
/// not apply: [`Decided::note`] is what the caller tells.
pub fn decide_compensation(
    asked: Option<Compensation>,
    src: &GgufFile,
    info: &ModelInfo,
    profile_slice: bool,
    refit_ready: impl FnOnce() -> Result<(), String>,
) -> Decided<Compensation> {
    if let Some(c) = asked {
        return Decided::asked(c, "--compensate");
    }
    match default_compensation(src, info, profile_slice) {
        Ok(Compensation::Refit) => match refit_ready() {
            Ok(()) => Decided::by_default(Compensation::Refit, "a profile slice of a model whose loader reads the down bias"),
            Err(why) => Decided::by_default(Compensation::None, why),
        },
        Ok(c) => Decided::by_default(c, "a random slice has no profile to fit from"),
        Err(why) => Decided::by_default(Compensation::None, why),
    }
}

impl Decided<Compensation> {
    /// What to tell where a profile slice gets no compensation by default:
    /// `no compensation (WHY)`; nothing otherwise (a random slice has none to get).
    pub fn note(&self, profile_slice: bool) -> Option<String> {
        (self.default && profile_slice && self.value == Compensation::None).then(|| format!("no compensation ({})", self.why))
    }
}

/// The variant of one slice.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SliceVariant {
    /// Ranking used.
    pub importance: Importance,
    /// Spread over layers.
    pub budget: Budget,
    /// Least load share of any layer under a per-layer budget.
    pub budget_floor: f64,
    /// Compensation of the dropped neurons.
    pub compensation: Compensation,
    /// Ranking of the loaded neurons after the static ones.
    pub secondary: Secondary,
    /// The selective computation that `refit-computed` fits for (unused otherwise).
    pub computed_fit: ComputedFit,
}

impl Default for SliceVariant {
    fn default() -> SliceVariant {
        SliceVariant { importance: Importance::Activation, budget: Budget::Uniform, budget_floor: 0.4, compensation: Compensation::None, secondary: Secondary::Model, computed_fit: ComputedFit::default() }
    }
}

impl SliceVariant {
    /// Whether this is the paper's selection (nothing recorded beyond it).
    pub fn is_default(&self) -> bool {
        *self == SliceVariant { budget_floor: self.budget_floor, computed_fit: self.computed_fit, ..SliceVariant::default() }
    }

    /// The variant whose `refit-computed` fits the cell's computation: phi and alpha
    /// of a computing cell (`None` keeps the defaults, as for dense-loaded).
    pub fn fitted_for(self, compute: Option<(f64, f64)>) -> SliceVariant {
        match compute {
            Some((phi, alpha)) if self.compensation == Compensation::RefitComputed => {
                SliceVariant { computed_fit: ComputedFit { compute: phi, token_share: alpha, ..self.computed_fit }, ..self }
            }
            _ => self,
        }
    }

    /// A short label, e.g. `importance=contribution,budget=sensitivity` (empty for
    /// the paper's selection), as eval rows record it.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if self.importance != Importance::Activation {
            parts.push(format!("importance={}", self.importance.name()));
        }
        if self.budget.is_per_layer() {
            parts.push(format!("budget={}/{}", self.budget.name(), self.budget_floor));
        }
        if self.compensation == Compensation::RefitComputed {
            let f = self.computed_fit;
            parts.push(format!("compensation={}/{}/{}/{}", self.compensation.name(), f.compute, f.token_share, f.decode_share));
        } else if self.compensation != Compensation::None {
            parts.push(format!("compensation={}", self.compensation.name()));
        }
        if self.secondary != Secondary::Model {
            parts.push(format!("secondary={}", self.secondary.name()));
        }
        parts.join(",")
    }

    /// Reads the variant from a sliced file's metadata (files without the keys are
    /// the paper's selection).
    pub fn from_gguf(g: &GgufFile) -> SliceVariant {
        let d = SliceVariant::default();
        let s = |k: &str| g.get_str(&key(k)).map(str::to_string);
        SliceVariant {
            importance: if s("importance").as_deref() == Some("contribution") { Importance::Contribution } else { d.importance },
            budget: match s("budget").as_deref() {
                Some("sensitivity") => Budget::Sensitivity,
                Some("output") => Budget::Output,
                _ => d.budget,
            },
            budget_floor: g.get(&key("budget_floor")).and_then(Value::as_f64).unwrap_or(d.budget_floor),
            compensation: match s("compensation").as_deref() {
                Some("mean") => Compensation::Mean,
                Some("refit") => Compensation::Refit,
                Some("refit-chained") => Compensation::RefitChained,
                Some("refit-computed") => Compensation::RefitComputed,
                _ => d.compensation,
            },
            secondary: if s("secondary").as_deref() == Some("task") { Secondary::Task } else { d.secondary },
            computed_fit: {
                let f = |k: &str, d: f64| g.get(&key(k)).and_then(Value::as_f64).unwrap_or(d);
                let c = d.computed_fit;
                ComputedFit { compute: f("fit_compute", c.compute), token_share: f("fit_token_share", c.token_share), decode_share: f("fit_decode_share", c.decode_share) }
            },
        }
    }

    /// Metadata keys of a non-default variant.
    pub fn to_metadata(&self) -> Vec<(String, Value)> {
        if self.is_default() {
            return Vec::new();
        }
        let mut m = vec![
            (key("importance"), Value::String(self.importance.name().into())),
            (key("budget"), Value::String(self.budget.name().into())),
            (key("compensation"), Value::String(self.compensation.name().into())),
        ];
        if self.budget.is_per_layer() {
            m.push((key("budget_floor"), Value::F64(self.budget_floor)));
        }
        if self.secondary != Secondary::Model {
            m.push((key("secondary"), Value::String(self.secondary.name().into())));
        }
        if self.compensation == Compensation::RefitComputed {
            let f = self.computed_fit;
            m.push((key("fit_compute"), Value::F64(f.compute)));
            m.push((key("fit_token_share"), Value::F64(f.token_share)));
            m.push((key("fit_decode_share"), Value::F64(f.decode_share)));
        }
        m
    }

    /// The sparsified range and each layer's load share before block rounding:
    /// `gamma` over `range` (uniform), or the [`allocate`]d widths for the same
    /// bytes (sensitivity and output; need a profile, and output the sensitivity
    /// measured on the model `sha`, converted from `lineage`).
    #[allow(clippy::too_many_arguments)]
    pub fn layer_loads(
        &self,
        src: &GgufFile,
        info: &ModelInfo,
        range: Range<usize>,
        gamma: f64,
        profile: Option<(&Path, Task)>,
        sha: &str,
        lineage: &[String],
    ) -> anyhow::Result<(Range<usize>, Vec<f64>)> {
        if self.budget == Budget::Uniform {
            return Ok((range, vec![gamma; info.n_layer]));
        }
        let Some((dir, task)) = profile else { bail!("--budget {} needs a profile (--profile DIR --task T), not --random", self.budget.name()) };
        ensure!(
            self.budget_floor > 0.0 && self.budget_floor <= gamma,
            "--budget-floor must be in (0, --load = {gamma}], got {}",
            self.budget_floor
        );
        let base = self.ranking(dir, Some(task))?;
        let bytes = layer_ffn_bytes(src, info.n_layer);
        let weights = match self.budget {
            Budget::Output => output_weights(&base, &self.sensitivity(dir, task, info, sha, lineage)?),
            _ => share_weights(&base),
        };
        let kept = allocate(&base, &weights, &info.n_ff, &bytes, &range, gamma, self.budget_floor);
        let loads: Vec<f64> = kept.iter().zip(&info.n_ff).map(|(&k, &n)| k as f64 / n as f64).collect();
        let partial: Vec<usize> = (0..info.n_layer).filter(|&l| kept[l] < info.n_ff[l] as usize).collect();
        let new_range = match (partial.first(), partial.last()) {
            (Some(&a), Some(&b)) => a..b + 1,
            _ => range,
        };
        Ok((new_range, loads))
    }

    /// The task's measured output sensitivity for this variant's ranking, measured
    /// on the model `sha` (or a file it was converted from, `lineage`).
    pub fn sensitivity(&self, dir: &Path, task: Task, info: &ModelInfo, sha: &str, lineage: &[String]) -> anyhow::Result<LayerSensitivity> {
        let Some(path) = find_sensitivity(&self.importance.ranking_dir(dir), task, sha, lineage)? else {
            let path = sensitivity_path(&self.importance.ranking_dir(dir), task, sha);
            bail!(
                "{} is missing: --budget output needs the task's measured per-layer sensitivity \
                 (selectinfer profile sensitivity -m MODEL {} --task {task}{})",
                path.display(),
                dir.display(),
                if self.importance == Importance::Contribution { " --importance contribution" } else { "" }
            );
        };
        let s = read_sensitivity(&path)?;
        ensure!(
            s.model.sha256 == sha || lineage.contains(&s.model.sha256),
            "{} was measured on {}, not on this model or a file it was converted from",
            path.display(),
            s.model.file
        );
        ensure!(s.task == task, "{} holds the sensitivity of {}, not {task}", path.display(), s.task);
        ensure!(s.importance == self.importance, "{} was measured with {} rankings, not {}", path.display(), s.importance.name(), self.importance.name());
        ensure!(
            s.model.n_ff == info.n_ff,
            "{} was measured on a model with FFN widths {:?}, not this one's {:?}",
            path.display(),
            s.model.n_ff,
            info.n_ff
        );
        Ok(s)
    }

    /// The base (the task's) and secondary rankings a profile slice of `task` takes
    /// its neurons from ([`slice_rankings`]).
    pub fn slice_rankings(&self, dir: &Path, task: Task, fp: &ModelFingerprint, lineage: &[String]) -> anyhow::Result<(Ranking, Ranking)> {
        slice_rankings(dir, self.importance, self.secondary, task, fp, lineage)
    }

    /// What a profile slice of this variant records as its profile
    /// (`selectinfer.profile_sha256`): the hash of the rankings it reads
    /// ([`super::rewrite::profile_sha256`]) and, for `--budget output`, of the
    /// sensitivity file too, and for `--compensate refit` of the moments file the
    /// model `sha` (converted from `lineage`) reads, so that a slice cut before these
    /// were measured again no longer matches them.
    pub fn selection_sha256(&self, dir: &Path, task: Task, sha: &str, lineage: &[String]) -> anyhow::Result<String> {
        let profile_dir = dir;
        let dir = self.importance.ranking_dir(dir);
        let rankings = super::rewrite::profile_sha256(&dir, task)?;
        let mut h = rankings.clone();
        if self.budget == Budget::Output {
            let path = find_sensitivity(&dir, task, sha, lineage)?.with_context(|| format!("no sensitivity of {task} in {}", dir.display()))?;
            h.push_str(&crate::util::hash::file_sha256(&path)?);
        }
        if self.compensation == Compensation::Refit {
            let path = required_moments(profile_dir, task, sha, lineage)?;
            h.push_str(&crate::util::hash::file_sha256(&path).with_context(|| format!("hashing {}", path.display()))?);
        }
        Ok(if h == rankings { rankings } else { crate::util::hash::sha256_hex(h.as_bytes()) })
    }

    /// This variant's ranking of `task` (or the model-wide one) in a profile directory.
    pub fn ranking(&self, dir: &Path, task: Option<Task>) -> anyhow::Result<Ranking> {
        let d = self.importance.ranking_dir(dir);
        let path = task.map_or_else(|| model_ranking_path(&d), |t| task_ranking_path(&d, t));
        if self.importance == Importance::Contribution && !path.exists() {
            bail!(
                "{} is missing: contribution rankings need a profile recorded with squared activations and ffn_down norms \
                 (profile the tasks again with this version, then `selectinfer profile merge {}`)",
                path.display(),
                dir.display()
            );
        }
        Ok(read_ranking(&path, dir)?)
    }

}

/// FFN tensor bytes of each layer.
pub fn layer_ffn_bytes(g: &GgufFile, n_layer: usize) -> Vec<u64> {
    let mut bytes = vec![0u64; n_layer];
    for t in g.tensors.iter().filter(|t| crate::model::is_ffn_tensor(&t.name)) {
        if let Some((l, _)) = crate::model::split_block_name(&t.name).filter(|(l, _)| *l < n_layer) {
            bytes[l] += t.n_bytes().unwrap_or(0);
        }
    }
    bytes
}

/// Layer weights of [`Budget::Sensitivity`]: 1 / the layer's total score, so that a
/// neuron's gain is the share of its layer's importance mass it captures.
pub fn share_weights(base: &Ranking) -> Vec<f64> {
    base.layers.iter().map(|r| 1.0 / r.scores.iter().sum::<f64>().max(f64::MIN_POSITIVE)).collect()
}

/// Layer weights of [`Budget::Output`]: the layer's measured cost c_l (at least
/// [`MIN_LAYER_COST`]) divided by the score mass its measured slice dropped, D_l =
/// the scores beyond the top round(gamma_m*N) of the ranking. The cost of keeping k
/// neurons is modelled as c_l x (mass beyond k) / D_l, equal to the measurement at
/// k = gamma_m*N and zero when the layer is whole, so one more neuron saves
/// weight_l x its score.
pub fn output_weights(base: &Ranking, s: &LayerSensitivity) -> Vec<f64> {
    base.layers
        .iter()
        .zip(&s.layers)
        .map(|(r, c)| {
            let dropped: f64 = r.scores.iter().skip(count(s.load, r.scores.len())).sum();
            c.cost.max(MIN_LAYER_COST) / dropped.max(f64::MIN_POSITIVE)
        })
        .collect()
}

/// Per-layer kept widths for the FFN bytes of `round(gamma*N)` in every layer of
/// `range` (the others whole), spent greedily: every layer starts at
/// `round(floor*N)`, then the next neuron goes to the layer whose next-ranked neuron
/// has the largest gain per byte, weights[l] x its score, until the next one no
/// longer fits. Layers outside `range` take part too, so the range follows.
pub fn allocate(base: &Ranking, weights: &[f64], n_ff: &[u64], bytes: &[u64], range: &Range<usize>, gamma: f64, floor: f64) -> Vec<usize> {
    let n_layer = n_ff.len();
    let per_neuron: Vec<f64> = (0..n_layer).map(|l| bytes[l] as f64 / n_ff[l] as f64).collect();
    let target: f64 = (0..n_layer)
        .map(|l| if range.contains(&l) { count(gamma, n_ff[l] as usize) as f64 * per_neuron[l] } else { bytes[l] as f64 })
        .sum();
    let mut kept: Vec<usize> = (0..n_layer).map(|l| count(floor, n_ff[l] as usize)).collect();
    let mut spent: f64 = (0..n_layer).map(|l| kept[l] as f64 * per_neuron[l]).sum();
    let gain = |l: usize, k: usize| base.layers[l].scores.get(k).map_or(f64::NEG_INFINITY, |s| s * weights[l] / per_neuron[l]);
    loop {
        let best = (0..n_layer)
            .filter(|&l| kept[l] < n_ff[l] as usize && spent + per_neuron[l] <= target + 1e-6)
            .max_by(|&a, &b| gain(a, kept[a]).total_cmp(&gain(b, kept[b])).then(b.cmp(&a)));
        let Some(l) = best else { break };
        spent += per_neuron[l];
        kept[l] += 1;
    }
    kept
}
