//! `selectinfer bench`: prefill and decode speed per computed share phi, for one or
//! several model files side by side in one process (repetitions round-robin over
//! every file and setting), with the speedup over the first setting of the first
//! file (the anchor, e.g. dense Q4_K_M) and the speedup that the bytes read per
//! token predict.

use std::path::PathBuf;

use anyhow::Context;

use super::generate::ComputeArgs;
use crate::compute::{ComputePlan, SelectionStats, SelectiveSession, SessionPlan};
use crate::engine::{GenerateOptions, LoadOptions, Model, SessionOptions};
use crate::gguf::GgufFile;
use crate::model::{is_ffn_tensor, split_block_name};
use crate::output::record::{to_csv, to_json_lines, Format};
use crate::output::{median, Table};

/// Arguments of `bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// GGUF model (sliced or not), timed at every --compute-list setting; repeat
    /// to time several files in one run.
    #[arg(short, long)]
    pub model: Vec<PathBuf>,
    /// GGUF model timed dense only (every loaded neuron), e.g. the dense Q4_K_M
    /// anchor; repeatable. The first setting of the run (the first --dense file,
    /// else the first --model's first setting) is the anchor of every speedup.
    #[arg(long)]
    pub dense: Vec<PathBuf>,
    /// Computed shares phi to compare, comma-separated; a value at or above the
    /// loaded share means dense (every loaded neuron). `--compute PHI` is the list
    /// of that one share (give one or the other).
    #[arg(long = "compute-list", value_delimiter = ',', default_value = "1.0,0.7,0.55,0.4,0.3", value_parser = super::opts::parse_share, conflicts_with = "compute")]
    pub compute_list: Vec<f64>,
    /// Prompt tokens per repetition (from the bundled wikitext-2 text).
    #[arg(long, default_value_t = 64, value_parser = super::opts::parse_count)]
    pub prompt_tokens: usize,
    /// Tokens generated per repetition (end-of-text tokens are ignored).
    #[arg(long, default_value_t = 64, value_parser = super::opts::parse_gen)]
    pub gen: usize,
    /// Repetitions per setting; medians are reported.
    #[arg(long, default_value_t = 5, value_parser = super::opts::parse_count)]
    pub reps: usize,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
    /// How to print the records: md (a Markdown table with a footnote), json (JSON
    /// Lines, every field; as --json) or csv (a header row, then every field of
    /// each setting); the fields are in docs/formats.md.
    #[arg(short = 'o', long = "format", value_enum, default_value_t = Format::Md, conflicts_with = "json")]
    pub format: Format,
    /// Read the weights into memory instead of memory-mapping the files (with
    /// --processes, each setting's peak RSS then holds its whole file).
    #[arg(long)]
    pub no_mmap: bool,
    #[command(flatten)]
    pub compute: ComputeArgs,
    /// Run each repetition of each setting in its own process (this command
    /// again), still round-robin, and report each setting's peak resident memory
    /// (median over its repetitions) beside its speed.
    #[arg(long)]
    pub processes: bool,
    /// Stock llama.cpp's timing client (`scripts/stock/build.sh` builds it and
    /// prints its path): time every --dense file under unmodified llama.cpp too, in
    /// the same round-robin run, with the same prompt and generation (implies
    /// --processes).
    #[arg(long, value_name = "STOCK_BENCH")]
    pub stock: Option<PathBuf>,
    /// Dense settings loaded as llama.cpp's --no-repack does: every weight in the
    /// file's layout, file-backed, so that a memory cap can evict it and read it
    /// again from disk (the disk-offload baseline under --mem-cap).
    #[arg(long, value_name = "FILE")]
    pub dense_no_repack: Vec<PathBuf>,
    /// Load the --model files as llama.cpp's --no-repack does: every weight in the
    /// file's layout, file-backed (with --layout copy, decode then reads only the
    /// gathered neurons and the file's other pages can be evicted under --mem-cap).
    #[arg(long)]
    pub no_repack: bool,
    /// Run every setting's process inside a cgroup v1 memory group of this size
    /// (root only; e.g. 1100MiB): the device case, a memory smaller than a
    /// setting's footprint, where mapped weights are evicted and read again from
    /// disk. Implies --processes; records each setting's major page faults.
    #[arg(long, value_name = "SIZE", value_parser = super::opts::parse_mem_size, conflicts_with = "stock")]
    pub mem_cap: Option<u64>,
    /// Internal (--processes): run only this setting, once, and print its JSON.
    #[arg(long, hide = true)]
    pub only_setting: Option<usize>,
}

impl BenchArgs {
    /// The output format: `--json` is `-o json`.
    pub fn format(&self) -> Format {
        if self.json.json {
            Format::Json
        } else {
            self.format
        }
    }
}

/// One setting's result: the record every printer prints (docs/formats.md).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchRecord {
    /// `selectinfer`, or `stock llama.cpp` (--stock).
    #[serde(default = "selectinfer")]
    pub engine: String,
    pub model: String,
    pub compute: f64,
    pub dense: bool,
    pub prefill_tps: f64,
    pub decode_tps: f64,
    pub speedup: f64,
    pub ideal_speedup: f64,
    pub bytes_per_token: u64,
    pub select_ms: f64,
    /// `in-place` (prefix views of the reordered weights), `copy` (gathered
    /// buffer) or `dense`.
    pub layout: String,
    /// Tensor bytes of the file.
    pub weight_bytes: u64,
    /// Bytes of gathered copies of computed neurons (0 in place).
    pub copy_bytes: usize,
    pub computed_neurons: usize,
    pub loaded_neurons: usize,
    pub reps: usize,
    pub prompt_tokens: usize,
    pub gen_tokens: usize,
    pub threads: i32,
    /// Whether the weights were memory-mapped (not --no-mmap).
    #[serde(default = "yes")]
    pub mmap: bool,
    /// Peak resident memory of the setting's own process (median over its
    /// repetitions; --processes / --stock only, else empty).
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// Whether llama.cpp could repack weights for its CPU kernels (false for a
    /// --dense-no-repack setting).
    #[serde(default = "yes")]
    pub repack: bool,
    /// The memory cap every process ran under (--mem-cap), bytes.
    #[serde(default)]
    pub mem_cap_bytes: Option<u64>,
    /// Page faults that read from disk, median over the setting's processes
    /// (--processes / --stock only).
    #[serde(default)]
    pub major_faults: Option<u64>,
    /// Resident memory of the setting's own process after its run, in all, in
    /// file-backed pages (the mapped weights) and in anonymous ones (copies,
    /// repacked weights, buffers); medians (selectinfer's settings with
    /// --processes only).
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    #[serde(default)]
    pub rss_file_bytes: Option<u64>,
    #[serde(default)]
    pub rss_anon_bytes: Option<u64>,
}

fn yes() -> bool {
    true
}

fn selectinfer() -> String {
    "selectinfer".into()
}

/// One setting of a run: a file and the share of its neurons decode computes.
#[derive(Debug, Clone)]
pub(super) struct Spec {
    pub(super) file: PathBuf,
    pub(super) phi: f64,
    /// Every loaded neuron (phi at or above the file's loaded share).
    pub(super) dense: bool,
    /// Timed by stock llama.cpp's client instead (--stock).
    pub(super) stock: bool,
    /// Loaded with llama.cpp's repacking (not --dense-no-repack).
    pub(super) repack: bool,
}

/// The run's settings in order, from the files' headers: each --dense file dense,
/// then each under stock llama.cpp (--stock), then each --model file at every
/// share. The first is the anchor of every speedup.
pub(super) fn specs(a: &BenchArgs) -> anyhow::Result<Vec<Spec>> {
    let mut out = Vec::new();
    for (p, dense_only) in a.dense.iter().map(|p| (p, true)).chain(a.model.iter().map(|p| (p, false))) {
        let gamma = loaded_share(p)?;
        let list = match (dense_only, a.compute.compute) {
            (true, _) => vec![gamma],
            (false, Some(phi)) => vec![phi],
            (false, None) => a.compute_list.clone(),
        };
        // phi at or above the loaded share gamma is dense: every loaded neuron.
        out.extend(list.into_iter().map(|phi| Spec { file: p.clone(), phi, dense: phi >= gamma - 1e-9, stock: false, repack: dense_only || !a.no_repack }));
    }
    let mut at = a.dense.len();
    if a.stock.is_some() {
        let stock: Vec<Spec> = a.dense.iter().map(|p| Spec { file: p.clone(), phi: 1.0, dense: true, stock: true, repack: true }).collect();
        at += stock.len();
        out.splice(a.dense.len()..a.dense.len(), stock);
    }
    let mut no_repack = Vec::new();
    for p in &a.dense_no_repack {
        no_repack.push(Spec { file: p.clone(), phi: loaded_share(p)?, dense: true, stock: false, repack: false });
    }
    out.splice(at..at, no_repack);
    Ok(out)
}

/// The share of its neurons a file holds: a slice's gamma, 1 for an unsliced file.
fn loaded_share(p: &std::path::Path) -> anyhow::Result<f64> {
    let g = GgufFile::read(p).with_context(|| format!("cannot load {}", p.display()))?;
    Ok(crate::select::SliceMeta::from_gguf(&g)?.map_or(1.0, |m| m.load))
}

/// Weight bytes one decode step reads: every tensor but the token embedding (one
/// row per token) unless it doubles as the output head, with each sparsified
/// layer's FFN scaled by computed / loaded neurons.
pub fn bytes_per_token(g: &GgufFile, plan: &ComputePlan, computed: Option<&[Option<usize>]>) -> u64 {
    let tied = g.tensor("output.weight").is_none();
    let mut total = 0f64;
    for t in &g.tensors {
        let b = t.n_bytes().unwrap_or(0) as f64;
        if t.name == "token_embd.weight" && !tied {
            continue;
        }
        if is_ffn_tensor(&t.name) {
            if let (Some((l, _)), Some(c)) = (split_block_name(&t.name), computed) {
                if let (Some(Some(lp)), Some(Some(k))) = (plan.layers.get(l), c.get(l)) {
                    total += b * (*k as f64) / lp.n_loaded as f64;
                    continue;
                }
            }
        }
        total += b;
    }
    total as u64
}

/// The benchmark prompt's source, the bundled wikitext-2 test text, built into the
/// binary so that `bench` runs the same prompt from any folder (a GPU check is
/// often started outside the repository).
const BENCH_TEXT: &str = include_str!("../../data/wikitext2_raw_test.txt");

pub fn run(a: BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.reps >= 1, "--reps must be at least 1");
    anyhow::ensure!(a.gen >= 2, "--gen must be at least 2 (decode speed counts the steps after the first token)");
    anyhow::ensure!(a.prompt_tokens >= 1, "--prompt-tokens must be at least 1");
    anyhow::ensure!(!a.model.is_empty() || !a.dense.is_empty() || !a.dense_no_repack.is_empty(), "give at least one --model, --dense or --dense-no-repack file");
    anyhow::ensure!(a.stock.is_none() || !a.dense.is_empty(), "--stock times the --dense files under stock llama.cpp: give at least one --dense file");
    let specs = specs(&a)?;
    if let Some(i) = a.only_setting {
        let spec = specs.get(i).with_context(|| format!("--only-setting {i}: the run has {} settings", specs.len()))?;
        // The group is entered before llama.cpp maps the file, so that its pages
        // are charged (and evicted) under the cap.
        let _cap = a.mem_cap.map(crate::memory::MemoryCap::enter).transpose()?;
        let records = in_process(&a, std::slice::from_ref(spec), 1)?;
        println!("{}", serde_json::to_string(&records[0])?);
        return Ok(());
    }
    let records = if a.processes || a.stock.is_some() || a.mem_cap.is_some() {
        super::bench_processes::run(&a, &specs, prompt_text(a.prompt_tokens))?
    } else {
        in_process(&a, &specs, a.reps)?
    };
    print_records(&a, &records)
}

/// The benchmark prompt's text: the first `prompt_tokens` tokens are about 40
/// bytes each at most; cut on a character boundary.
pub(super) fn prompt_text(prompt_tokens: usize) -> &'static str {
    let text = BENCH_TEXT;
    let cut = (0..=text.len().min(40 * prompt_tokens)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    &text[..cut]
}

/// One (file, setting) of an in-process run: its open session and its timings.
struct Setting<'m> {
    model: &'m Model,
    prompt: Vec<i32>,
    spec: Spec,
    plan: SessionPlan,
    session: SelectiveSession<'m>,
    pre: Vec<f64>,
    dec: Vec<f64>,
    sel_ms: Vec<f64>,
    last_sel: SelectionStats,
}

/// Times `specs` in this process, `reps` repetitions round-robin.
fn in_process(a: &BenchArgs, specs: &[Spec], reps: usize) -> anyhow::Result<Vec<BenchRecord>> {
    anyhow::ensure!(specs.iter().all(|s| !s.stock), "stock llama.cpp runs in its own process");
    // One model per (file, repacking): a --dense-no-repack setting loads its file again.
    let mut models: Vec<(Model, bool)> = Vec::new();
    for sp in specs {
        if !models.iter().any(|(m, r)| m.path() == sp.file && *r == sp.repack) {
            let load = LoadOptions { mmap: !a.no_mmap, repack: sp.repack, ..Default::default() };
            models.push((Model::load(&sp.file, &load).with_context(|| format!("cannot load {}", sp.file.display()))?, sp.repack));
        }
    }
    // One session per (file, setting), then repetitions round-robin over all of
    // them, so that drift in machine speed (other load, frequency) hits every
    // setting alike.
    let mut settings = specs.iter().map(|sp| open_setting(a, &models, sp)).collect::<anyhow::Result<Vec<_>>>()?;
    let opts = GenerateOptions { max_tokens: a.gen, ignore_eog: true, ..Default::default() };
    for rep in 0..reps {
        for st in &mut settings {
            st.session.clear();
            let (_, stats, sel) = st.session.generate(&st.prompt, &opts, |_| true)?;
            st.pre.push(stats.prefill_tps());
            st.dec.push(stats.decode_tps());
            st.sel_ms.push(sel.select_ms);
            st.last_sel = sel;
        }
        if a.format() == Format::Md && a.only_setting.is_none() {
            eprintln!("bench: repetition {} of {} done", rep + 1, reps);
        }
    }
    let mut anchor: Option<(f64, u64)> = None;
    settings.into_iter().map(|st| record(a, st, reps, &mut anchor)).collect()
}

/// The session of one setting, as the plan of its phi on its file says (dense:
/// every loaded neuron).
fn open_setting<'m>(a: &BenchArgs, models: &'m [(Model, bool)], sp: &Spec) -> anyhow::Result<Setting<'m>> {
    let (model, _) = models.iter().find(|(m, r)| m.path() == sp.file && *r == sp.repack).expect("loaded above");
    let mut prompt = model.tokenize(prompt_text(a.prompt_tokens), true, false);
    prompt.truncate(a.prompt_tokens);
    let n_ctx = (prompt.len() + a.gen + 16) as u32;
    anyhow::ensure!(n_ctx <= model.n_ctx_train().max(512), "--prompt-tokens + --gen ({n_ctx}) exceed the context of {}", model.path().display());
    let plan = SessionPlan::build(&a.compute.request().at((!sp.dense).then_some(sp.phi)), model.gguf())?;
    let session = plan.open(model, SessionOptions { n_ctx, n_batch: 512, threads: a.threads.get(), observer: None })?;
    let (pre, dec, sel_ms) = (Vec::new(), Vec::new(), Vec::new());
    Ok(Setting { model, prompt, spec: sp.clone(), plan, session, pre, dec, sel_ms, last_sel: SelectionStats::default() })
}

/// The record of a timed setting; `anchor` is the first setting's (decode tok/s,
/// bytes read per token), which every speedup is over.
fn record(a: &BenchArgs, st: Setting, reps: usize, anchor: &mut Option<(f64, u64)>) -> anyhow::Result<BenchRecord> {
    let computed: Vec<Option<usize>> = st.session.current_sets().iter().map(|c| c.as_ref().map(Vec::len)).collect();
    let g = st.model.gguf();
    let dense = st.spec.dense;
    let bytes = bytes_per_token(g, &st.plan.compute, if dense { None } else { Some(&computed) });
    let decode_tps = median(st.dec);
    let (base_tps, base_bytes) = *anchor.get_or_insert((decode_tps, bytes));
    let resident = a.only_setting.map(|_| crate::memory::MemorySnapshot::now());
    let layout = if dense || !st.plan.compute.is_selective() {
        "dense".to_string()
    } else {
        serde_json::to_value(st.session.layout())?.as_str().unwrap_or_default().to_string()
    };
    Ok(BenchRecord {
        engine: selectinfer(),
        model: st.model.path().display().to_string(),
        compute: st.spec.phi,
        dense,
        prefill_tps: median(st.pre),
        decode_tps,
        speedup: decode_tps / base_tps,
        ideal_speedup: base_bytes as f64 / bytes as f64,
        bytes_per_token: bytes,
        select_ms: median(st.sel_ms),
        layout,
        weight_bytes: crate::model::ModelInfo::from_gguf(g)?.total_bytes,
        copy_bytes: st.last_sel.compact_bytes,
        computed_neurons: st.last_sel.computed_neurons,
        loaded_neurons: st.last_sel.loaded_neurons,
        reps,
        prompt_tokens: st.prompt.len(),
        gen_tokens: a.gen,
        threads: a.threads.get(),
        mmap: !a.no_mmap,
        peak_rss_bytes: None,
        repack: st.spec.repack,
        mem_cap_bytes: a.mem_cap,
        major_faults: None,
        // A child (--processes) holds one setting: its resident memory is that setting's.
        rss_bytes: resident.map(|m| m.rss_bytes),
        rss_file_bytes: resident.map(|m| m.rss_file_bytes),
        rss_anon_bytes: resident.map(|m| m.rss_anon_bytes),
    })
}

/// Prints the records in the format asked for (`-o`).
fn print_records(a: &BenchArgs, records: &[BenchRecord]) -> anyhow::Result<()> {
    match a.format() {
        Format::Md => print_table(a, records),
        Format::Json => print!("{}", to_json_lines(records)?),
        Format::Csv => print!("{}", to_csv(records)?),
    }
    Ok(())
}

/// The Markdown table of the records, with its footnote.
fn print_table(a: &BenchArgs, records: &[BenchRecord]) {
    let threads = a.threads.get();
    let mut files: Vec<&str> = Vec::new();
    records.iter().for_each(|r| if !files.contains(&r.model.as_str()) { files.push(&r.model) });
    let several = files.len() > 1;
    let stock = records.iter().any(|r| r.engine != "selectinfer");
    let rss = records.iter().any(|r| r.peak_rss_bytes.is_some());
    let capped = records.iter().any(|r| r.mem_cap_bytes.is_some());
    let mut head = vec!["compute (phi)", "layout", "weights + copies MiB", "prefill tok/s", "decode tok/s", "speedup", "ideal speedup", "MiB read/token", "selection ms"];
    if rss {
        head.insert(3, "peak RSS MiB");
    }
    if capped {
        head.push("major faults");
    }
    if stock {
        head.insert(0, "engine");
    }
    if several {
        head.insert(usize::from(stock), "model");
    }
    let mut t = Table::new(head);
    let mib = |b: f64| format!("{:.1}", b / 1048576.0);
    for r in records {
        let mut row = vec![
            match (r.dense, r.repack) {
                (true, true) => format!("{} (dense)", r.compute),
                (true, false) => format!("{} (dense, no repacking)", r.compute),
                (false, true) => r.compute.to_string(),
                (false, false) => format!("{} (no repacking)", r.compute),
            },
            r.layout.clone(),
            mib((r.weight_bytes as usize + r.copy_bytes) as f64),
            format!("{:.1}", r.prefill_tps),
            format!("{:.1}", r.decode_tps),
            format!("{:.2}x", r.speedup),
            format!("{:.2}x", r.ideal_speedup),
            mib(r.bytes_per_token as f64),
            format!("{:.1}", r.select_ms),
        ];
        if rss {
            row.insert(3, r.peak_rss_bytes.map_or("-".into(), |b| mib(b as f64)));
        }
        if capped {
            row.push(r.major_faults.map_or("-".into(), |f| f.to_string()));
        }
        if stock {
            row.insert(0, r.engine.clone());
        }
        if several {
            row.insert(usize::from(stock), std::path::Path::new(&r.model).file_name().map_or(r.model.clone(), |f| f.to_string_lossy().into_owned()));
        }
        t.row(row);
    }
    print!("{}", t.to_markdown());
    println!(
        "{} | {} generated tokens, {} threads, median of {} round-robin reps{}; speedups are over the first setting of {}",
        files.join(", "),
        a.gen,
        threads,
        a.reps,
        if rss { ", each in its own process (peak RSS: its median)" } else { "" },
        files.first().copied().unwrap_or_default()
    );
    if let Some(cap) = a.mem_cap {
        println!("every process ran in a memory group capped at {} (page cache included)", crate::output::format_bytes(cap));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::record::{read_csv, read_json_lines};

    fn rec(engine: &str, compute: f64, peak: Option<u64>) -> BenchRecord {
        BenchRecord {
            engine: engine.into(),
            model: "models/a, b.gguf".into(),
            compute,
            dense: compute >= 0.7,
            prefill_tps: 812.345678901,
            decode_tps: 61.0 / 3.0,
            speedup: 1.0 / 3.0,
            ideal_speedup: 1.25,
            bytes_per_token: 123_456_789,
            select_ms: 0.0,
            layout: "in-place".into(),
            weight_bytes: 98_765_432,
            copy_bytes: 0,
            computed_neurons: 1536,
            loaded_neurons: 2688,
            reps: 3,
            prompt_tokens: 64,
            gen_tokens: 64,
            threads: 2,
            mmap: true,
            peak_rss_bytes: peak,
            repack: compute < 0.5,
            mem_cap_bytes: peak.map(|_| 1 << 30),
            major_faults: peak.map(|_| 4321),
            rss_bytes: peak.map(|p| p - 7),
            rss_file_bytes: peak.map(|p| p / 3),
            rss_anon_bytes: peak.map(|p| p - 7 - p / 3),
        }
    }

    #[test]
    fn every_printer_prints_the_same_record() {
        let recs = vec![rec("selectinfer", 0.7, Some(1_517_000_000)), rec("stock llama.cpp", 0.4, None)];
        let csv = to_csv(&recs).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        assert_eq!(header.len(), 27);
        assert_eq!((header[0], header[20], header[23], header[26]), ("engine", "peak_rss_bytes", "major_faults", "rss_anon_bytes"));
        assert_eq!(read_csv::<BenchRecord>(&csv).unwrap(), recs);
        let json = to_json_lines(&recs).unwrap();
        assert_eq!(read_json_lines::<BenchRecord>(&json).unwrap(), recs);
        // A record printed before `mmap`, `engine` and the cap's fields existed reads
        // with their defaults.
        let old = json.lines().nth(1).unwrap().replace(r#""engine":"stock llama.cpp","#, "").replace(r#""mmap":true,"#, "");
        let old = old.replace(r#","repack":true,"mem_cap_bytes":null,"major_faults":null,"rss_bytes":null,"rss_file_bytes":null,"rss_anon_bytes":null"#, "");
        assert!(!old.contains("repack"), "{old}");
        assert_eq!(read_json_lines::<BenchRecord>(&old).unwrap()[0], BenchRecord { engine: "selectinfer".into(), ..recs[1].clone() });
    }
}
