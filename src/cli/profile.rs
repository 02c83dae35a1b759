//! `selectinfer profile` (record), `profile merge`, `profile overlap` and
//! `profile sensitivity`.

use std::path::PathBuf;

use anyhow::Context;

use crate::output::Table;
use crate::profile::ranking::{self, overlap_per_layer, LayerRanking};
use crate::profile::{run_plain, run_profile, ProfileRequest};
use crate::tasks::{Split, Task};

/// Arguments of `profile`: either a recording run or a subcommand.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ProfileArgs {
    #[command(subcommand)]
    pub action: Option<ProfileAction>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Recording run: one task, one dataset file.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// GGUF model to profile (the paper profiles the original model: use an F16
    /// conversion of a quantized download).
    #[arg(short, long, required = true)]
    pub model: Option<PathBuf>,
    /// Task of the dataset (decides the fields read and the prompt template).
    #[arg(long, value_enum, required = true)]
    pub task: Option<Task>,
    /// JSON Lines dataset with the task's fields (default: the task's bundled
    /// files; for translate every bundled pair, de-en and cs-en, one after another).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Split of the file: the profiling split keeps evaluation examples unseen.
    #[arg(long, value_enum, default_value_t = Split::Profile)]
    pub split: Split,
    /// Most examples to run (default: as many as --tokens takes).
    #[arg(long, value_parser = super::opts::parse_count)]
    pub limit: Option<usize>,
    /// Token budget per task: each dataset file (translate has two) profiles
    /// examples spread over its split (a larger budget takes a superset) until
    /// their prompt tokens plus --gen-tokens each reach its share of N; `all` runs
    /// the whole split. With the default, the three-task profile of a 1.5B
    /// Q4_K_M model takes about 26 minutes on 2 cores (AMD EPYC; 8 to 9 a task);
    /// how far its rankings agree with others: docs/qwen2.5-1.5b.md.
    #[arg(long = "tokens", default_value = "16384", value_parser = parse_budget)]
    pub tokens: TokenBudget,
    /// Greedy tokens generated (and counted) after each prompt.
    #[arg(long, default_value_t = 64)]
    pub gen_tokens: usize,
    /// Profile directory; raw statistics go to DIR/raw/.
    #[arg(short, long, required = true, value_hint = clap::ValueHint::DirPath)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    /// Prompts generated side by side, each with a KV cache of its own: a decode
    /// call then reads the weights once for that many tokens (fewer when their
    /// caches would take over 1 GiB; 1 = one prompt at a time).
    #[arg(long, default_value_t = crate::profile::greedy::DEFAULT_SEQUENCES, value_parser = parse_sequences)]
    pub sequences: usize,
    /// Afterwards, run the same prompts without recording and print both speeds.
    #[arg(long)]
    pub compare_plain: bool,
    /// Do not run `profile merge` on the directory afterwards.
    #[arg(long)]
    pub no_merge: bool,
}

fn parse_sequences(s: &str) -> Result<usize, String> {
    match super::opts::parse_count(s)? {
        n @ 1..=256 => Ok(n),
        n => Err(format!("{n} sequences: give 1 to 256")),
    }
}

/// `profile --tokens`: a token budget per task, or none (`all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBudget(pub Option<u64>);

fn parse_budget(s: &str) -> Result<TokenBudget, String> {
    if s.trim() == "all" {
        return Ok(TokenBudget(None));
    }
    super::opts::parse_count(s).map(|n| TokenBudget(Some(n as u64))).map_err(|e| format!("{e} (or `all`)"))
}

/// Subcommands of `profile`.
#[derive(Debug, clap::Subcommand)]
pub enum ProfileAction {
    /// Turn DIR/raw/*.json into the task rankings (DIR/task-<task>.json, "base") and
    /// the model-wide ranking (DIR/model.json, "secondary").
    Merge {
        /// Profile directory.
        dir: PathBuf,
    },
    /// Print the paper's "dual structure" evidence: overlap of the top neurons
    /// between tasks, and within each task between its two halves of prompts.
    Overlap {
        /// Profile directory (with raw statistics).
        dir: PathBuf,
        /// Share of each layer's neurons compared.
        #[arg(long, default_value_t = 0.4, value_parser = super::opts::parse_share)]
        top: f64,
        /// Instead: compare each task's ranking with the same task's in this other
        /// profile of the same model (e.g. one of twice the tokens: how far the
        /// rankings have converged).
        #[arg(long)]
        against: Option<PathBuf>,
        #[command(flatten)]
        json: super::opts::JsonArg,
    },
    /// Measure what slicing each layer alone costs the output, for `slice --budget
    /// output`: perplexity of the task's profiling text (its profiling split, each
    /// prompt with its first reference; never the evaluation split) with only that
    /// layer sliced at --load as `slice` would, against the whole model. Writes
    /// DIR/sensitivity/TASK.SHA12.json, keyed by the measured model's sha256
    /// (DIR/contribution/sensitivity/ for that ranking).
    Sensitivity(SensitivityArgs),
    /// Sum each layer's FFN activations a(t) and their products a(t) a(t)^T over
    /// the task's profiling text (its profiling split, each prompt with its first
    /// reference), for `slice --compensate refit`. Writes DIR/moments/TASK.SHA12.bin,
    /// keyed by the measured model's sha256 (some
    /// hundred MB for a 270M model; regenerated, not committed).
    Moments(MomentsArgs),
}

/// Arguments of `profile moments`.
#[derive(Debug, clap::Args)]
pub struct MomentsArgs {
    /// Profile directory the moments are written into.
    pub dir: PathBuf,
    /// The whole model slices are cut from (or the F16 it was converted from).
    #[arg(short, long)]
    pub model: PathBuf,
    /// The task whose profiling text is read.
    #[arg(long, value_enum)]
    pub task: Task,
    /// JSON Lines task file whose profiling split is read (default: the task's
    /// bundled files, for translate every bundled pair).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Chunk length in tokens.
    #[arg(long, default_value_t = crate::fit::moments::MOMENTS_CTX as u32, value_parser = super::opts::parse_ctx)]
    pub ctx: u32,
    /// Most chunks (every token of each is summed).
    #[arg(long, default_value_t = crate::fit::moments::MOMENTS_CHUNKS, value_parser = super::opts::parse_count)]
    pub chunks: usize,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
}

/// Arguments of `profile sensitivity`.
#[derive(Debug, clap::Args)]
pub struct SensitivityArgs {
    /// Profile directory (with the task's ranking).
    pub dir: PathBuf,
    /// The whole model the profile was made from (or a conversion of it; F16 is
    /// the reference the profile describes).
    #[arg(short, long)]
    pub model: PathBuf,
    /// The task whose ranking slices each layer and whose profiling text is scored.
    #[arg(long, value_enum)]
    pub task: Task,
    /// Ranking of the one-layer slices: activation (the paper's) or contribution.
    #[arg(long, value_enum, default_value_t = crate::profile::ranking::Importance::Activation)]
    pub importance: crate::profile::ranking::Importance,
    /// Load share gamma of each one-layer slice.
    #[arg(long, default_value_t = 0.7, value_parser = super::opts::parse_share)]
    pub load: f64,
    /// Static share delta of each one-layer slice (the top of the task ranking).
    #[arg(long = "static", default_value_t = 0.3)]
    pub static_share: f64,
    /// JSON Lines task file whose profiling split is scored (default: the task's
    /// bundled files, for translate every bundled pair).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Chunk length in tokens (the second half of each chunk is scored).
    #[arg(long, default_value_t = 512, value_parser = super::opts::parse_ctx)]
    pub ctx: u32,
    /// Most chunks per run (n_layer + 1 runs in all).
    #[arg(long, default_value_t = 4, value_parser = super::opts::parse_count)]
    pub chunks: usize,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
}

pub fn run(args: ProfileArgs) -> anyhow::Result<()> {
    match args.action {
        Some(ProfileAction::Merge { dir }) => merge(&dir),
        Some(ProfileAction::Overlap { dir, top, against, json }) => overlap(&dir, top, against.as_deref(), json.json),
        Some(ProfileAction::Sensitivity(a)) => sensitivity(a),
        Some(ProfileAction::Moments(a)) => moments(a),
        None => record(args.run),
    }
}

fn record(a: RunArgs) -> anyhow::Result<()> {
    let (Some(model), Some(task), Some(out_dir)) = (a.model.clone(), a.task, a.output.clone()) else {
        anyhow::bail!("profile needs -m MODEL, --task TASK and -o DIR (or a subcommand: merge, overlap, sensitivity, moments)");
    };
    if out_dir.exists() && !out_dir.is_dir() {
        anyhow::bail!("-o {} is not a folder; profiles are folders (DIR/raw/*.json, DIR/task-*.json)", out_dir.display());
    }
    let files: Vec<PathBuf> = match a.data.clone() {
        Some(d) => vec![d],
        None => task.profiling_data().iter().map(PathBuf::from).collect(),
    };
    let per_file = a.tokens.0.map(|n| n.div_ceil(files.len() as u64));
    for data in files {
        record_one(&a, &model, task, data, per_file, &out_dir)?;
    }
    if !a.no_merge {
        merge(&out_dir)?;
    }
    Ok(())
}

/// Profiles one dataset file into DIR/raw/.
fn record_one(a: &RunArgs, model: &std::path::Path, task: Task, data: PathBuf, max_tokens: Option<u64>, out_dir: &std::path::Path) -> anyhow::Result<()> {
    let req = ProfileRequest {
        model: model.to_path_buf(),
        task,
        data,
        split: a.split,
        limit: a.limit,
        max_tokens,
        gen_tokens: a.gen_tokens,
        out_dir: out_dir.to_path_buf(),
        threads: a.threads.get(),
        sequences: a.sequences,
        progress: true,
    };
    let out = run_profile(&req)?;
    let tokens = out.raw.halves.iter().map(|h| h.tokens).sum::<u64>();
    eprintln!(
        "profile: {} examples of {} ({}), {} tokens, {:.1} tok/s -> {}",
        out.raw.examples,
        req.data.display(),
        task,
        tokens,
        out.throughput.tps(),
        out.raw_path.display()
    );
    if a.compare_plain {
        let plain = run_plain(&req)?;
        let mut t = Table::new(["run", "tokens", "seconds", "tok/s"]);
        t.row(["plain (no recording)".into(), plain.tokens.to_string(), format!("{:.2}", plain.seconds), format!("{:.1}", plain.tps())]);
        t.row([
            "profiling".into(),
            out.throughput.tokens.to_string(),
            format!("{:.2}", out.throughput.seconds),
            format!("{:.1}", out.throughput.tps()),
        ]);
        print!("{}", t.to_markdown());
        println!("overhead: {:.2}x", out.throughput.seconds / plain.seconds.max(1e-9));
    }
    Ok(())
}

fn merge(dir: &std::path::Path) -> anyhow::Result<()> {
    let written = ranking::merge_dir(dir).with_context(|| format!("cannot merge {}", dir.display()))?;
    for p in written {
        eprintln!("profile merge: wrote {}", p.display());
    }
    Ok(())
}

fn sensitivity(a: SensitivityArgs) -> anyhow::Result<()> {
    use crate::profile::sensitivity::sensitivity_path;
    let ranking_dir = a.importance.ranking_dir(&a.dir);
    let folder = sensitivity_path(&ranking_dir, a.task, "").parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let data = task_files(a.data, a.task);
    // The folder it writes in may not hold a file it reads.
    let mut paths = crate::fsutil::guard::Paths::default();
    paths.input("--model", &a.model).output("(the sensitivity folder)", &folder, crate::fsutil::guard::Written::Dir);
    data.iter().for_each(|d| {
        paths.input("--data", crate::fsutil::bundled(d));
    });
    paths.check()?;
    let req = crate::fit::sensitivity::SensitivityRequest {
        model: a.model,
        profile: a.dir,
        task: a.task,
        importance: a.importance,
        load: a.load,
        static_share: a.static_share,
        data,
        ctx: a.ctx as usize,
        chunks: a.chunks,
        threads: a.threads.get(),
        progress: true,
    };
    let s = crate::fit::sensitivity::measure(&req)?;
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let out = sensitivity_path(&ranking_dir, a.task, &s.model.sha256);
    ranking::write_json(&out, &s).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("profile sensitivity: wrote {}", out.display());
    Ok(())
}

/// The task files a measurement reads: the one given, or the task's bundled files.
fn task_files(data: Option<PathBuf>, task: Task) -> Vec<PathBuf> {
    data.map_or_else(|| task.profiling_data().iter().map(PathBuf::from).collect(), |d| vec![d])
}

fn moments(a: MomentsArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.dir.is_dir(), "profile directory {} does not exist", a.dir.display());
    let data = task_files(a.data, a.task);
    let req = crate::fit::moments::MomentsRequest { model: a.model, task: a.task, data, ctx: a.ctx as usize, chunks: a.chunks, threads: a.threads.get() };
    crate::fit::moments::write_task_moments(&a.dir, &req)
}

/// One row of the overlap report.
#[derive(Debug, serde::Serialize)]
struct OverlapRow {
    comparison: String,
    mean: f64,
    min_layer: f64,
    max_layer: f64,
}

fn overlap(dir: &std::path::Path, top: f64, against: Option<&std::path::Path>, json: bool) -> anyhow::Result<()> {
    if !(top > 0.0 && top <= 1.0) {
        anyhow::bail!("--top must be in (0, 1], got {top}");
    }
    let raws = ranking::read_raw_dir(dir)?;
    let rank = |scores: &Vec<Vec<f64>>| scores.iter().map(|s| LayerRanking::from_scores(s)).collect::<Vec<_>>();
    let all = ranking::task_scores(&raws, None);
    let summarize = |name: String, v: Vec<f64>| OverlapRow {
        comparison: name,
        mean: v.iter().sum::<f64>() / v.len() as f64,
        min_layer: v.iter().copied().fold(f64::INFINITY, f64::min),
        max_layer: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    };
    let mut rows = Vec::new();
    let tasks: Vec<Task> = all.keys().copied().collect();
    let tokens = |d: &[crate::profile::ranking::DatasetSummary]| d.iter().map(|d| d.tokens).sum::<u64>();
    if let Some(other) = against {
        let other_raws = ranking::read_raw_dir(other)?;
        ranking::check_model(&ranking::raw_dir(other), &other_raws[0].model, &raws[0].model)?;
        let theirs = ranking::task_scores(&other_raws, None);
        for t in tasks.iter().filter(|t| theirs.contains_key(t)) {
            let v = overlap_per_layer(&rank(&all[t].0), &rank(&theirs[t].0), top);
            rows.push(summarize(format!("{t}: {} tokens vs {} tokens", tokens(&all[t].1), tokens(&theirs[t].1)), v));
        }
        anyhow::ensure!(!rows.is_empty(), "{} and {} profile no task in common", dir.display(), other.display());
    } else {
        let half_a = ranking::task_scores(&raws, Some(0));
        let half_b = ranking::task_scores(&raws, Some(1));
        for (i, a) in tasks.iter().enumerate() {
            for b in &tasks[i + 1..] {
                let v = overlap_per_layer(&rank(&all[a].0), &rank(&all[b].0), top);
                rows.push(summarize(format!("across: {a} vs {b}"), v));
            }
        }
        for t in &tasks {
            let (a, b) = (&half_a[t], &half_b[t]);
            if a.1.iter().all(|d| d.tokens > 0) && b.1.iter().all(|d| d.tokens > 0) {
                let v = overlap_per_layer(&rank(&a.0), &rank(&b.0), top);
                rows.push(summarize(format!("within: {t} half A vs half B"), v));
            }
        }
        // Convergence at half the tokens: half A against the whole, which holds it
        // (as a profile against one of twice its tokens).
        for t in &tasks {
            let a = &half_a[t];
            if a.1.iter().all(|d| d.tokens > 0) {
                let v = overlap_per_layer(&rank(&a.0), &rank(&all[t].0), top);
                rows.push(summarize(format!("within: {t} half A ({} tokens) vs all ({} tokens)", tokens(&a.1), tokens(&all[t].1)), v));
            }
        }
    }
    if json {
        for r in &rows {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    let mut table = Table::new([format!("top {:.0}% overlap", top * 100.0), "mean".into(), "min layer".into(), "max layer".into()]);
    for r in rows {
        table.row([r.comparison, format!("{:.3}", r.mean), format!("{:.3}", r.min_layer), format!("{:.3}", r.max_layer)]);
    }
    print!("{}", table.to_markdown());
    Ok(())
}
