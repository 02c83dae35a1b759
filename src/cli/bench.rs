//! `selectinfer bench`: prefill and decode speed per computed share phi, side by
//! side in one process, with the speedup that the bytes read per token predict.

use std::path::PathBuf;

use anyhow::Context;

use super::generate::ComputeArgs;
use crate::compute::{ComputePlan, SelectionStats, SelectiveSession};
use crate::engine::{GenerateOptions, LoadOptions, Model, SessionOptions};
use crate::gguf::GgufFile;
use crate::model::{is_ffn_tensor, split_block_name};
use crate::output::{median, Table};

/// Arguments of `bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// GGUF model (sliced or not).
    #[arg(short, long)]
    pub model: PathBuf,
    /// Computed shares phi to compare, comma-separated; a value at or above the
    /// loaded share means dense (every loaded neuron).
    #[arg(long = "compute-list", value_delimiter = ',', default_value = "1.0,0.7,0.55,0.4,0.3")]
    pub compute_list: Vec<f64>,
    /// Prompt tokens per repetition (from the bundled wikitext-2 text).
    #[arg(long, default_value_t = 64)]
    pub prompt_tokens: usize,
    /// Tokens generated per repetition (end-of-text tokens are ignored).
    #[arg(long, default_value_t = 64)]
    pub gen: usize,
    /// Repetitions per setting; medians are reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// CPU threads (default: all cores).
    #[arg(short, long)]
    pub threads: Option<i32>,
    /// Print one JSON object per setting instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

/// One setting's result.
#[derive(Debug, serde::Serialize)]
struct BenchRecord {
    model: String,
    compute: f64,
    dense: bool,
    prefill_tps: f64,
    decode_tps: f64,
    speedup: f64,
    ideal_speedup: f64,
    bytes_per_token: u64,
    select_ms: f64,
    computed_neurons: usize,
    loaded_neurons: usize,
    reps: usize,
    prompt_tokens: usize,
    gen_tokens: usize,
    threads: i32,
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

pub fn run(a: BenchArgs) -> anyhow::Result<()> {
    let model = Model::load(&a.model, &LoadOptions::default()).with_context(|| format!("cannot load {}", a.model.display()))?;
    let threads = a.threads.unwrap_or_else(crate::engine::default_threads);
    let text = std::fs::read_to_string("data/wikitext2_raw_test.txt")
        .or_else(|_| std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/wikitext2_raw_test.txt")))
        .context("reading data/wikitext2_raw_test.txt for the benchmark prompt")?;
    // About 40 bytes per token is plenty; cut on a character boundary.
    let cut = (0..=text.len().min(40 * a.prompt_tokens)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let mut prompt = model.tokenize(&text[..cut], true, false);
    prompt.truncate(a.prompt_tokens.max(1));
    let opts = GenerateOptions { max_tokens: a.gen, ignore_eog: true, ..Default::default() };

    let gamma = crate::select::SliceMeta::from_gguf(model.gguf())?.map_or(1.0, |m| m.load);
    let mut records = Vec::new();
    let mut dense_tps = None;
    let mut dense_bytes = None;
    // One session per setting, then repetitions round-robin over the settings, so
    // that drift in machine speed (other load, frequency) hits every setting alike.
    struct Setting<'m> {
        phi: f64,
        dense: bool,
        plan: ComputePlan,
        session: SelectiveSession<'m>,
        pre: Vec<f64>,
        dec: Vec<f64>,
        sel_ms: Vec<f64>,
        last_sel: SelectionStats,
    }
    let mut settings = Vec::new();
    for &phi in &a.compute_list {
        // phi at or above the loaded share gamma is dense: every loaded neuron.
        let dense = phi >= gamma - 1e-9;
        let mut plan = ComputePlan::for_model(model.gguf(), &a.compute.options(if dense { gamma } else { phi }))?;
        if dense {
            plan.layers.iter_mut().for_each(|l| *l = None);
        }
        let opts = SessionOptions { n_ctx: (a.prompt_tokens + a.gen + 16) as u32, n_batch: 512, threads, observer: None };
        let session = SelectiveSession::new(&model, plan.clone(), opts)?;
        settings.push(Setting { phi, dense, plan, session, pre: Vec::new(), dec: Vec::new(), sel_ms: Vec::new(), last_sel: SelectionStats::default() });
    }
    for rep in 0..a.reps.max(1) {
        for st in &mut settings {
            st.session.clear();
            let (_, stats, sel) = st.session.generate(&prompt, &opts, |_| true)?;
            st.pre.push(stats.prefill_tps());
            st.dec.push(stats.decode_tps());
            st.sel_ms.push(sel.select_ms);
            st.last_sel = sel;
        }
        if !a.json {
            eprintln!("bench: repetition {} of {} done", rep + 1, a.reps.max(1));
        }
    }
    for st in settings {
        let computed: Vec<Option<usize>> = st.session.current_sets().iter().map(|c| c.as_ref().map(Vec::len)).collect();
        let bytes = bytes_per_token(model.gguf(), &st.plan, if st.dense { None } else { Some(&computed) });
        let decode_tps = median(st.dec);
        let base_tps = *dense_tps.get_or_insert(decode_tps);
        let base_bytes = *dense_bytes.get_or_insert(bytes);
        records.push(BenchRecord {
            model: a.model.display().to_string(),
            compute: st.phi,
            dense: st.dense,
            prefill_tps: median(st.pre),
            decode_tps,
            speedup: decode_tps / base_tps,
            ideal_speedup: base_bytes as f64 / bytes as f64,
            bytes_per_token: bytes,
            select_ms: median(st.sel_ms),
            computed_neurons: st.last_sel.computed_neurons,
            loaded_neurons: st.last_sel.loaded_neurons,
            reps: a.reps.max(1),
            prompt_tokens: prompt.len(),
            gen_tokens: a.gen,
            threads,
        });
    }
    if a.json {
        for r in &records {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    let mut t = Table::new(["compute (phi)", "prefill tok/s", "decode tok/s", "speedup", "ideal speedup", "MiB read/token", "selection ms"]);
    for r in &records {
        t.row([
            if r.dense { format!("{} (dense)", r.compute) } else { r.compute.to_string() },
            format!("{:.1}", r.prefill_tps),
            format!("{:.1}", r.decode_tps),
            format!("{:.2}x", r.speedup),
            format!("{:.2}x", r.ideal_speedup),
            format!("{:.1}", r.bytes_per_token as f64 / 1048576.0),
            format!("{:.1}", r.select_ms),
        ]);
    }
    print!("{}", t.to_markdown());
    println!(
        "{} | {} prompt tokens, {} generated, {} threads, median of {} round-robin reps; the first setting is the speedup baseline",
        a.model.display(),
        prompt.len(),
        a.gen,
        threads,
        a.reps.max(1)
    );
    Ok(())
}
