//! The evaluation harness: one task, one model file, one method -> one CSV row.
//!
//! Every method runs through the same code: the same examples (the evaluation split),
//! the same prompts ([`crate::tasks`] templates, with optional k-shot examples from
//! the profiling split), greedy decoding with per-task limits and stop strings. Only
//! the model file and the compute options differ, and [`Method::check`] refuses
//! combinations that would mislabel a row.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::bootstrap::{task_intervals, Interval, Metric};
use crate::compute::{ComputeOptions, ComputePlan, SelectiveSession};
use crate::engine::{GenerateOptions, LoadOptions, Model, SessionOptions};
use crate::gguf::GgufFile;
use crate::memory::MemorySnapshot;
use crate::output::median;
use crate::model::ModelInfo;
use crate::select::SliceMeta;
use crate::tasks::{read_examples, Example, Split, Task, TEMPLATE_VERSION};

/// What a row measures, in the paper's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The original (F16) model, dense.
    Reference,
    /// A profile-guided slice, every loaded neuron computed.
    DenseLoaded,
    /// A profile-guided slice with static + dynamic computation (`--compute`).
    Selectinfer,
    /// The full model, dynamic-only computation (`--compute`, no static set).
    Coreinfer,
    /// A slice with dynamic-only computation (`--compute --no-static`).
    CoreinferLoading,
    /// A random slice (the paper's ablation), dense or with `--compute`.
    RandomLoading,
    /// llama.cpp's Q4_0 quantization of the original, dense.
    #[value(name = "q4_0")]
    #[serde(rename = "q4_0")]
    Q4_0,
    /// llama.cpp's Q4_K_M quantization, dense.
    #[value(name = "q4_k_m")]
    #[serde(rename = "q4_k_m")]
    Q4KM,
    /// llama.cpp's Q8_0 quantization, dense.
    #[value(name = "q8_0")]
    #[serde(rename = "q8_0")]
    Q8_0,
    /// The original model memory-mapped from disk while the process's memory is
    /// capped below its size (`--mem-cap`): pages are evicted and read again.
    DiskOffload,
}

impl Method {
    /// The name used on the command line and in CSV files.
    pub const fn name(self) -> &'static str {
        match self {
            Method::Reference => "reference",
            Method::DenseLoaded => "dense-loaded",
            Method::Selectinfer => "selectinfer",
            Method::Coreinfer => "coreinfer",
            Method::CoreinferLoading => "coreinfer-loading",
            Method::RandomLoading => "random-loading",
            Method::Q4_0 => "q4_0",
            Method::Q4KM => "q4_k_m",
            Method::Q8_0 => "q8_0",
            Method::DiskOffload => "disk-offload",
        }
    }

    /// Errors unless the file and compute options are what this method means.
    pub fn check(self, g: &GgufFile, compute: Option<&ComputeOptions>) -> anyhow::Result<()> {
        let meta = SliceMeta::from_gguf(g)?;
        let info = ModelInfo::from_gguf(g)?;
        let path = g.path.display();
        let sliced = |sel: &str| meta.as_ref().is_some_and(|m| m.selection == sel);
        let weight_type = |want: &str| info.ffn_types.iter().any(|t| t == want);
        let no_static = compute.is_some_and(|c| c.no_static);
        let ok = match self {
            Method::Reference => meta.is_none() && compute.is_none() && info.ffn_types.iter().all(|t| t == "F16" || t == "BF16" || t == "F32"),
            Method::DenseLoaded => sliced("profile") && compute.is_none(),
            Method::Selectinfer => sliced("profile") && compute.is_some() && !no_static,
            Method::Coreinfer => meta.is_none() && compute.is_some(),
            Method::CoreinferLoading => meta.is_some() && compute.is_some() && no_static,
            Method::RandomLoading => sliced("random"),
            Method::Q4_0 => meta.is_none() && compute.is_none() && weight_type("Q4_0"),
            Method::Q4KM => meta.is_none() && compute.is_none() && weight_type("Q4_K"),
            Method::Q8_0 => meta.is_none() && compute.is_none() && weight_type("Q8_0"),
            Method::DiskOffload => meta.is_none() && compute.is_none() && info.ffn_types.iter().all(|t| t == "F16" || t == "BF16" || t == "F32"),
        };
        if !ok {
            let what = match self {
                Method::Reference => "an unsliced F16/BF16/F32 model and no --compute",
                Method::DenseLoaded => "a profile-guided slice (selectinfer slice --profile) and no --compute",
                Method::Selectinfer => "a profile-guided slice and --compute (without --no-static)",
                Method::Coreinfer => "an unsliced model and --compute",
                Method::CoreinferLoading => "a sliced model, --compute and --no-static",
                Method::RandomLoading => "a random slice (selectinfer slice --random)",
                Method::Q4_0 => "an unsliced Q4_0 model (selectinfer convert --to q4_0) and no --compute",
                Method::Q4KM => "an unsliced Q4_K_M model (selectinfer convert --to q4_k_m) and no --compute",
                Method::Q8_0 => "an unsliced Q8_0 model (selectinfer convert --to q8_0) and no --compute",
                Method::DiskOffload => "an unsliced F16/BF16/F32 model and no --compute",
            };
            bail!(
                "method {} needs {what}; {path} is {} (FFN types {}){}",
                self.name(),
                meta.as_ref().map_or("not sliced".to_string(), |m| format!("sliced ({}, load {})", m.selection, m.load)),
                info.ffn_types.join("/"),
                if compute.is_some() { " and --compute was given" } else { "" }
            );
        }
        Ok(())
    }
}

/// Generation limits and stop strings of a task.
pub fn task_limits(task: Task) -> (usize, &'static [&'static str]) {
    match task {
        Task::Qa => (32, &["\n"]),
        Task::Translate => (128, &["\n"]),
        Task::Summarize => (96, &["\n"]),
    }
}

/// A solved example: its prompt followed by its first reference.
pub fn solved_example(ex: &Example) -> String {
    format!("{} {}", ex.prompt(), ex.references[0])
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
    /// Selective computation, if any.
    pub compute: Option<ComputeOptions>,
    /// CPU threads.
    pub threads: i32,
    /// Wrap prompts in the model's chat template.
    pub chat: bool,
    /// Run inside a memory group limited to this many bytes (page cache included).
    pub mem_cap: Option<u64>,
    /// Speed and memory only: generate exactly this many tokens per prompt, no stop
    /// strings, no scores (the only mode for synthetic random-weight models).
    pub speed_only: Option<usize>,
    /// What prompt tokens rank their neurons by when they vote (with `compute`).
    pub vote: crate::compute::Vote,
}

/// One CSV row.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct EvalRow {
    /// UTC time the row was written.
    pub timestamp: String,
    /// Commit of the selectinfer binary that wrote the row, embedded at build time
    /// (`-dirty` with uncommitted source changes; "unknown" outside git).
    pub git_commit: String,
    /// CPU model and cores.
    pub machine: String,
    /// Model file name.
    pub model: String,
    /// Method.
    pub method: String,
    /// Task.
    pub task: String,
    /// Dataset file name.
    pub data: String,
    /// Examples scored.
    pub examples: usize,
    /// k-shot examples per prompt.
    pub shots: usize,
    /// Template version.
    pub template_version: String,
    /// gamma of the file (1 when not sliced).
    pub load: f64,
    /// delta of the file (0 when not sliced or --no-static).
    pub static_share: f64,
    /// phi (empty: dense).
    pub compute: Option<f64>,
    /// alpha (empty: dense).
    pub token_share: Option<f64>,
    /// SQuAD exact match (0-100).
    pub em: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `em` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub em_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub em_hi: Option<f64>,
    /// SQuAD F1 (0-100).
    pub f1: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `f1` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub f1_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub f1_hi: Option<f64>,
    /// sacrebleu BLEU.
    pub bleu: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `bleu` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub bleu_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub bleu_hi: Option<f64>,
    /// sacrebleu chrF.
    pub chrf: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `chrf` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub chrf_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub chrf_hi: Option<f64>,
    /// ROUGE-1 F (0-100).
    pub rouge1: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `rouge1` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub rouge1_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub rouge1_hi: Option<f64>,
    /// ROUGE-2 F (0-100).
    pub rouge2: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `rouge2` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub rouge2_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub rouge2_hi: Option<f64>,
    /// ROUGE-L F (0-100).
    pub rouge_l: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `rouge_l` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub rouge_l_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub rouge_l_hi: Option<f64>,
    /// Median prompt tok/s.
    pub prefill_tps: f64,
    /// Median decode tok/s.
    pub decode_tps: f64,
    /// Median per-prompt time to choose the computed neurons and gather their
    /// weights, in ms (empty: no selective computation, or a row from before).
    #[serde(default)]
    pub select_ms: Option<f64>,
    /// Tensor bytes of the file.
    pub weight_bytes: u64,
    /// Peak resident bytes of the process.
    pub peak_rss_bytes: u64,
    /// Major page faults during the run.
    pub major_faults: u64,
    /// Wall seconds of the run.
    pub wall_s: f64,
    /// Memory cap of the run's memory group (empty: none).
    pub mem_cap_bytes: Option<u64>,
    /// Most bytes the memory group was charged, page cache included (empty: no cap).
    pub cap_max_usage_bytes: Option<u64>,
    /// Tokens generated per prompt in a speed-only run (empty: scored run).
    pub speed_only_tokens: Option<usize>,
    /// The model has random (synthetic) weights: speed and memory only.
    pub synthetic: bool,
    /// CPU threads.
    pub threads: i32,
    /// Prompts were wrapped in the model's chat template (`--chat`). Files written
    /// before this column existed read as `false`, which is what they ran.
    #[serde(default)]
    pub chat: bool,
    /// Selection variant beyond the paper's ([`variant_label`]; empty for the
    /// paper's, and in files written before this column).
    #[serde(default)]
    pub variant: String,
}

impl EvalRow {
    /// The value of a score column.
    pub fn score(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Em => self.em,
            Metric::F1 => self.f1,
            Metric::Bleu => self.bleu,
            Metric::Chrf => self.chrf,
            Metric::Rouge1 => self.rouge1,
            Metric::Rouge2 => self.rouge2,
            Metric::RougeL => self.rouge_l,
        }
    }

    /// A score with its 95% interval, where the row has both.
    pub fn interval(&self, m: Metric) -> Option<Interval> {
        let (lo, hi) = match m {
            Metric::Em => (self.em_lo, self.em_hi),
            Metric::F1 => (self.f1_lo, self.f1_hi),
            Metric::Bleu => (self.bleu_lo, self.bleu_hi),
            Metric::Chrf => (self.chrf_lo, self.chrf_hi),
            Metric::Rouge1 => (self.rouge1_lo, self.rouge1_hi),
            Metric::Rouge2 => (self.rouge2_lo, self.rouge2_hi),
            Metric::RougeL => (self.rouge_l_lo, self.rouge_l_hi),
        };
        Some(Interval { point: self.score(m)?, lo: lo?, hi: hi? })
    }

    /// Sets a score column and its interval columns.
    pub fn set_interval(&mut self, m: Metric, iv: Interval) {
        let (v, lo, hi) = match m {
            Metric::Em => (&mut self.em, &mut self.em_lo, &mut self.em_hi),
            Metric::F1 => (&mut self.f1, &mut self.f1_lo, &mut self.f1_hi),
            Metric::Bleu => (&mut self.bleu, &mut self.bleu_lo, &mut self.bleu_hi),
            Metric::Chrf => (&mut self.chrf, &mut self.chrf_lo, &mut self.chrf_hi),
            Metric::Rouge1 => (&mut self.rouge1, &mut self.rouge1_lo, &mut self.rouge1_hi),
            Metric::Rouge2 => (&mut self.rouge2, &mut self.rouge2_lo, &mut self.rouge2_hi),
            Metric::RougeL => (&mut self.rouge_l, &mut self.rouge_l_lo, &mut self.rouge_l_hi),
        };
        (*v, *lo, *hi) = (Some(iv.point), Some(iv.lo), Some(iv.hi));
    }
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
    req.method.check(&g, req.compute.as_ref())?;
    let examples = read_examples(&req.data, req.task)?;
    let eval: Vec<Example> = Split::Eval.select(&examples).iter().take(req.limit.unwrap_or(usize::MAX)).cloned().collect();
    ensure!(!eval.is_empty(), "{}: the evaluation split is empty", req.data.display());
    let shots: Vec<Example> = Split::Profile.select(&examples).iter().take(req.shots).cloned().collect();
    ensure!(shots.len() == req.shots, "{}: only {} profiling examples for {} shots", req.data.display(), shots.len(), req.shots);

    let synthetic = crate::synth::is_synthetic(&g);
    if req.method == Method::DiskOffload {
        let Some(cap) = req.mem_cap else { bail!("method disk-offload needs --mem-cap below the model's size") };
        let size = ModelInfo::from_gguf(&g)?.total_bytes;
        ensure!(
            cap < size,
            "method disk-offload needs --mem-cap below the model's {} of weights, not {}; a larger cap keeps the whole file in memory",
            crate::output::format_bytes(size),
            crate::output::format_bytes(cap)
        );
    }
    // Enter the memory group before llama.cpp maps the file, so its pages are
    // charged (and evicted) under the cap.
    let cap = req.mem_cap.map(crate::memory::MemoryCap::enter).transpose()?;
    let model = Model::load(&req.model, &LoadOptions::default())?;
    let info = ModelInfo::from_gguf(model.gguf())?;
    let meta = SliceMeta::from_gguf(model.gguf())?;
    let plan = match &req.compute {
        Some(c) => ComputePlan::for_model(model.gguf(), c)?,
        None => ComputePlan::dense(info.n_layer),
    };
    let (max_tokens, stops) = match req.speed_only {
        Some(n) => (n, &[][..]),
        None => task_limits(req.task),
    };
    let prompts: Vec<Vec<i32>> = eval
        .iter()
        .map(|ex| {
            let p = prompt_with_shots(ex, &shots);
            if req.chat {
                model.apply_chat_template(&[("user", &p)]).map(|t| model.tokenize(&t, true, true))
            } else {
                Ok(model.tokenize(&p, true, false))
            }
        })
        .collect::<Result<_, _>>()?;
    let n_ctx = (prompts.iter().map(Vec::len).max().unwrap_or(0) + max_tokens + 8).next_multiple_of(256) as u32;
    let mut s = SelectiveSession::new(&model, plan, SessionOptions { n_ctx, n_batch: 512, threads: req.threads, observer: None })?;
    s.set_vote(req.vote);
    let opts = GenerateOptions { max_tokens, ignore_eog: req.speed_only.is_some(), ..Default::default() };
    let bar = crate::profile::progress_bar(true, eval.len() as u64, &format!("eval {} {}", req.method.name(), req.task));
    let (mut pre, mut dec, mut sel_ms, mut outputs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (ex, prompt) in eval.iter().zip(&prompts) {
        s.clear();
        let mut text = String::new();
        let (_, stats, sel) = s.generate(prompt, &opts, |piece| {
            text.push_str(piece);
            // Stop as soon as a stop string appears after some content.
            !stops.iter().any(|st| text.trim_start().contains(st))
        })?;
        pre.push(stats.prefill_tps());
        sel_ms.push(sel.select_ms);
        if stats.generated_tokens > 1 {
            dec.push(stats.decode_tps());
        }
        outputs.push((ex.id.clone(), cut_at_stop(&text, stops)));
        bar.inc(1);
    }
    bar.finish_and_clear();

    let preds: Vec<&str> = outputs.iter().map(|(_, o)| o.as_str()).collect();
    let refs: Vec<&Vec<String>> = eval.iter().map(|e| &e.references).collect();
    let mut row = EvalRow {
        timestamp: crate::output::utc_timestamp(),
        git_commit: crate::output::git_commit(),
        machine: crate::output::machine_description(),
        model: req.model.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        method: req.method.name().into(),
        task: req.task.name().into(),
        data: req.data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        examples: eval.len(),
        shots: req.shots,
        template_version: TEMPLATE_VERSION.into(),
        load: meta.as_ref().map_or(1.0, |m| m.load),
        static_share: if req.compute.as_ref().is_some_and(|c| c.no_static) { 0.0 } else { meta.as_ref().map_or(0.0, |m| m.static_share) },
        compute: req.compute.as_ref().map(|c| c.compute),
        token_share: req.compute.as_ref().map(|c| c.token_share),
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
        select_ms: req.compute.is_some().then(|| median(sel_ms)),
        weight_bytes: info.total_bytes,
        peak_rss_bytes: 0,
        major_faults: 0,
        wall_s: 0.0,
        mem_cap_bytes: req.mem_cap,
        cap_max_usage_bytes: None,
        speed_only_tokens: req.speed_only,
        synthetic,
        threads: req.threads,
        chat: req.chat,
        variant: variant_label(meta.as_ref(), req.compute.as_ref().map(|_| req.vote)),
    };
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

/// The selection variant a row measured, beyond the paper's (empty for the
/// paper's): the slice's importance, budget and compensation, and `vote=signed`.
pub fn variant_label(meta: Option<&crate::select::SliceMeta>, vote: Option<crate::compute::Vote>) -> String {
    let mut parts: Vec<String> = meta.map(|m| m.variant.label()).filter(|l| !l.is_empty()).into_iter().collect();
    if vote == Some(crate::compute::Vote::Signed) {
        parts.push("vote=signed".into());
    }
    parts.join(",")
}

/// Appends `row` to the CSV file at `path` (writing the header if the file is new)
/// through a temporary copy, so that a crash never leaves a half-written row.
/// A file written with an older set of columns is rewritten with the current
/// header, its rows filled with the new columns' defaults, so one file never
/// mixes two layouts.
pub fn append_row<T: Serialize + DeserializeOwned>(path: &Path, row: &T) -> anyhow::Result<()> {
    let existing = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    // One serialization gives both the current header and the new record.
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(row)?;
    let fresh = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    let header_end = fresh.iter().position(|&b| b == b'\n').map_or(fresh.len(), |i| i + 1);
    let (header, record) = fresh.split_at(header_end);
    let bytes = if existing.is_empty() {
        fresh
    } else if existing.starts_with(header) {
        let mut bytes = existing;
        bytes.extend_from_slice(record);
        bytes
    } else {
        let rows: Vec<T> = parse_rows(&existing, path)?;
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows.iter().chain([row]) {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    crate::fsutil::write_atomic(path, &bytes).with_context(|| format!("writing {}", path.display()))
}

/// The rows of a results CSV's contents (`path` names it in errors). Columns added
/// since the file was written take their defaults.
pub fn parse_rows<T: DeserializeOwned>(bytes: &[u8], path: &Path) -> anyhow::Result<Vec<T>> {
    csv::Reader::from_reader(bytes)
        .deserialize()
        .enumerate()
        .map(|(i, r)| r.with_context(|| format!("{}: row {} does not have the expected columns", path.display(), i + 2)))
        .collect()
}


#[cfg(test)]
mod tests {
    use super::*;

    /// A results file from before the `chat` column.
    const OLD_LAYOUT: &str = "timestamp,git_commit,machine,model,method,task,data,examples,shots,template_version,load,static_share,compute,token_share,em,f1,bleu,chrf,rouge1,rouge2,rouge_l,prefill_tps,decode_tps,weight_bytes,peak_rss_bytes,major_faults,wall_s,mem_cap_bytes,cap_max_usage_bytes,speed_only_tokens,synthetic,threads
2026-11-30T20:28:49Z,3db704b,cpu x2,m.gguf,reference,qa,qa.jsonl,12,1,1,1.0,0.0,,,0.0,2.0,,,,,,260.7,32.7,269100288,359641088,0,26.1,,,,false,2
";

    #[test]
    fn appending_to_an_older_layout_rewrites_the_file_with_the_current_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.csv");
        std::fs::write(&path, OLD_LAYOUT).unwrap();
        let mut row: EvalRow = csv::Reader::from_reader(OLD_LAYOUT.as_bytes()).deserialize().next().unwrap().unwrap();
        assert!(!row.chat, "a missing chat column reads as false");
        row.chat = true;
        row.f1 = Some(5.0);
        append_row(&path, &row).unwrap();
        append_row(&path, &row).unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].ends_with(",threads,chat,variant"), "{}", lines[0]);
        assert!(lines[0].contains(",em,em_lo,em_hi,f1,f1_lo,f1_hi,") && lines[0].contains(",decode_tps,select_ms,"), "{}", lines[0]);
        assert!(lines[1].ends_with(",false,2,false,"), "{}", lines[1]);
        assert!(lines[2].ends_with(",false,2,true,"), "{}", lines[2]);
        assert_eq!(lines[2], lines[3]);
        let rows: Vec<EvalRow> = csv::Reader::from_reader(text.as_bytes()).deserialize().map(Result::unwrap).collect();
        assert_eq!(rows.iter().map(|r| (r.chat, r.f1)).collect::<Vec<_>>(), [(false, Some(2.0)), (true, Some(5.0)), (true, Some(5.0))]);
        assert!(rows.iter().all(|r| r.f1_lo.is_none() && r.select_ms.is_none()), "the new columns read as empty");
    }

    #[test]
    fn intervals_and_selection_time_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.csv");
        let mut row: EvalRow = csv::Reader::from_reader(OLD_LAYOUT.as_bytes()).deserialize().next().unwrap().unwrap();
        assert_eq!(row.interval(Metric::F1), None, "no interval in an old row");
        row.set_interval(Metric::F1, Interval { point: 35.3, lo: 30.1, hi: 40.2 });
        row.set_interval(Metric::Bleu, Interval { point: 17.8, lo: 14.0, hi: 21.5 });
        row.select_ms = Some(2.5);
        append_row(&path, &row).unwrap();
        let back: Vec<EvalRow> = parse_rows(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(back[0].interval(Metric::F1), Some(Interval { point: 35.3, lo: 30.1, hi: 40.2 }));
        assert_eq!((back[0].bleu, back[0].bleu_lo, back[0].bleu_hi), (Some(17.8), Some(14.0), Some(21.5)));
        assert_eq!((back[0].score(Metric::Em), back[0].interval(Metric::Em)), (Some(0.0), None));
        assert_eq!(back[0].select_ms, Some(2.5));
    }

    #[test]
    fn stop_strings_cut_and_trim() {
        assert_eq!(cut_at_stop("  Paris.\nQuestion: x", &["\n"]), "Paris.");
        assert_eq!(cut_at_stop("no stop", &["\n"]), "no stop");
        assert_eq!(cut_at_stop("\n\nleading newlines\nrest", &["\n"]), "leading newlines");
    }
}
