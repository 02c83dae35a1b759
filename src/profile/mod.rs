//! Offline profiler: which FFN neurons matter, per task and for the model.
//!
//! Second stage of the data flow (after [`crate::model`]): runs a task's prompts
//! through llama.cpp, records the FFN activation entering `ffn_down` of every layer
//! through the eval callback ([`stats::ActivationRecorder`]), and scores each
//! neuron by s_n = sum over tokens of |a_n(t)|. Tokens are the prompt (prefill, with
//! every position's output requested so that the last layer sees all of them) and
//! the greedy continuation, each counted once; several prompts are generated side
//! by side ([`greedy`]). [`ranking::merge`] turns raw sums
//! into the rankings that selective loading ([`crate`]'s select stage) consumes.

pub mod greedy;
pub mod keep;
pub mod ranking;
pub mod moments;
pub mod packed;
pub mod sensitivity;
pub mod stats;
pub mod text;
pub mod votes;
pub mod weights;
pub mod validate;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context};

use crate::engine::{LoadOptions, Model, Token};
use crate::model::ModelInfo;
use crate::output::progress_bar;
use crate::tasks::{read_examples, Example, Split, Task, TEMPLATE_VERSION};
// Hashing lives in crate::util::hash; re-exported for the callers that still
// import it from here (src/select/rewrite.rs).
pub use crate::util::hash::{file_sha256, sha256_hex};
use ranking::{check_model, raw_dir, read_raw_dir, write_json, ModelFingerprint, RawProfile, RAW_FORMAT};
use stats::{ActivationRecorder, Bucket, Recording};

/// The fingerprint of a model file.
pub fn fingerprint(path: &Path, info: &ModelInfo) -> anyhow::Result<ModelFingerprint> {
    let sha256 = file_sha256(path).with_context(|| format!("hashing {}", path.display()))?;
    Ok(fingerprint_with_sha256(path, info, sha256))
}

/// [`fingerprint`] for a caller that has hashed the file already (hashing a
/// multi-GB model costs seconds).
pub fn fingerprint_with_sha256(path: &Path, info: &ModelInfo, sha256: String) -> ModelFingerprint {
    ModelFingerprint {
        sha256,
        file: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        architecture: info.architecture.clone(),
        n_layer: info.n_layer,
        n_ff: info.n_ff.clone(),
    }
}

/// What to profile.
#[derive(Debug, Clone)]
pub struct ProfileRequest {
    /// Model file.
    pub model: PathBuf,
    /// Task of the dataset.
    pub task: Task,
    /// JSON Lines dataset.
    pub data: PathBuf,
    /// Which split of the file to use.
    pub split: Split,
    /// Most examples (after the split).
    pub limit: Option<usize>,
    /// Token budget: examples spread over the split whose prompt tokens plus
    /// `gen_tokens` each reach it (at least two, so that both halves have one); None: all.
    pub max_tokens: Option<u64>,
    /// Greedy tokens generated per example.
    pub gen_tokens: usize,
    /// Profile directory (raw statistics go to `<dir>/raw/`).
    pub out_dir: PathBuf,
    /// CPU threads.
    pub threads: i32,
    /// Prompts generated side by side ([`greedy::DEFAULT_SEQUENCES`]; fewer when
    /// their KV caches would not fit [`greedy::open`]'s limit).
    pub sequences: usize,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// Throughput of a run over a set of prompts.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Throughput {
    /// Tokens that went through the model.
    pub tokens: u64,
    /// Seconds.
    pub seconds: f64,
}

impl Throughput {
    /// Tokens per second.
    pub fn tps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.tokens as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The outcome of [`run_profile`].
#[derive(Debug)]
pub struct ProfileOutcome {
    /// Where the raw statistics were written.
    pub raw_path: PathBuf,
    /// The statistics.
    pub raw: RawProfile,
    /// Profiling speed.
    pub throughput: Throughput,
}

/// Runs a task's prompts through the model with the activation recorder and
/// writes `<out_dir>/raw/<task>-<dataset>.json`.
pub fn run_profile(req: &ProfileRequest) -> anyhow::Result<ProfileOutcome> {
    let info = ModelInfo::read(&req.model).with_context(|| format!("cannot profile {}", req.model.display()))?;
    let activation = info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    let chosen = chosen_examples(req)?;
    let fp = fingerprint(&req.model, &info)?;
    // Refuse to mix models in one profile directory.
    if let Ok(existing) = read_raw_dir(&req.out_dir) {
        check_model(&raw_dir(&req.out_dir), &existing[0].model, &fp)?;
    }

    let model = Model::load(&req.model, &LoadOptions::default())?;
    let (prompts, n_ctx) = tokenized_prompts(&model, &chosen, req.gen_tokens);
    let (chosen, prompts) = within_budget(chosen, prompts, req);
    let recording = Arc::new(Mutex::new(Recording::new(&info.n_ff)));
    let recorder = ActivationRecorder::new(activation, &info.n_ff, recording.clone());
    let mut seqs = greedy::open(&model, n_ctx, req.sequences, prompts.len(), req.threads, Some(Box::new(recorder)))?;

    let bar = progress_bar(req.progress, chosen.len() as u64, &format!("profile {} ({})", req.task, req.data.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()));
    let t0 = Instant::now();
    let tokens = std::cell::Cell::new(0u64);
    // Alternate examples go to the two halves: the even ones first, then the odd.
    for (bucket, first) in [(Bucket::A, 0), (Bucket::B, 1)] {
        recording.lock().unwrap().active = bucket;
        let ids: Vec<usize> = (first..prompts.len()).step_by(2).collect();
        let half: Vec<&[Token]> = ids.iter().map(|&i| prompts[i].as_slice()).collect();
        greedy::run(
            &mut seqs,
            &half,
            req.gen_tokens,
            true,
            |k| format!("example {} ({})", ids[k], chosen[ids[k]].id),
            |n_tokens| {
                tokens.set(tokens.get() + n_tokens as u64);
                bar.set_message(format!("{:.0} tok/s", tokens.get() as f64 / t0.elapsed().as_secs_f64()));
                recording.lock().unwrap().finish_step(n_tokens).map_err(anyhow::Error::msg)
            },
            |_, _| bar.inc(1),
        )?;
    }
    bar.finish_and_clear();
    let throughput = Throughput { tokens: tokens.get(), seconds: t0.elapsed().as_secs_f64() };
    drop(seqs);

    let rec = recording.lock().unwrap();
    let dataset = req.data.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "data".into());
    let raw = RawProfile {
        format: RAW_FORMAT.into(),
        model: fp,
        task: req.task,
        dataset: dataset.clone(),
        data_sha256: file_sha256(&crate::fsutil::bundled(&req.data)).with_context(|| format!("cannot read dataset {} (give its path with --data)", req.data.display()))?,
        split: req.split,
        examples: chosen.len(),
        gen_tokens: req.gen_tokens,
        template_version: TEMPLATE_VERSION.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        halves: [rec.a.clone(), rec.b.clone()],
        down_norms: Some(weights::down_column_norms(model.gguf(), info.n_layer)?),
    };
    let raw_path = ranking::raw_path(&req.out_dir, req.task, &dataset);
    write_json(&raw_path, &raw)?;
    Ok(ProfileOutcome { raw_path, raw, throughput })
}

/// The examples a request covers: its split of the file, at most `limit`.
fn chosen_examples(req: &ProfileRequest) -> anyhow::Result<Vec<Example>> {
    let examples = read_examples(&req.data, req.task)?;
    let mut chosen = Split::select(req.split, &examples).to_vec();
    if let Some(n) = req.limit {
        chosen.truncate(n);
    }
    if chosen.is_empty() {
        bail!("{}: the {} split has no examples", req.data.display(), req.split.name());
    }
    Ok(chosen)
}

/// The examples (and their prompts) a token budget takes, in file order: taken in
/// [`spread_order`] until their prompt tokens plus `gen_tokens` each reach the
/// request's budget, at least two; all without a budget. Spread over the split rather
/// than its first examples: a task file often holds neighbours that share a source
/// (several questions per SQuAD passage), and the first 16,384 tokens of the qa
/// file cover 6 of its passages.
fn within_budget(chosen: Vec<Example>, prompts: Vec<Vec<Token>>, req: &ProfileRequest) -> (Vec<Example>, Vec<Vec<Token>>) {
    let mut keep = budget_pick(&prompts, req.gen_tokens, req.max_tokens);
    keep.sort_unstable();
    let mut taken = vec![false; prompts.len()];
    keep.iter().for_each(|&i| taken[i] = true);
    fn kept<T>(v: Vec<T>, taken: &[bool]) -> Vec<T> {
        v.into_iter().zip(taken).filter(|(_, t)| **t).map(|(x, _)| x).collect()
    }
    (kept(chosen, &taken), kept(prompts, &taken))
}

/// The indices of `prompts` a budget of `max_tokens` (prompt plus `gen_tokens` each)
/// takes in [`spread_order`]: up to and including the one that reaches it, at least
/// two; all without a budget. A larger budget takes a superset.
fn budget_pick(prompts: &[Vec<Token>], gen_tokens: usize, max_tokens: Option<u64>) -> Vec<usize> {
    let order = spread_order(prompts.len());
    let Some(budget) = max_tokens else { return order };
    let mut total = 0u64;
    for (k, &i) in order.iter().enumerate() {
        total += (prompts[i].len() + gen_tokens) as u64;
        if total >= budget {
            return order[..(k + 1).max(2).min(order.len())].to_vec();
        }
    }
    order
}

/// 0..n in bit-reversed order (0, n/2, n/4, 3n/4, ... for a power of two; other
/// lengths skip the indices past n): every prefix is spread evenly over the range.
fn spread_order(n: usize) -> Vec<usize> {
    let bits = n.next_power_of_two().trailing_zeros();
    (0..n.next_power_of_two()).map(|i| if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }).filter(|&j| j < n).collect()
}

/// The prompts' tokens and a context length that fits the longest plus its continuation.
fn tokenized_prompts(model: &Model, examples: &[Example], gen_tokens: usize) -> (Vec<Vec<Token>>, u32) {
    let prompts: Vec<Vec<Token>> = examples.iter().map(|e| model.tokenize(&e.prompt(), true, false)).collect();
    let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
    (prompts, (longest + gen_tokens + 8).next_multiple_of(256) as u32)
}

/// The same prompts and continuations without the recorder (only the last
/// position's output, as plain inference does), generated as many side by side,
/// for the overhead benchmark.
pub fn run_plain(req: &ProfileRequest) -> anyhow::Result<Throughput> {
    let chosen = chosen_examples(req)?;
    let model = Model::load(&req.model, &LoadOptions::default())?;
    let (prompts, n_ctx) = tokenized_prompts(&model, &chosen, req.gen_tokens);
    let (_, prompts) = within_budget(chosen, prompts, req);
    let mut seqs = greedy::open(&model, n_ctx, req.sequences, prompts.len(), req.threads, None)?;
    let t0 = Instant::now();
    // The recording run's order: the even examples, then the odd.
    let mut tokens = 0u64;
    for first in [0, 1] {
        let half: Vec<&[Token]> = prompts.iter().skip(first).step_by(2).map(Vec::as_slice).collect();
        tokens += greedy::run(&mut seqs, &half, req.gen_tokens, false, |k| format!("example {}", first + 2 * k), |_| Ok(()), |_, _| {})?;
    }
    Ok(Throughput { tokens, seconds: t0.elapsed().as_secs_f64() })
}

#[cfg(test)]
mod tests {
    use super::{budget_pick, spread_order};

    #[test]
    fn a_token_budget_takes_examples_spread_over_the_split_until_it_is_reached() {
        assert_eq!(spread_order(8), vec![0, 4, 2, 6, 1, 5, 3, 7]);
        assert_eq!(spread_order(5), vec![0, 4, 2, 1, 3]);
        assert_eq!((spread_order(1), spread_order(0)), (vec![0], vec![]));
        for n in [1, 2, 3, 7, 100, 149] {
            let mut o = spread_order(n);
            o.sort_unstable();
            assert_eq!(o, (0..n).collect::<Vec<_>>(), "a permutation of {n}");
        }
        let prompts: Vec<Vec<crate::engine::Token>> = [10, 20, 30, 40].iter().map(|&n| vec![0; n]).collect();
        // In spread order 0, 2, 1, 3: 10+4, +30+4 = 48, +20+4 = 72 >= 50: three examples.
        assert_eq!(budget_pick(&prompts, 4, Some(50)), vec![0, 2, 1]);
        assert_eq!(budget_pick(&prompts, 4, Some(48)), vec![0, 2]);
        assert_eq!(budget_pick(&prompts, 4, Some(73)), vec![0, 2, 1, 3]);
        // At least two (one per half), at most all.
        assert_eq!(budget_pick(&prompts, 4, Some(1)), vec![0, 2]);
        assert_eq!(budget_pick(&prompts, 4, Some(10_000)).len(), 4);
        assert_eq!(budget_pick(&prompts, 4, None).len(), 4);
        assert_eq!(budget_pick(&prompts[..1], 4, Some(1)), vec![0]);
        // A larger budget takes a superset (twice the tokens: the same examples and more).
        let many: Vec<Vec<crate::engine::Token>> = (0..60).map(|i| vec![0; 5 + (i * 7) % 23]).collect();
        let (small, big) = (budget_pick(&many, 4, Some(200)), budget_pick(&many, 4, Some(400)));
        assert!(small.len() < big.len() && small.iter().all(|i| big.contains(i)), "{small:?} {big:?}");
        // Spread: the small budget reaches the last quarter of the split.
        assert!(small.iter().any(|&i| i >= 45) && small.iter().any(|&i| i < 15), "{small:?}");
    }
}
