//! The experiment YAML: what to run, and its expansion into cells.
//!
//! Values are checked while the YAML is read (shares in (0, 1], sizes with units,
//! method names, which parameters a method takes), so a mistake is reported with
//! the field's path and line by serde_yaml, e.g.
//! `methods[2].load[1]: load must be in (0, 1], not 1.5 at line 14 column 17`.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::eval::harness::Method;
use crate::tasks::Task;

mod names;
mod values;
pub use names::share_text;
pub use values::{Grid, Layers, Share, Size, SliceBase, SliceKind};

/// Where a model comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Name: prepared files are `models/NAME.F16.gguf`, `models/NAME.q4_k_m.gguf`, ...
    pub name: String,
    /// A GGUF converted once to the F16 reference (unless it is F16 already).
    pub source: Option<PathBuf>,
    /// Instead of a source: a synthetic random-weight model of this shape
    /// (`selectinfer synth --shape`); speed and memory only.
    pub synth: Option<String>,
    /// `scripts/setup.sh` model key that fetches the source (smollm2, gemma3).
    pub setup: Option<String>,
    /// Profile directory (rankings); profiled from the F16 model if it has none.
    pub profile: PathBuf,
    /// Profiling prompts per task when the profile has to be made.
    #[serde(default = "default_profile_prompts")]
    pub profile_prompts: usize,
    /// Generated tokens per profiling prompt when the profile has to be made.
    #[serde(default = "default_profile_gen")]
    pub profile_gen_tokens: usize,
    /// Instead of `profile_prompts`: `profile`'s token budget per task (its
    /// `--tokens`), so that the experiment profiles as a user's first `profile` does.
    #[serde(default)]
    pub profile_tokens: Option<u64>,
    /// What the reference is: the source converted to F16 (the default), or the
    /// source file itself (a quantized download with no F16 original: the dense
    /// file the user runs today; the profile, moments and slices are made on it).
    #[serde(default)]
    pub reference: Reference,
}

/// The reference file of a model: what every method is compared with and what
/// profiles and slices are made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reference {
    /// The source converted to F16 (`models/NAME.F16.gguf`).
    #[default]
    F16,
    /// The source file itself, unconverted.
    Source,
}

impl ModelSpec {
    /// The reference file: `models/NAME.F16.gguf`, or the source itself.
    pub fn reference_path(&self) -> PathBuf {
        match (self.reference, &self.source) {
            (Reference::Source, Some(src)) => src.clone(),
            _ => Prep::F16.path_with(&self.name, Reference::F16),
        }
    }

    /// A prepared file's path: [`Prep::path`], with the reference (and the tag
    /// of slices cut from it) as this model says.
    pub fn file(&self, prep: &Prep) -> PathBuf {
        match prep {
            Prep::F16 => self.reference_path(),
            _ => prep.path_with(&self.name, self.reference),
        }
    }
}

fn default_profile_prompts() -> usize {
    40
}
fn default_profile_gen() -> usize {
    32
}

/// A task and how it is evaluated.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// qa, translate or summarize.
    pub task: Task,
    /// Evaluation examples (from the evaluation split).
    pub examples: usize,
    /// Solved examples before each prompt (from the profiling split).
    #[serde(default)]
    pub shots: usize,
    /// JSON Lines dataset (default: the bundled one).
    pub data: Option<PathBuf>,
}

/// The paper's settings, used where a method entry does not give its own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// gamma.
    #[serde(default = "d_load")]
    pub load: Share,
    /// delta.
    #[serde(default = "d_static", rename = "static")]
    pub static_share: Share,
    /// phi.
    #[serde(default = "d_compute")]
    pub compute: Share,
    /// alpha.
    #[serde(default = "d_token_share")]
    pub token_share: Share,
}

fn d_load() -> Share {
    Share(0.7)
}
fn d_static() -> Share {
    Share(0.3)
}
fn d_compute() -> Share {
    Share(0.4)
}
fn d_token_share() -> Share {
    Share(0.2)
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults { load: d_load(), static_share: d_static(), compute: d_compute(), token_share: d_token_share() }
    }
}

/// One method entry: a method and its parameter grid.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawMethodSpec")]
pub struct MethodSpec {
    /// The method.
    pub method: Method,
    raw: RawMethodSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMethodSpec {
    method: Method,
    load: Option<Grid<Share>>,
    #[serde(rename = "static")]
    static_share: Option<Grid<Share>>,
    compute: Option<Grid<Share>>,
    token_share: Option<Grid<Share>>,
    layers: Option<Layers>,
    seed: Option<u64>,
    mem_cap: Option<Grid<Size>>,
    /// Restrict to these tasks (default: all of the experiment's).
    tasks: Option<Vec<Task>>,
    /// Override the tasks' example counts.
    examples: Option<usize>,
    /// Speed and memory only: tokens generated per prompt, no scores.
    speed_only: Option<usize>,
    /// Selection variants of profile slices (`slice --importance/--budget/--compensate`).
    importance: Option<crate::select::variant::Importance>,
    budget: Option<crate::select::variant::Budget>,
    budget_floor: Option<Share>,
    compensate: Option<crate::select::variant::Compensation>,
    secondary: Option<crate::select::variant::Secondary>,
    /// `compensate: refit-computed`: the decode role's share of the fit
    /// (`slice --fit-decode-share`).
    fit_decode_share: Option<Share>,
    /// What prompt tokens vote by (`--vote`), for computing methods.
    vote: Option<crate::compute::Vote>,
    /// Decode shifts the ffn_down biases by each prompt's skipped neurons' mean
    /// contribution (`--decode-bias`), for computing methods.
    decode_bias: Option<bool>,
    /// Decode refits the computed ffn_down columns and bias to each prompt's loaded
    /// output with this ridge (`--decode-refit`), for computing methods.
    decode_refit: Option<f64>,
    /// The file profile slices are cut from (`f16`, `q8_0`, `q4_k_m`; default f16).
    base: Option<SliceBase>,
    /// How profile slices store `ffn_down` (`slice --down-layout`; default columns).
    down_layout: Option<crate::select::rewrite::DownLayout>,
    /// coreinfer-loading's slice: random (CoreInfer's own, profile-free; the
    /// default) or the profile's (SelectInfer's loading, then dynamic-only
    /// computation: the paper's selection without its static set).
    slice: Option<SliceKind>,
}

impl RawMethodSpec {
    fn variant(&self) -> crate::select::variant::SliceVariant {
        let d = crate::select::variant::SliceVariant::default();
        crate::select::variant::SliceVariant {
            importance: self.importance.unwrap_or(d.importance),
            budget: self.budget.unwrap_or(d.budget),
            budget_floor: self.budget_floor.map_or(d.budget_floor, |s| s.0),
            compensation: self.compensate.unwrap_or(d.compensation),
            secondary: self.secondary.unwrap_or(d.secondary),
            computed_fit: crate::select::variant::ComputedFit {
                decode_share: self.fit_decode_share.map_or(d.computed_fit.decode_share, |s| s.0),
                ..d.computed_fit
            },
        }
    }
}

impl TryFrom<RawMethodSpec> for MethodSpec {
    type Error = String;
    fn try_from(r: RawMethodSpec) -> Result<Self, String> {
        let name = r.method.name();
        let refuse = |field: &str| Err(format!("method {name} takes no {field}"));
        if !r.method.slices() && (r.load.is_some() || r.static_share.is_some()) {
            return refuse(if r.load.is_some() { "load" } else { "static" });
        }
        if !r.method.computes() && (r.compute.is_some() || r.token_share.is_some()) {
            return refuse(if r.compute.is_some() { "compute" } else { "token_share" });
        }
        if r.method == Method::CoreinferLoading && r.static_share.is_some() {
            return refuse("static (it computes dynamic neurons only)");
        }
        if r.seed.is_some() && !matches!(r.method, Method::RandomLoading | Method::CoreinferLoading) {
            return refuse("seed (only random-loading and coreinfer-loading draw neurons)");
        }
        if r.slice.is_some() && r.method != Method::CoreinferLoading {
            return refuse("slice (only coreinfer-loading chooses between a random and the profile's slice)");
        }
        let profile_slice = matches!(r.method, Method::DenseLoaded | Method::Selectinfer) || r.slice == Some(SliceKind::Profile);
        let variant_keys = r.importance.is_some() || r.budget.is_some() || r.budget_floor.is_some() || r.compensate.is_some() || r.secondary.is_some();
        if variant_keys && !profile_slice {
            return refuse("importance, budget, budget_floor, compensate or secondary (only profile slices: dense-loaded, selectinfer, coreinfer-loading with slice: profile)");
        }
        if r.budget_floor.is_some() && !r.budget.is_some_and(|b| b.is_per_layer()) {
            return refuse("budget_floor (only with budget: sensitivity or output)");
        }
        if r.fit_decode_share.is_some() && r.compensate != Some(crate::select::variant::Compensation::RefitComputed) {
            return refuse("fit_decode_share (only with compensate: refit-computed)");
        }
        if (r.base.is_some() || r.down_layout.is_some()) && !profile_slice {
            return refuse("base or down_layout (only profile slices: dense-loaded, selectinfer, coreinfer-loading with slice: profile)");
        }
        if r.seed.is_some() && r.slice == Some(SliceKind::Profile) {
            return refuse("seed with slice: profile (a profile slice draws no neurons)");
        }
        if r.vote.is_some() && !r.method.computes() {
            return refuse("vote");
        }
        if r.decode_bias.is_some() && !r.method.computes() {
            return refuse("decode_bias");
        }
        if r.decode_refit.is_some() && !r.method.computes() {
            return refuse("decode_refit");
        }
        if let Some(ridge) = r.decode_refit {
            if !(ridge > 0.0 && ridge.is_finite()) {
                return Err(format!("decode_refit (the ridge) must be a positive number, got {ridge}"));
            }
            if r.decode_bias == Some(true) {
                return Err("decode_refit already shifts the bias: it takes no decode_bias".into());
            }
        }
        if r.layers.is_some() && !(r.method.slices() || r.method.computes()) {
            return refuse("layers");
        }
        if r.method == Method::DiskOffload && r.mem_cap.is_none() {
            return Err("method disk-offload needs mem_cap (below the model's size)".into());
        }
        if matches!(&r.tasks, Some(v) if v.is_empty()) || matches!(&r.load, Some(Grid::Many(v)) if v.is_empty()) || matches!(&r.compute, Some(Grid::Many(v)) if v.is_empty()) {
            return Err("an empty list would give no cells".into());
        }
        Ok(MethodSpec { method: r.method, raw: r })
    }
}

/// A whole experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// What the experiment shows (copied into its README).
    #[serde(default)]
    pub description: String,
    /// CPU threads of every cell.
    #[serde(default = "default_threads")]
    pub threads: i32,
    /// Models.
    pub models: Vec<ModelSpec>,
    /// Tasks.
    pub tasks: Vec<TaskSpec>,
    /// The paper's settings.
    #[serde(default)]
    pub defaults: Defaults,
    /// Method entries.
    pub methods: Vec<MethodSpec>,
    /// Perplexity beside the task scores (none without this section).
    #[serde(default)]
    pub perplexity: Option<super::perplexity::PerplexitySpec>,
    /// Every cell reuses the KV cache of the prefix each prompt shares with the one
    /// before (`eval --prompt-cache`): the reference and the methods alike, so that
    /// their paired differences compare like with like.
    #[serde(default)]
    pub prompt_cache: bool,
}

fn default_threads() -> i32 {
    crate::engine::default_threads()
}

/// How a cell's model file is made.
#[derive(Debug, Clone, PartialEq)]
pub enum Prep {
    /// The F16 reference.
    F16,
    /// llama.cpp's quantizer on the F16 reference.
    Quant(&'static str),
    /// A profile-guided slice of the F16 reference.
    ProfileSlice {
        task: Task,
        load: f64,
        static_share: f64,
        layers: Option<Range<usize>>,
        variant: crate::select::variant::SliceVariant,
        /// The file it is cut from.
        base: SliceBase,
        /// How it stores `ffn_down`.
        down: crate::select::rewrite::DownLayout,
    },
    /// A random slice of the F16 reference.
    RandomSlice { load: f64, static_share: f64, layers: Option<Range<usize>>, seed: u64 },
}

/// One run: a model file, a method and its options, a task -> one CSV row.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Index into [`Experiment::models`].
    pub model: usize,
    /// The method.
    pub method: Method,
    /// The task.
    pub task: Task,
    /// Dataset.
    pub data: PathBuf,
    /// Most evaluation examples.
    pub examples: usize,
    /// k-shot examples.
    pub shots: usize,
    /// How the model file is made.
    pub prep: Prep,
    /// phi and alpha, for computing methods.
    pub compute: Option<(f64, f64)>,
    /// Dynamic neurons only (CoreInfer on a slice).
    pub no_static: bool,
    /// Sparsified layers for computing on an unsliced file.
    pub compute_layers: Option<Range<usize>>,
    /// Memory cap.
    pub mem_cap: Option<u64>,
    /// Speed-only tokens.
    pub speed_only: Option<usize>,
    /// What prompt tokens vote by.
    pub vote: crate::compute::Vote,
    /// Decode shifts the ffn_down biases (`--decode-bias`).
    pub decode_bias: bool,
    /// Decode refits the computed columns and bias with this ridge (`--decode-refit`).
    pub decode_refit: Option<f64>,
    /// Prompts reuse the prefix they share with the one before (`--prompt-cache`).
    pub prompt_cache: bool,
}

impl Experiment {
    /// Reads and checks an experiment file.
    pub fn read(path: &Path) -> anyhow::Result<Experiment> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Experiment::parse(&text).with_context(|| format!("{} is not a valid experiment", path.display()))
    }

    /// Parses and checks experiment YAML text.
    pub fn parse(text: &str) -> anyhow::Result<Experiment> {
        // serde_yaml's errors carry the field's path and line, e.g.
        // "methods[1].load[1]: ... at line 15 column 17".
        let e: Experiment = serde_yaml::from_str(text)?;
        if e.models.is_empty() || e.tasks.is_empty() || e.methods.is_empty() {
            bail!("models, tasks and methods each need at least one entry");
        }
        if let Some(p) = &e.perplexity {
            p.check()?;
        }
        let mut names: Vec<&str> = e.models.iter().map(|m| m.name.as_str()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            bail!("models: the name {} is used twice", w[0]);
        }
        for (i, m) in e.models.iter().enumerate() {
            if m.source.is_some() == m.synth.is_some() {
                bail!("models[{i}] ({}): give exactly one of source and synth", m.name);
            }
            if !m.name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
                bail!("models[{i}].name: use letters, digits, '.', '_' and '-' only, not {:?}", m.name);
            }
            if m.reference == Reference::Source && m.source.is_none() {
                bail!("models[{i}] ({}): reference: source needs a source file", m.name);
            }
        }
        for (i, m) in e.methods.iter().enumerate() {
            // A model whose reference is its source has no F16 file to quantize:
            // its quantized file is the reference itself.
            let quantizes = matches!(m.method, Method::Q4_0 | Method::Q4KM | Method::Q8_0) || m.raw.base.is_some_and(|b| b.quant().is_some());
            if let Some(model) = e.models.iter().find(|model| quantizes && model.reference == Reference::Source) {
                bail!(
                    "methods[{i}] ({}): model {} has reference: source, so there is no F16 file to quantize; its reference is the dense source file, and slices are cut from it",
                    m.method.name(),
                    model.name
                );
            }
            if let Some(tasks) = &m.raw.tasks {
                if let Some(t) = tasks.iter().find(|t| !e.tasks.iter().any(|s| s.task == **t)) {
                    bail!("methods[{i}].tasks: {t} is not among the experiment's tasks");
                }
            }
        }
        Ok(e)
    }

    /// Every cell, in file order: models, then method entries, then tasks, then grid.
    pub fn cells(&self) -> Vec<Cell> {
        let d = &self.defaults;
        let mut cells = Vec::new();
        for (mi, _) in self.models.iter().enumerate() {
            for m in &self.methods {
                let r = &m.raw;
                let (slices, takes_compute) = (m.method.slices(), m.method.computes());
                let grid = |g: &Option<Grid<Share>>, default: Share| g.as_ref().map_or(vec![default.0], |g| g.values().iter().map(|s| s.0).collect());
                let loads = if slices { grid(&r.load, d.load) } else { vec![1.0] };
                let statics = if slices && m.method != Method::CoreinferLoading { grid(&r.static_share, d.static_share) } else { vec![0.0] };
                let computes: Vec<Option<f64>> = if takes_compute { grid(&r.compute, d.compute).into_iter().map(Some).collect() } else { vec![None] };
                let alphas = if takes_compute { grid(&r.token_share, d.token_share) } else { vec![0.0] };
                let caps: Vec<Option<u64>> = r.mem_cap.as_ref().map_or(vec![None], |g| g.values().iter().map(|s| Some(s.0)).collect());
                for ts in &self.tasks {
                    if r.tasks.as_ref().is_some_and(|v| !v.contains(&ts.task)) {
                        continue;
                    }
                    for &load in &loads {
                        for &st in &statics {
                            for &phi in &computes {
                                for &alpha in &alphas {
                                    for &cap in &caps {
                                        let c = self.cell(mi, m, ts, load, st, phi.map(|p| (p, alpha)), cap);
                                        // Two entries may name the same cell (a sweep through the defaults).
                                        if !cells.contains(&c) {
                                            cells.push(c);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        cells
    }

    #[allow(clippy::too_many_arguments)]
    fn cell(&self, model: usize, m: &MethodSpec, ts: &TaskSpec, load: f64, static_share: f64, compute: Option<(f64, f64)>, mem_cap: Option<u64>) -> Cell {
        let r = &m.raw;
        let layers = r.layers.as_ref().map(|l| l.0.clone());
        // CoreInfer with loading: a slice (random by default, whose random static
        // set --no-static ignores; or the profile's, the file selectinfer's cell of
        // the same setting uses) plus dynamic selection only.
        let slice_static = if m.method == Method::CoreinferLoading { self.defaults.static_share.0 } else { static_share };
        let profile_slice = || Prep::ProfileSlice {
            task: ts.task,
            load,
            static_share: slice_static,
            layers: layers.clone(),
            variant: r.variant().fitted_for(compute),
            base: r.base.unwrap_or_default(),
            down: r.down_layout.unwrap_or_default(),
        };
        let prep = match m.method {
            Method::Reference | Method::Coreinfer | Method::DiskOffload => Prep::F16,
            Method::Q4_0 => Prep::Quant("q4_0"),
            Method::Q4KM => Prep::Quant("q4_k_m"),
            Method::Q8_0 => Prep::Quant("q8_0"),
            Method::DenseLoaded | Method::Selectinfer => profile_slice(),
            Method::CoreinferLoading if r.slice == Some(SliceKind::Profile) => profile_slice(),
            Method::RandomLoading | Method::CoreinferLoading => Prep::RandomSlice { load, static_share: slice_static, layers: layers.clone(), seed: r.seed.unwrap_or(0) },
        };
        Cell {
            model,
            method: m.method,
            task: ts.task,
            data: ts.data.clone().unwrap_or_else(|| PathBuf::from(ts.task.bundled_data())),
            examples: r.examples.unwrap_or(ts.examples),
            shots: ts.shots,
            prep,
            compute,
            no_static: m.method == Method::CoreinferLoading,
            compute_layers: if m.method == Method::Coreinfer { layers } else { None },
            mem_cap,
            speed_only: r.speed_only,
            vote: if compute.is_some() { r.vote.unwrap_or_default() } else { crate::compute::Vote::Abs },
            decode_bias: compute.is_some() && r.decode_bias.unwrap_or(false),
            decode_refit: r.decode_refit.filter(|_| compute.is_some()),
            prompt_cache: self.prompt_cache,
        }
    }
}

impl Cell {
    /// A short label of the cell's setting, e.g. `selectinfer qa load 0.7 static 0.3 compute 0.4 alpha 0.2`.
    pub fn label(&self, model: &str) -> String {
        let mut s = format!("{model} {} {}", self.method.name(), self.task);
        match &self.prep {
            Prep::ProfileSlice { load, static_share, .. } | Prep::RandomSlice { load, static_share, .. } => {
                s += &format!(" load {}", share_text(*load));
                if !self.no_static {
                    s += &format!(" static {}", share_text(*static_share));
                }
            }
            _ => {}
        }
        if let Some((phi, alpha)) = self.compute {
            s += &format!(" compute {} alpha {}", share_text(phi), share_text(alpha));
        }
        if let Some(cap) = self.mem_cap {
            s += &format!(" cap {}", crate::output::format_bytes(cap));
        }
        if let Some(n) = self.speed_only {
            s += &format!(" speed-only {n}");
        }
        s
    }
}

/// Checks that the text parses, for callers that only want the error.
pub fn check_text(text: &str) -> anyhow::Result<usize> {
    Ok(Experiment::parse(text)?.cells().len())
}

#[cfg(test)]
mod tests;
