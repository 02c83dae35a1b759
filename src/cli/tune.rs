//! `selectinfer tune`: measure a file's speed / memory / quality frontier for one
//! task and write the slice that meets the user's limits ([`crate::tune`]).

use std::path::PathBuf;

use anyhow::Context;

use crate::eval::row::{parse_rows, EvalRow};
use crate::output::record::to_json_lines;
use crate::tasks::Task;
use crate::tune::check::Scored;
use crate::tune::frontier::Limits;
use crate::tune::measure::BenchSettings;
use crate::tune::store::Store;
use crate::tune::{TuneRequest, DEFAULT_EXAMPLES, DEFAULT_MAX_LOSS};

/// Arguments of `tune`.
#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    /// GGUF model as the user runs it (e.g. a Q4_K_M download): the anchor of every
    /// comparison, profiled (when --profile holds no rankings) and sliced.
    #[arg(short, long)]
    pub model: PathBuf,
    /// Task whose profiling split measures quality (and whose ranking is the base).
    #[arg(long, value_enum)]
    pub task: Task,
    /// JSON Lines task file whose profiling split is read (default: the task's
    /// bundled file). The evaluation split is never read.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Profile folder; profiled for every task whose ranking it lacks (default:
    /// profiles/<file stem>).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Most peak resident memory of the chosen point (e.g. 1200MiB).
    #[arg(long, value_parser = crate::memory::parse_mem_size)]
    pub mem_budget: Option<u64>,
    /// Least decode speedup over the file as it is.
    #[arg(long, value_parser = super::opts::parse_positive)]
    pub min_speedup: Option<f64>,
    /// Most mean KL divergence (nats per answer token) of the chosen point's
    /// next-token distributions from the file's own, on the task's profiling split.
    #[arg(long, default_value_t = DEFAULT_MAX_LOSS, value_parser = super::opts::parse_positive)]
    pub max_loss: f64,
    /// Profiling-split examples scored per point.
    #[arg(long, default_value_t = DEFAULT_EXAMPLES, value_parser = super::opts::parse_count)]
    pub examples: usize,
    /// Solved profiling examples before each prompt.
    #[arg(long, default_value_t = 0)]
    pub shots: usize,
    /// Measure only the coarse grid (no points halfway to the chosen one's neighbours).
    #[arg(long)]
    pub no_refine: bool,
    /// Repetitions of each point in the round-robin timing run (medians).
    #[arg(long, default_value_t = 3, value_parser = super::opts::parse_count)]
    pub reps: usize,
    /// Prompt tokens per timing repetition.
    #[arg(long, default_value_t = 128, value_parser = super::opts::parse_count)]
    pub prompt_tokens: usize,
    /// Tokens generated per timing repetition. As bench's headline runs: shorter
    /// runs (64 + 32) time the selective points about 0.1x lower on an AMD EPYC
    /// (results/bench/qwen2.5-1.5b-tune-bench-length.md).
    #[arg(long, default_value_t = 64, value_parser = super::opts::parse_gen)]
    pub gen: usize,
    /// Work folder: the point slices and every measurement, kept so that an
    /// interrupted or repeated tune resumes (default: FILE.tune-TASK beside the file).
    #[arg(long, value_hint = clap::ValueHint::DirPath)]
    pub work: Option<PathBuf>,
    /// Where the chosen point's slice is written, with the tuning in its metadata;
    /// written under a temporary name and renamed when complete.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
}

pub fn run(a: TuneArgs) -> anyhow::Result<()> {
    let req = TuneRequest {
        model: a.model,
        task: a.task,
        data: a.data,
        profile: a.profile,
        work: a.work,
        output: a.output,
        limits: Limits { mem_budget: a.mem_budget, min_speedup: a.min_speedup, max_loss: a.max_loss },
        examples: a.examples,
        shots: a.shots,
        refine: !a.no_refine,
        bench: BenchSettings { reps: a.reps, prompt_tokens: a.prompt_tokens, gen: a.gen, threads: a.threads.get() },
    };
    let report = crate::tune::run(&req)?;
    if a.json.json {
        print!("{}", to_json_lines(std::slice::from_ref(&report))?);
    } else {
        println!("{}", crate::tune::frontier::table(&report.frontier, Some(&report.chosen)));
        println!("chosen: {} ({})", report.chosen, report.file.display());
        println!("run it: {}", report.command);
        println!("frontier plot: {}; measurements: {}", report.plot.display(), report.work.display());
    }
    Ok(())
}

/// Arguments of `tune-check`.
#[derive(Debug, clap::Args)]
pub struct TuneCheckArgs {
    /// A tune work folder (FILE.tune-TASK): the points and their KL on the profiling split.
    #[arg(long, value_hint = clap::ValueHint::DirPath)]
    pub frontier: PathBuf,
    /// An experiment's results.csv scoring the same file at the same points on the
    /// evaluation split (reference, dense-loaded and selectinfer rows); default,
    /// with --experiment, results/NAME/results.csv.
    #[arg(long, required_unless_present = "experiment")]
    pub results: Option<PathBuf>,
    /// The experiment file the results come from: its rows are told apart by model,
    /// so that a results file of several models can be checked one model at a time.
    #[arg(long)]
    pub experiment: Option<PathBuf>,
    /// The experiment's model that was tuned (needed when it has several).
    #[arg(long, requires = "experiment")]
    pub model: Option<String>,
    /// Only slice rows of this selection (the results' `variant` column, e.g.
    /// `base=q4_k_m,down=neurons`); needed when the results score several
    /// selections at one point.
    #[arg(long)]
    pub variant: Option<String>,
    /// Also show the point tune chooses from the frontier under these limits, with
    /// its score and (with --experiment) its paired difference to the dense file on
    /// the evaluation split. Repeat for several budgets; a row without one comes first.
    #[arg(long = "mem-budget", value_parser = crate::memory::parse_mem_size)]
    pub mem_budgets: Vec<u64>,
    /// As --mem-budget: the least decode speedup of the choice.
    #[arg(long, value_parser = super::opts::parse_positive)]
    pub min_speedup: Option<f64>,
    /// As --mem-budget: the most mean KL of the choice (default: tune's, 0.15).
    #[arg(long, value_parser = super::opts::parse_positive)]
    pub max_loss: Option<f64>,
    /// Also write the report (Markdown) here, under a temporary name renamed when complete.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
}

pub fn check(a: TuneCheckArgs) -> anyhow::Result<()> {
    let (header, store) = Store::existing(&a.frontier)?;
    let task = Task::from_name(&header.task).with_context(|| format!("{} names an unknown task {:?}", a.frontier.display(), header.task))?;
    let experiment = a.experiment.as_deref().map(crate::experiment::config::Experiment::read).transpose()?;
    let results = match (&a.results, &a.experiment) {
        (Some(r), _) => r.clone(),
        (None, Some(e)) => crate::experiment::default_results_dir(e).join("results.csv"),
        (None, None) => anyhow::bail!("give --results CSV or --experiment YAML"),
    };
    let bytes = std::fs::read(&results).with_context(|| format!("cannot read {}", results.display()))?;
    let mut rows: Vec<EvalRow> = parse_rows(&bytes, &results)?;
    // The experiment's outputs give each row's paired difference to its reference.
    let mut pairs = match &experiment {
        Some(e) => crate::experiment::intervals::compute(e, &e.cells(), &mut rows, &results.with_file_name("outputs"))?,
        None => Default::default(),
    };
    let metric = crate::eval::bootstrap::Metric::primary(task);
    let mut rows: Vec<Scored> = rows
        .into_iter()
        .enumerate()
        .map(|(i, row)| Scored {
            row,
            delta: pairs.reference.get(&i).and_then(|d| d.iter().find(|(m, _)| *m == metric)).map(|(_, iv)| *iv),
            per_example: pairs.stats.remove(&i).and_then(|s| s.into_iter().find(|(m, _)| *m == metric)).map(|(_, s)| s),
        })
        .collect();
    if let Some(e) = &experiment {
        rows = crate::tune::check::rows_of_model(e, rows, a.model.as_deref())?;
    }
    if let Some(v) = &a.variant {
        rows = crate::tune::check::rows_of_variant(rows, v);
    }
    let mut c = crate::tune::check::check(&store.qualities()?, &rows, task)?;
    if !a.mem_budgets.is_empty() || a.min_speedup.is_some() || a.max_loss.is_some() {
        let limits = |mem_budget| Limits { mem_budget, min_speedup: a.min_speedup, max_loss: a.max_loss.unwrap_or(DEFAULT_MAX_LOSS) };
        let all: Vec<Limits> = std::iter::once(None).chain(a.mem_budgets.iter().copied().map(Some)).map(limits).collect();
        c.choices = crate::tune::promise::choices(&crate::tune::cached::frontier_of(&store)?, &c.points, &all);
    }
    let text = crate::tune::check::report(&c);
    if let Some(out) = &a.output {
        crate::fsutil::write_atomic(out, text.as_bytes()).with_context(|| format!("cannot write {}", out.display()))?;
    }
    if a.json.json {
        print!("{}", to_json_lines(std::slice::from_ref(&c))?);
    } else {
        print!("{text}");
    }
    Ok(())
}
