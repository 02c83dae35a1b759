//! The evaluation harness: one task, one model file, one method -> one CSV row.
//!
//! Every method runs through the same code: the same examples (the evaluation split),
//! the same prompts ([`crate::tasks`] templates, with optional k-shot examples from
//! the profiling split), greedy decoding with per-task limits and stop strings. Only
//! the model file and the compute options differ, and [`Method::check`] refuses
//! combinations that would mislabel a row.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, ensure, Context};

use super::bootstrap::task_intervals;
use crate::compute::{ComputeOptions, ComputeRequest, SelectiveSession, SessionPlan};
use crate::engine::{GenerateOptions, LoadOptions, Model, SessionOptions};
use crate::gguf::GgufFile;
use crate::memory::MemorySnapshot;
use crate::model::ModelInfo;
use crate::output::median;
use crate::select::SliceMeta;
use crate::tasks::{read_examples, solved_example, Example, Split, Task, TEMPLATE_VERSION};

// The method and the row live in their own files; these paths are the ones the
// rest of the crate has always used.
pub use super::method::Method;
pub use super::row::{append_row, parse_rows, EvalRow};

/// Generation limits and stop strings of a task.
pub fn task_limits(task: Task) -> (usize, &'static [&'static str]) {
    match task {
        Task::Qa => (32, &["\n"]),
        Task::Translate => (128, &["\n"]),
        Task::Summarize => (96, &["\n"]),
    }
}

/// The prompt of `ex` with `shots` solved examples before it.
pub fn prompt_with_shots(ex: &Example, shots: &[Example]) -> String {
    let mut p = String::new();
    for s in shots {
        p.push_str(&solved_example(s));
        p.push_str("\n\n");
    }
    p.push_str(&ex.prompt());
    p
}

/// Cuts a generated text at the first stop string and trims it.
pub fn cut_at_stop(text: &str, stops: &[&str]) -> String {
    let t = text.trim_start();
    let end = stops.iter().filter_map(|s| t.find(s)).min().unwrap_or(t.len());
    t[..end].trim().to_string()
}

/// An evaluation job.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// Model file.
    pub model: PathBuf,
    /// Task.
    pub task: Task,
    /// Dataset (JSON Lines with the task's fields).
    pub data: PathBuf,
    /// Most evaluation examples.
    pub limit: Option<usize>,
    /// Solved examples before each prompt (from the profiling split).
    pub shots: usize,
    /// Method label (checked against the file and options).
    pub method: Method,
    /// Selective computation (phi `None`: dense) and decode's compensation; the
    /// plan's defaults apply ([`SessionPlan::build`]).
    pub compute: ComputeRequest,
    /// CPU threads.
    pub threads: i32,
    /// Wrap prompts in the model's chat template.
    pub chat: bool,
    /// Run inside a memory group limited to this many bytes (page cache included).
    pub mem_cap: Option<u64>,
    /// Speed and memory only: generate exactly this many tokens per prompt, no stop
    /// strings, no scores (the only mode for synthetic random-weight models).
    pub speed_only: Option<usize>,
    /// Reuse the KV cache and votes of the prefix each prompt shares with the one
    /// before ([`crate::compute::prompt_cache`]).
    pub prompt_cache: bool,
}


/// The outputs of a run, with its row.
#[derive(Debug, Clone)]
pub struct EvalOutcome {
    /// The row.
    pub row: EvalRow,
    /// (example id, generated answer) in order.
    pub outputs: Vec<(String, String)>,
}

/// Runs the evaluation split of a task through a model with one method.
pub fn run_eval(req: &EvalRequest) -> anyhow::Result<EvalOutcome> {
    let t0 = Instant::now();
    let faults0 = crate::memory::major_faults();
    let g = GgufFile::read(&req.model).with_context(|| format!("cannot evaluate {}", req.model.display()))?;
    let options = req.compute.compute_options();
    req.method.check(&g, options.as_ref())?;
    let (eval, shots) = eval_examples(req)?;
    let synthetic = crate::synth::is_synthetic(&g);
    if req.method == Method::DiskOffload {
        check_disk_offload_cap(req, &g)?;
    }
    // Enter the memory group before llama.cpp maps the file, so its pages are
    // charged (and evicted) under the cap.
    let cap = req.mem_cap.map(crate::memory::MemoryCap::enter).transpose()?;
    // Disk offload is llama.cpp paging the file under the cap: no repacking, whose
    // copies would be anonymous memory the cap cannot evict.
    let model = Model::load(&req.model, &LoadOptions { repack: req.method != Method::DiskOffload, ..Default::default() })?;
    let info = ModelInfo::from_gguf(model.gguf())?;
    let meta = SliceMeta::from_gguf(model.gguf())?;
    let plan = SessionPlan::build(&req.compute, model.gguf())?;
    let (max_tokens, stops) = match req.speed_only {
        Some(n) => (n, &[][..]),
        None => task_limits(req.task),
    };
    let prompts = prompt_tokens(&model, req, &eval, &shots)?;
    let n_ctx = (prompts.iter().map(Vec::len).max().unwrap_or(0) + max_tokens + 8).next_multiple_of(256) as u32;
    let mut s = plan.open(&model, SessionOptions { n_ctx, n_batch: 512, threads: req.threads, observer: None })?;
    let opts = GenerateOptions { max_tokens, ignore_eog: req.speed_only.is_some(), ..Default::default() };
    let (timings, outputs) = generate_all(&mut s, req, &eval, &prompts, &opts, stops)?;

    let preds: Vec<&str> = outputs.iter().map(|(_, o)| o.as_str()).collect();
    let refs: Vec<&Vec<String>> = eval.iter().map(|e| &e.references).collect();
    let setting = RowSetting { examples: eval.len(), meta: meta.as_ref(), options: options.as_ref(), weight_bytes: info.total_bytes, synthetic };
    let mut row = new_row(req, &setting, timings, variant_label(meta.as_ref(), model.gguf(), plan.decode()));
    if req.speed_only.is_none() {
        for (m, iv) in task_intervals(req.task, &preds, &refs)? {
            row.set_interval(m, iv);
        }
    }
    row.peak_rss_bytes = MemorySnapshot::now().peak_rss_bytes;
    row.major_faults = crate::memory::major_faults().saturating_sub(faults0);
    row.wall_s = t0.elapsed().as_secs_f64();
    row.cap_max_usage_bytes = cap.as_ref().map(|c| c.max_usage_bytes());
    Ok(EvalOutcome { row, outputs })
}

/// The evaluation examples (at most `limit`) and the solved examples put before
/// each prompt.
fn eval_examples(req: &EvalRequest) -> anyhow::Result<(Vec<Example>, Vec<Example>)> {
    let examples = read_examples(&req.data, req.task)?;
    let eval: Vec<Example> = Split::Eval.select(&examples).iter().take(req.limit.unwrap_or(usize::MAX)).cloned().collect();
    ensure!(!eval.is_empty(), "{}: the evaluation split is empty", req.data.display());
    let shots: Vec<Example> = Split::Profile.select(&examples).iter().take(req.shots).cloned().collect();
    ensure!(shots.len() == req.shots, "{}: only {} profiling examples for {} shots", req.data.display(), shots.len(), req.shots);
    Ok((eval, shots))
}

/// Disk offload needs a memory cap below the model's weights.
fn check_disk_offload_cap(req: &EvalRequest, g: &GgufFile) -> anyhow::Result<()> {
    let Some(cap) = req.mem_cap else { bail!("method disk-offload needs --mem-cap below the model's size") };
    let size = ModelInfo::from_gguf(g)?.total_bytes;
    ensure!(
        cap < size,
        "method disk-offload needs --mem-cap below the model's {} of weights, not {}; a larger cap keeps the whole file in memory",
        crate::output::format_bytes(size),
        crate::output::format_bytes(cap)
    );
    Ok(())
}

/// Each example's prompt as tokens (in the chat template with `req.chat`).
fn prompt_tokens(model: &Model, req: &EvalRequest, eval: &[Example], shots: &[Example]) -> anyhow::Result<Vec<Vec<i32>>> {
    Ok(eval
        .iter()
        .map(|ex| {
            let p = prompt_with_shots(ex, shots);
            if req.chat {
                model.apply_chat_template(&[("user", &p)]).map(|t| model.tokenize(&t, true, true))
            } else {
                Ok(model.tokenize(&p, true, false))
            }
        })
        .collect::<Result<_, _>>()?)
}

/// Per-prompt speeds of a run: prefill and decode tokens/s and selection ms.
struct Timings {
    pre: Vec<f64>,
    dec: Vec<f64>,
    sel_ms: Vec<f64>,
}

/// Generates an answer to each prompt from a cleared session, cut at the first
/// stop string: the timings and (example id, answer) in order.
fn generate_all(
    s: &mut SelectiveSession,
    req: &EvalRequest,
    eval: &[Example],
    prompts: &[Vec<i32>],
    opts: &GenerateOptions,
    stops: &[&str],
) -> anyhow::Result<(Timings, Vec<(String, String)>)> {
    let bar = crate::output::progress_bar(true, eval.len() as u64, &format!("eval {} {}", req.method.name(), req.task));
    let (mut pre, mut dec, mut sel_ms, mut outputs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let checkpoints = if req.prompt_cache { crate::compute::prompt_cache::checkpoints(prompts) } else { Vec::new() };
    s.clear();
    for (i, (ex, prompt)) in eval.iter().zip(prompts).enumerate() {
        let mut text = String::new();
        // Stop as soon as a stop string appears after some content.
        let on_text = |piece: &str| {
            text.push_str(piece);
            !stops.iter().any(|st| text.trim_start().contains(st))
        };
        let (_, stats, sel) = if req.prompt_cache {
            let (tokens, stats, sel, _) = s.generate_cached(prompt, &checkpoints[i], opts, on_text)?;
            (tokens, stats, sel)
        } else {
            s.clear();
            s.generate(prompt, opts, on_text)?
        };
        pre.push(stats.prefill_tps());
        sel_ms.push(sel.select_ms);
        if stats.generated_tokens > 1 {
            dec.push(stats.decode_tps());
        }
        outputs.push((ex.id.clone(), cut_at_stop(&text, stops)));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok((Timings { pre, dec, sel_ms }, outputs))
}

/// What a row records of the file and the options besides the request.
struct RowSetting<'a> {
    examples: usize,
    meta: Option<&'a SliceMeta>,
    options: Option<&'a ComputeOptions>,
    weight_bytes: u64,
    synthetic: bool,
}

/// The row of a run before its scores and its end-of-run measurements.
fn new_row(req: &EvalRequest, st: &RowSetting, timings: Timings, variant: String) -> EvalRow {
    let Timings { pre, dec, sel_ms } = timings;
    let (meta, options) = (st.meta, st.options);
    EvalRow {
        timestamp: crate::output::utc_timestamp(),
        git_commit: crate::output::git_commit(),
        machine: crate::output::machine_description(),
        model: req.model.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        method: req.method.name().into(),
        task: req.task.name().into(),
        data: req.data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        examples: st.examples,
        shots: req.shots,
        template_version: TEMPLATE_VERSION.into(),
        load: meta.map_or(1.0, |m| m.load),
        static_share: if options.is_some_and(|c| c.no_static) { 0.0 } else { meta.map_or(0.0, |m| m.static_share) },
        compute: options.map(|c| c.compute),
        token_share: options.map(|c| c.token_share),
        em: None,
        em_lo: None,
        em_hi: None,
        f1: None,
        f1_lo: None,
        f1_hi: None,
        bleu: None,
        bleu_lo: None,
        bleu_hi: None,
        chrf: None,
        chrf_lo: None,
        chrf_hi: None,
        rouge1: None,
        rouge1_lo: None,
        rouge1_hi: None,
        rouge2: None,
        rouge2_lo: None,
        rouge2_hi: None,
        rouge_l: None,
        rouge_l_lo: None,
        rouge_l_hi: None,
        prefill_tps: median(pre),
        decode_tps: median(dec),
        select_ms: options.is_some().then(|| median(sel_ms)),
        weight_bytes: st.weight_bytes,
        peak_rss_bytes: 0,
        major_faults: 0,
        wall_s: 0.0,
        mem_cap_bytes: req.mem_cap,
        cap_max_usage_bytes: None,
        speed_only_tokens: req.speed_only,
        synthetic: st.synthetic,
        threads: req.threads,
        chat: req.chat,
        variant,
        prompt_cache: req.prompt_cache,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_strings_cut_and_trim() {
        assert_eq!(cut_at_stop("  Paris.\nQuestion: x", &["\n"]), "Paris.");
        assert_eq!(cut_at_stop("no stop", &["\n"]), "no stop");
        assert_eq!(cut_at_stop("\n\nleading newlines\nrest", &["\n"]), "leading newlines");
    }
}

/// The selection variant a row measured, beyond the paper's (empty for the
/// paper's): the slice's importance, budget and compensation, and how decode ran
/// ([`crate::compute::decode_labels`]).
pub fn variant_label(meta: Option<&crate::select::SliceMeta>, g: &crate::gguf::GgufFile, compute: Option<(crate::compute::Vote, bool, Option<f64>)>) -> String {
    let mut parts: Vec<String> = meta.map(|m| m.variant.label()).filter(|l| !l.is_empty()).into_iter().collect();
    if let Some(m) = meta {
        // A slice of a quantized file, and a neuron-major ffn_down.
        parts.extend(crate::select::rewrite::source_labels(crate::select::rewrite::quantized_base(g), m.down_layout));
    }
    if let Some((vote, decode_bias, decode_refit)) = compute {
        parts.extend(crate::compute::decode_labels(vote, decode_bias, decode_refit));
    }
    parts.join(",")
}
