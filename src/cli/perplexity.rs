//! `selectinfer perplexity`: llama-perplexity-style perplexity of a text file, or of
//! a task's evaluation text, optionally appended as a CSV row.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;

use crate::engine::{LoadOptions, Model};
use crate::eval::kl::KlDivergence;
use crate::eval::perplexity::{format_chunk_nll, perplexity, Perplexity, PerplexityRow};
use crate::model::ModelInfo;
use crate::tasks::{evaluation_text, read_examples, Split, Task};

/// Arguments of `perplexity`.
#[derive(Debug, clap::Args)]
pub struct PerplexityArgs {
    /// GGUF model (original, quantized or sliced).
    #[arg(short, long)]
    pub model: PathBuf,
    /// Text file, read as is (default: the bundled wikitext-2 test set); with
    /// --task, the task's JSON Lines dataset (default: the bundled one).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Score the task's evaluation text instead of a text file: every example of
    /// the evaluation split as its prompt, a space and its first reference,
    /// separated by blank lines.
    #[arg(long, value_enum)]
    pub task: Option<Task>,
    /// Chunk length in tokens (llama-perplexity's -c); the second half of each chunk is scored.
    #[arg(long, default_value_t = 512, value_parser = super::opts::parse_ctx)]
    pub ctx: u32,
    /// Most chunks to evaluate (default: all).
    #[arg(long, value_parser = super::opts::parse_count)]
    pub chunks: Option<usize>,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
    /// Also append the result as a row to this CSV file (created with a header if new).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also the mean KL divergence of the model's next-token distributions from this
    /// reference file's (e.g. the dense file a slice was cut from) over the same
    /// scored tokens, with its 95% bootstrap interval over chunks and the share of
    /// positions whose most likely token agrees (llama-perplexity --kl-divergence).
    #[arg(long, conflicts_with = "answers")]
    pub kl_reference: Option<PathBuf>,
    /// With --task: answer perplexity instead, the NLL of each evaluation example's
    /// reference answer teacher-forced through decode after its prompt was prefilled
    /// and (with --compute) its dynamic neurons selected, with a 95% bootstrap
    /// interval over examples.
    #[arg(long, requires = "task")]
    pub answers: bool,
    /// Answer perplexity: most evaluation examples (default: all).
    #[arg(long, requires = "answers")]
    pub limit: Option<usize>,
    /// Answer perplexity: solved examples from the profiling split before each prompt.
    #[arg(long, default_value_t = 0, requires = "answers")]
    pub shots: usize,
    /// Answer perplexity: write each example's answer tokens and NLL to this JSON Lines file.
    #[arg(long, requires = "answers")]
    pub per_example: Option<PathBuf>,
    /// Answer perplexity: also the paired difference to the per-example file of
    /// another run on the same examples (--per-example of that run).
    #[arg(long, requires = "answers")]
    pub paired_with: Option<PathBuf>,
    #[command(flatten)]
    pub compute: super::generate::ComputeArgs,
}

pub fn run(a: PerplexityArgs) -> anyhow::Result<()> {
    if let Some(out) = &a.out {
        crate::fsutil::prepare_output(out)?;
    }
    if a.answers {
        return super::answers::run(&a);
    }
    anyhow::ensure!(a.compute.compute.is_none(), "--compute applies to --answers only (perplexity scores prefill tokens, which compute densely)");
    let t0 = Instant::now();
    let data = a.data.clone().unwrap_or_else(|| PathBuf::from(a.task.map_or("data/wikitext2_raw_test.txt", Task::bundled_data)));
    let text = match a.task {
        Some(task) => {
            let examples = read_examples(&data, task)?;
            evaluation_text(Split::Eval.select(&examples))
        }
        None => std::fs::read_to_string(crate::fsutil::bundled(&data)).with_context(|| format!("reading {} (give a text file with --data)", data.display()))?,
    };
    let model = Model::load(&a.model, &LoadOptions::default()).with_context(|| format!("cannot load {}", a.model.display()))?;
    let threads = a.threads.get();
    let (p, kl) = match &a.kl_reference {
        Some(r) => {
            let reference = Model::load(r, &LoadOptions::default()).with_context(|| format!("cannot load the KL reference {}", r.display()))?;
            let (p, kl) = crate::eval::kl::perplexity_and_kl(&model, &reference, &text, a.ctx as usize, a.chunks, threads)?;
            (p, Some(kl))
        }
        None => (perplexity(&model, &text, a.ctx as usize, a.chunks, threads)?, None),
    };
    if let Some(out) = &a.out {
        let row = csv_row(&a, &data, &model, &p, kl.as_ref(), t0, threads)?;
        crate::eval::harness::append_row(out, &row)?;
        eprintln!("perplexity: appended a row to {}", out.display());
    }
    if a.json.json {
        let mut v = serde_json::to_value(&p)?;
        if let Some(k) = &kl {
            v["kl"] = serde_json::to_value(k)?;
        }
        println!("{v}");
    } else {
        print_text(&p, kl.as_ref());
    }
    Ok(())
}

/// The row `--out` appends for this run (started at `t0`) of `model` on `data`.
fn csv_row(
    a: &PerplexityArgs,
    data: &Path,
    model: &Model,
    p: &Perplexity,
    kl: Option<&KlDivergence>,
    t0: Instant,
    threads: i32,
) -> anyhow::Result<PerplexityRow> {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(PerplexityRow {
        timestamp: crate::output::utc_timestamp(),
        git_commit: crate::output::git_commit(),
        machine: crate::output::machine_description(),
        model: name(&a.model),
        task: a.task.map(|t| t.name().to_string()),
        data: name(data),
        ctx: a.ctx as usize,
        max_chunks: a.chunks,
        chunks: p.chunks,
        tokens: p.tokens,
        ppl: p.ppl,
        ppl_lo: p.ppl_lo,
        ppl_hi: p.ppl_hi,
        mean_nll: p.mean_nll,
        weight_bytes: ModelInfo::from_gguf(model.gguf())?.total_bytes,
        wall_s: t0.elapsed().as_secs_f64(),
        threads,
        chunk_nll: format_chunk_nll(&p.chunk_nll),
        kl_reference: a.kl_reference.as_deref().map(name),
        kl: kl.map(|k| k.mean),
        kl_lo: kl.and_then(|k| k.lo),
        kl_hi: kl.and_then(|k| k.hi),
        same_top: kl.map(|k| k.same_top),
    })
}

/// Without `--json`: perplexity (and KL) as sentences on stdout.
fn print_text(p: &Perplexity, kl: Option<&KlDivergence>) {
    let interval = match (p.ppl_lo, p.ppl_hi) {
        (Some(lo), Some(hi)) => format!(" [{lo:.4}, {hi:.4}] (95% bootstrap over chunks)"),
        _ => String::new(),
    };
    println!("perplexity {:.4}{interval} (mean NLL {:.5} nats over {} tokens, {} chunks of {})", p.ppl, p.mean_nll, p.tokens, p.chunks, p.n_ctx);
    if let Some(k) = kl {
        let interval = match (k.lo, k.hi) {
            (Some(lo), Some(hi)) => format!(" [{lo:.5}, {hi:.5}]"),
            _ => String::new(),
        };
        println!("KL divergence from the reference {:.5}{interval} nats per token; same most likely token at {:.1}% of positions", k.mean, 100.0 * k.same_top);
    }
}
