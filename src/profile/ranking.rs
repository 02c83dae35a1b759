//! Profile files and the merge: raw sums -> per-task ("base") and model-wide
//! ("secondary") neuron rankings.
//!
//! Merge math (the paper's): per dataset, score = summed |activation| / tokens;
//! a task's score is the mean over its datasets; the model score is the mean over
//! tasks. With [`Importance::Contribution`] the per-dataset score is instead
//! (summed a^2 / tokens) x ||W_down[:, n]||^2, the neuron's expected squared share
//! of the FFN output; those rankings go to `DIR/contribution/`. Each layer's neurons are ranked by score, highest first, ties to the lower
//! index. Raw sums and token counts stay on disk so merges can be redone without
//! running the model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::stats::ActivationSums;
use crate::tasks::{Split, Task};

/// Format tag of raw statistics files.
pub const RAW_FORMAT: &str = "selectinfer-profile-raw/1";
/// Format tag of ranking files.
pub const RANKING_FORMAT: &str = "selectinfer-profile-ranking/1";

/// Identifies the model a profile belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFingerprint {
    /// sha256 of the GGUF file.
    pub sha256: String,
    /// File name it was computed from (informational).
    pub file: String,
    /// Architecture.
    pub architecture: String,
    /// Layers.
    pub n_layer: usize,
    /// FFN width per layer.
    pub n_ff: Vec<u64>,
}

/// Errors around profile files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// A file could not be read or written.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file is not a profile file of the expected format.
    #[error("{path}: not a {expected} file: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// Expected format tag.
        expected: &'static str,
        /// What is wrong.
        what: String,
    },
    /// Profiles of different models were mixed, or a profile is used with another model.
    #[error("{path} is a profile of {found} (sha256 {found_sha}), not of {expected} (sha256 {expected_sha})")]
    WrongModel {
        /// The profile file.
        path: PathBuf,
        /// Its model file.
        found: String,
        /// Its model hash.
        found_sha: String,
        /// The model in use.
        expected: String,
        /// Its hash.
        expected_sha: String,
    },
    /// The directory holds nothing to merge.
    #[error("{0}: no raw profile files (raw/*.json); run `selectinfer profile -m MODEL --task T --data FILE -o DIR` first")]
    NoRaw(PathBuf),
    /// A ranking file is missing.
    #[error("{path}: missing; run `selectinfer profile merge {dir}`")]
    MissingRanking {
        /// The file.
        path: PathBuf,
        /// The profile directory.
        dir: String,
    },
}

/// Raw statistics of one profiling run (one task, one dataset file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RawProfile {
    /// [`RAW_FORMAT`].
    pub format: String,
    /// The profiled model.
    pub model: ModelFingerprint,
    /// Task.
    pub task: Task,
    /// Dataset name (file stem).
    pub dataset: String,
    /// sha256 of the dataset file.
    pub data_sha256: String,
    /// Split of the file that was used.
    pub split: Split,
    /// Examples run.
    pub examples: usize,
    /// Greedy tokens generated per example (each counted once).
    pub gen_tokens: usize,
    /// Prompt template version.
    pub template_version: String,
    /// selectinfer version.
    pub tool_version: String,
    /// Sums over even-numbered (A) and odd-numbered (B) examples.
    pub halves: [ActivationSums; 2],
    /// ||W_down[:, n]||^2 per layer and neuron (absent in files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_norms: Option<Vec<Vec<f64>>>,
}

/// What a neuron's score measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Importance {
    /// Mean |a_n| per token (the paper's).
    #[default]
    Activation,
    /// Mean a_n^2 per token times ||W_down[:, n]||^2.
    Contribution,
}

impl Importance {
    /// Name as written in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Importance::Activation => "activation",
            Importance::Contribution => "contribution",
        }
    }

    /// Where this importance's rankings live in a profile directory.
    pub fn ranking_dir(self, dir: &Path) -> PathBuf {
        match self {
            Importance::Activation => dir.to_path_buf(),
            Importance::Contribution => dir.join("contribution"),
        }
    }

    fn is_activation(&self) -> bool {
        *self == Importance::Activation
    }
}

impl RawProfile {
    /// Both halves added.
    pub fn total(&self) -> ActivationSums {
        let mut t = self.halves[0].clone();
        t.add(&self.halves[1]);
        t
    }
}

/// One layer's neurons, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerRanking {
    /// Neuron indices, highest score first.
    pub order: Vec<u32>,
    /// Their scores, in the same order.
    pub scores: Vec<f64>,
}

impl LayerRanking {
    /// Ranks neurons by score, highest first; ties go to the lower index.
    pub fn from_scores(scores: &[f64]) -> LayerRanking {
        let mut order: Vec<u32> = (0..scores.len() as u32).collect();
        order.sort_by(|&i, &j| scores[j as usize].total_cmp(&scores[i as usize]).then(i.cmp(&j)));
        let sorted = order.iter().map(|&i| scores[i as usize]).collect();
        LayerRanking { order, scores: sorted }
    }

    /// The first `k` neurons.
    pub fn top(&self, k: usize) -> &[u32] {
        &self.order[..k.min(self.order.len())]
    }
}

/// A dataset that went into a ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSummary {
    /// Task.
    pub task: Task,
    /// Dataset name.
    pub dataset: String,
    /// Examples.
    pub examples: usize,
    /// Tokens counted.
    pub tokens: u64,
}

/// Whose ranking a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankingKind {
    /// One task's ("base", task-specific) ranking.
    Task,
    /// The mean over tasks ("secondary", model-specific).
    Model,
}

/// A ranking file: per layer, every neuron index sorted by score.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ranking {
    /// [`RANKING_FORMAT`].
    pub format: String,
    /// Task or model-wide.
    pub kind: RankingKind,
    /// What the scores measure (files without the field rank by activation).
    #[serde(default, skip_serializing_if = "Importance::is_activation")]
    pub importance: Importance,
    /// The task, for task rankings.
    pub task: Option<Task>,
    /// The profiled model.
    pub model: ModelFingerprint,
    /// What went in.
    pub datasets: Vec<DatasetSummary>,
    /// Prompt template version.
    pub template_version: String,
    /// selectinfer version.
    pub tool_version: String,
    /// Per layer.
    pub layers: Vec<LayerRanking>,
}

/// File of a task's ranking in a profile directory: `task-<task>.json`, or its
/// packed form ([`super::packed`]).
pub fn task_ranking_path(dir: &Path, task: Task) -> PathBuf {
    super::packed::stored(dir.join(format!("task-{task}.json")))
}

/// File of the model-wide ranking in a profile directory: `model.json`, or packed.
pub fn model_ranking_path(dir: &Path) -> PathBuf {
    super::packed::stored(dir.join("model.json"))
}

/// File of a raw profile of `task` on `dataset` in a profile directory
/// (`raw/<task>-<dataset>.json`, or packed).
pub fn raw_path(dir: &Path, task: Task, dataset: &str) -> PathBuf {
    super::packed::stored(raw_dir(dir).join(format!("{task}-{dataset}.json")))
}

/// Directory of raw statistics in a profile directory.
pub fn raw_dir(dir: &Path) -> PathBuf {
    dir.join("raw")
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, expected: &'static str) -> Result<T, ProfileError> {
    let bytes = super::packed::read(path).map_err(|source| ProfileError::Io { path: path.to_path_buf(), source })?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| ProfileError::Format { path: path.to_path_buf(), expected, what: e.to_string() })?;
    if v.get("format").and_then(|f| f.as_str()) != Some(expected) {
        return Err(ProfileError::Format { path: path.to_path_buf(), expected, what: format!("format is {:?}", v.get("format")) });
    }
    serde_json::from_value(v).map_err(|e| ProfileError::Format { path: path.to_path_buf(), expected, what: e.to_string() })
}

/// Writes `value` as JSON through a temporary file, packed where `path` is a packed
/// name ([`super::packed`]).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), ProfileError> {
    let io = |source| ProfileError::Io { path: path.to_path_buf(), source };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let bytes = serde_json::to_vec(value).map_err(|e| io(e.into()))?;
    let bytes = super::packed::encode(path, bytes).map_err(io)?;
    crate::fsutil::write_atomic(path, &bytes).map_err(io)
}

/// Reads every raw file of a profile directory, checking they share one model.
pub fn read_raw_dir(dir: &Path) -> Result<Vec<RawProfile>, ProfileError> {
    let raw = raw_dir(dir);
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&raw) {
        // A plain file and its packed form are one file: the plain one is read.
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| super::packed::is_json_file(p) && super::packed::stored(super::packed::plain_name(p)) == *p)
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    if paths.is_empty() {
        return Err(ProfileError::NoRaw(dir.to_path_buf()));
    }
    let mut out: Vec<RawProfile> = Vec::new();
    for p in paths {
        let r: RawProfile = read_json(&p, RAW_FORMAT)?;
        super::validate::check_raw(&p, &r)?;
        if let Some(first) = out.first() {
            check_model(&p, &r.model, &first.model)?;
        }
        out.push(r);
    }
    Ok(out)
}

/// Errors unless `found` (the profile's model) is `expected`.
pub fn check_model(path: &Path, found: &ModelFingerprint, expected: &ModelFingerprint) -> Result<(), ProfileError> {
    if found.sha256 == expected.sha256 {
        if super::validate::same_shape(found, expected) {
            return Ok(());
        }
        return Err(ProfileError::Format {
            path: path.to_path_buf(),
            expected: "profile of this model",
            what: format!(
                "its fingerprint says {} layers of widths {:?}, but {} has {} layers of widths {:?}",
                found.n_layer, found.n_ff, expected.file, expected.n_layer, expected.n_ff
            ),
        });
    }
    Err(ProfileError::WrongModel {
        path: path.to_path_buf(),
        found: found.file.clone(),
        found_sha: short(&found.sha256),
        expected: expected.file.clone(),
        expected_sha: short(&expected.sha256),
    })
}

/// Errors unless `found` (the profile's model) is `expected`, or is in the
/// lineage of `expected` (the files it was converted from, e.g. the F16 original
/// of a Q4_K_M file: `selectinfer.lineage`) with the same architecture and FFN
/// widths.
pub fn check_model_lineage(path: &Path, found: &ModelFingerprint, expected: &ModelFingerprint, lineage: &[String]) -> Result<(), ProfileError> {
    let same_shape = super::validate::same_shape(found, expected);
    if same_shape && lineage.iter().any(|sha| *sha == found.sha256) {
        return Ok(());
    }
    check_model(path, found, expected)
}

/// The files `g` was converted from, newest first (sha256 of each), as `convert`
/// records them.
pub fn lineage(g: &crate::gguf::GgufFile) -> Vec<String> {
    g.get(LINEAGE_KEY).and_then(crate::gguf::Value::as_array).map_or_else(Vec::new, |a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
}

/// The measurement a command on the model `sha` (converted from the files
/// `lineage`) reads: the file keyed to it (`keyed(sha)`), else to a file it was
/// converted from, else the un-keyed file of an earlier version (`legacy`) when
/// the model it names (`model_of`) is one of these. `None` when there is none.
pub fn find_for_model(
    keyed: impl Fn(&str) -> PathBuf,
    legacy: PathBuf,
    model_of: impl FnOnce(&Path) -> anyhow::Result<String>,
    sha: &str,
    lineage: &[String],
) -> anyhow::Result<Option<PathBuf>> {
    if let Some(p) = std::iter::once(sha).chain(lineage.iter().map(String::as_str)).map(&keyed).find(|p| p.exists()) {
        return Ok(Some(p));
    }
    if legacy.exists() {
        let m = model_of(&legacy)?;
        if m == sha || lineage.contains(&m) {
            return Ok(Some(legacy));
        }
    }
    Ok(None)
}

/// Metadata key of [`lineage`].
pub const LINEAGE_KEY: &str = "selectinfer.lineage";

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// Per-task scores of a set of raw files, with `half` selecting both halves
/// (`None`), or only A (`Some(0)`) or B (`Some(1)`).
pub fn task_scores(raws: &[RawProfile], half: Option<usize>) -> BTreeMap<Task, (Vec<Vec<f64>>, Vec<DatasetSummary>)> {
    task_scores_by(raws, half, |s, _| s.mean())
}

/// [`task_scores`] with the per-dataset score of `score(sums, raw)`.
fn task_scores_by(
    raws: &[RawProfile],
    half: Option<usize>,
    score: impl Fn(&ActivationSums, &RawProfile) -> Vec<Vec<f64>>,
) -> BTreeMap<Task, (Vec<Vec<f64>>, Vec<DatasetSummary>)> {
    // Group runs of the same task and dataset: their sums add before dividing.
    let mut per_dataset: BTreeMap<(Task, String), (ActivationSums, usize, &RawProfile)> = BTreeMap::new();
    for r in raws {
        let sums = match half {
            None => r.total(),
            Some(h) => r.halves[h].clone(),
        };
        per_dataset
            .entry((r.task, r.dataset.clone()))
            .and_modify(|(s, n, _)| {
                s.add(&sums);
                *n += r.examples;
            })
            .or_insert((sums, r.examples, r));
    }
    let mut per_task: BTreeMap<Task, (Vec<Vec<Vec<f64>>>, Vec<DatasetSummary>)> = BTreeMap::new();
    for ((task, dataset), (sums, examples, raw)) in per_dataset {
        let e = per_task.entry(task).or_default();
        e.0.push(score(&sums, raw));
        e.1.push(DatasetSummary { task, dataset, examples, tokens: sums.tokens });
    }
    per_task.into_iter().map(|(t, (scores, ds))| (t, (mean_of(&scores), ds))).collect()
}

/// Element-wise mean of equally shaped per-layer score tables.
pub fn mean_of(tables: &[Vec<Vec<f64>>]) -> Vec<Vec<f64>> {
    let n = tables.len() as f64;
    let mut out = tables[0].clone();
    for t in &tables[1..] {
        for (a, b) in out.iter_mut().zip(t) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
    out.iter_mut().flatten().for_each(|x| *x /= n);
    out
}

/// Per-task contribution scores: per dataset, (summed a^2 / tokens) x
/// ||W_down[:, n]||^2, then averaged as [`task_scores`] does. Errors naming a raw
/// file that predates the statistics.
pub fn contribution_scores(raws: &[RawProfile]) -> Result<BTreeMap<Task, (Vec<Vec<f64>>, Vec<DatasetSummary>)>, String> {
    if let Some(r) = raws.iter().find(|r| r.down_norms.is_none() || r.halves.iter().any(|h| h.squares.is_none())) {
        return Err(format!("raw profile {}-{} has no squared activations or ffn_down norms (written before they were recorded); profile it again", r.task, r.dataset));
    }
    Ok(task_scores_by(raws, None, |s, r| {
        let sq = s.square_mean().expect("checked");
        let norms = r.down_norms.as_ref().expect("checked");
        sq.iter().zip(norms).map(|(a, w)| a.iter().zip(w).map(|(x, y)| x * y).collect()).collect()
    }))
}

/// Mean signed activation per neuron of `task` (mean over its datasets of summed
/// a / tokens), or of the whole model (mean over tasks) for `None`. Errors naming a
/// raw file that predates the signed sums.
pub fn signed_means(raws: &[RawProfile], task: Option<Task>) -> Result<Vec<Vec<f64>>, String> {
    if let Some(r) = raws.iter().find(|r| r.halves.iter().any(|h| h.signed.is_none())) {
        return Err(format!("raw profile {}-{} has no signed activation sums (written before they were recorded); profile it again", r.task, r.dataset));
    }
    let per_task = task_scores_by(raws, None, |s, _| s.signed_mean().expect("checked"));
    let tables: Vec<Vec<Vec<f64>>> = match task {
        Some(t) => vec![per_task.get(&t).ok_or_else(|| format!("the profile has no {t} runs"))?.0.clone()],
        None => per_task.into_values().map(|(s, _)| s).collect(),
    };
    Ok(mean_of(&tables))
}

fn ranking(kind: RankingKind, task: Option<Task>, raw: &RawProfile, datasets: Vec<DatasetSummary>, scores: &[Vec<f64>]) -> Ranking {
    Ranking {
        format: RANKING_FORMAT.into(),
        kind,
        importance: Importance::Activation,
        task,
        model: raw.model.clone(),
        datasets,
        template_version: raw.template_version.clone(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        layers: scores.iter().map(|s| LayerRanking::from_scores(s)).collect(),
    }
}

/// Builds the task rankings and the model-wide ranking from raw files.
pub fn merge(raws: &[RawProfile]) -> (Vec<Ranking>, Ranking) {
    merge_scores(raws, task_scores(raws, None), Importance::Activation)
}

fn merge_scores(
    raws: &[RawProfile],
    per_task: BTreeMap<Task, (Vec<Vec<f64>>, Vec<DatasetSummary>)>,
    importance: Importance,
) -> (Vec<Ranking>, Ranking) {
    let first = &raws[0];
    let tasks: Vec<Ranking> =
        per_task.iter().map(|(&t, (scores, ds))| ranking(RankingKind::Task, Some(t), first, ds.clone(), scores)).collect();
    let all_scores: Vec<Vec<Vec<f64>>> = per_task.values().map(|(s, _)| s.clone()).collect();
    let all_ds: Vec<DatasetSummary> = per_task.values().flat_map(|(_, d)| d.clone()).collect();
    let mut model = ranking(RankingKind::Model, None, first, all_ds, &mean_of(&all_scores));
    let mut tasks = tasks;
    tasks.iter_mut().chain(std::iter::once(&mut model)).for_each(|r| r.importance = importance);
    (tasks, model)
}

/// Merges a profile directory's raw files and writes `task-<task>.json` and
/// `model.json` next to them. Returns the files written.
///
/// When every raw file has the squared activations and `ffn_down` norms, the
/// contribution rankings are written as well, to `DIR/contribution/`.
pub fn merge_dir(dir: &Path) -> Result<Vec<PathBuf>, ProfileError> {
    let raws = read_raw_dir(dir)?;
    let mut written = write_rankings(dir, merge(&raws))?;
    if let Ok(scores) = contribution_scores(&raws) {
        let importance = Importance::Contribution;
        written.extend(write_rankings(&importance.ranking_dir(dir), merge_scores(&raws, scores, importance))?);
    }
    Ok(written)
}

fn write_rankings(dir: &Path, (tasks, model): (Vec<Ranking>, Ranking)) -> Result<Vec<PathBuf>, ProfileError> {
    let mut written = Vec::new();
    for r in &tasks {
        let p = task_ranking_path(dir, r.task.expect("task ranking"));
        write_json(&p, r)?;
        written.push(p);
    }
    let p = model_ranking_path(dir);
    write_json(&p, &model)?;
    written.push(p);
    Ok(written)
}

/// Reads a ranking file.
pub fn read_ranking(path: &Path, dir: &Path) -> Result<Ranking, ProfileError> {
    if !path.exists() {
        return Err(ProfileError::MissingRanking { path: path.to_path_buf(), dir: dir.display().to_string() });
    }
    let r: Ranking = read_json(path, RANKING_FORMAT)?;
    super::validate::check_ranking(path, &r)?;
    Ok(r)
}

/// Share of the top `top` fraction of neurons two rankings have in common, per layer.
pub fn overlap_per_layer(a: &[LayerRanking], b: &[LayerRanking], top: f64) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(la, lb)| {
            let k = ((la.order.len() as f64) * top).round().max(1.0) as usize;
            let set: std::collections::HashSet<u32> = la.top(k).iter().copied().collect();
            lb.top(k).iter().filter(|i| set.contains(i)).count() as f64 / k as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(task: Task, dataset: &str, a: (u64, Vec<f64>), b: (u64, Vec<f64>)) -> RawProfile {
        RawProfile {
            format: RAW_FORMAT.into(),
            model: ModelFingerprint { sha256: "x".into(), file: "m".into(), architecture: "llama".into(), n_layer: 1, n_ff: vec![3] },
            task,
            dataset: dataset.into(),
            data_sha256: String::new(),
            split: Split::Profile,
            examples: 2,
            gen_tokens: 0,
            template_version: "1".into(),
            tool_version: "t".into(),
            halves: [
                ActivationSums { tokens: a.0, sums: vec![a.1], signed: None, squares: None },
                ActivationSums { tokens: b.0, sums: vec![b.1], signed: None, squares: None },
            ],
            down_norms: None,
        }
    }

    #[test]
    fn merge_math_matches_a_hand_computation() {
        // qa has two datasets, translate one.
        let raws = vec![
            raw(Task::Qa, "d1", (2, vec![2.0, 4.0, 0.0]), (2, vec![2.0, 0.0, 4.0])), // mean [1, 1, 1]
            raw(Task::Qa, "d2", (1, vec![0.0, 3.0, 0.0]), (0, vec![0.0, 0.0, 0.0])), // mean [0, 3, 0]
            raw(Task::Translate, "d3", (4, vec![8.0, 0.0, 4.0]), (0, vec![0.0; 3])), // mean [2, 0, 1]
        ];
        let scores = task_scores(&raws, None);
        assert_eq!(scores[&Task::Qa].0, vec![vec![0.5, 2.0, 0.5]]);
        assert_eq!(scores[&Task::Translate].0, vec![vec![2.0, 0.0, 1.0]]);
        let (tasks, model) = merge(&raws);
        assert_eq!(tasks[0].layers[0].order, vec![1, 0, 2], "tie between 0 and 2 goes to the lower index");
        assert_eq!(tasks[1].layers[0].order, vec![0, 2, 1]);
        // model = mean over tasks = [1.25, 1.0, 0.75]
        assert_eq!(model.layers[0].scores, vec![1.25, 1.0, 0.75]);
        assert_eq!(model.layers[0].order, vec![0, 1, 2]);
        assert_eq!(tasks[0].datasets.iter().map(|d| d.tokens).sum::<u64>(), 5);
    }

    #[test]
    fn overlap_counts_shared_top_neurons() {
        let a = [LayerRanking::from_scores(&[4.0, 3.0, 2.0, 1.0])];
        let b = [LayerRanking::from_scores(&[4.0, 1.0, 3.0, 2.0])];
        assert_eq!(overlap_per_layer(&a, &b, 0.5), vec![0.5]);
        assert_eq!(overlap_per_layer(&a, &a, 0.5), vec![1.0]);
    }

    #[test]
    fn contribution_and_signed_means_match_a_hand_computation() {
        let mut r = raw(Task::Qa, "d1", (2, vec![2.0, 4.0, 0.0]), (2, vec![2.0, 0.0, 4.0]));
        assert!(contribution_scores(std::slice::from_ref(&r)).unwrap_err().contains("profile it again"));
        r.halves[0].signed = Some(vec![vec![2.0, -4.0, 0.0]]);
        r.halves[1].signed = Some(vec![vec![-2.0, 0.0, 4.0]]);
        r.halves[0].squares = Some(vec![vec![2.0, 16.0, 0.0]]);
        r.halves[1].squares = Some(vec![vec![2.0, 0.0, 4.0]]);
        r.down_norms = Some(vec![vec![1.0, 0.5, 4.0]]);
        // mean a^2 over 4 tokens: [1, 4, 1]; times the norms: [1, 2, 4].
        let c = contribution_scores(std::slice::from_ref(&r)).unwrap();
        assert_eq!(c[&Task::Qa].0, vec![vec![1.0, 2.0, 4.0]]);
        let (tasks, model) = merge_scores(std::slice::from_ref(&r), c, Importance::Contribution);
        assert_eq!(tasks[0].layers[0].order, vec![2, 1, 0]);
        assert_eq!(model.importance, Importance::Contribution);
        assert_eq!(signed_means(std::slice::from_ref(&r), Some(Task::Qa)).unwrap(), vec![vec![0.0, -1.0, 1.0]]);
        assert!(signed_means(&[r], Some(Task::Summarize)).unwrap_err().contains("no summarize"));
    }
}
