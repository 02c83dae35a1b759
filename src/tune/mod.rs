//! `selectinfer tune`: the speed / memory / quality frontier of one model file for
//! one task, and the operating point that meets the user's limits. Sits on top of
//! every stage: it profiles the file when no profile exists, slices it at each
//! gamma ([`crate::select`]), measures each (gamma, phi) point's quality on the
//! task's profiling split through the real decode path ([`crate::eval::answers`]),
//! times every point against the file as it is in one round-robin `bench` run with
//! each setting's peak RSS from its own process, and chooses ([`frontier::choose`]).
//!
//! The quality measure is the mean KL divergence of the next-token distributions
//! at the reference answers' positions from the file's own, after the prompt's
//! prefill has chosen the dynamic neurons: llama-perplexity's KL, measured where
//! selective computation acts. The prefill runs over every loaded neuron whatever
//! phi is, so every phi of one slice is scored from one prefill per example
//! ([`crate::eval::answers::answer_divergences`]; bit-identical to a session per
//! phi). Every measured file's points are appended to the work folder ([`store`])
//! at once, so an interrupted tune resumes where it stopped.

pub mod cached;
pub mod check;
pub mod frontier;
pub mod grid;
pub mod measure;
pub mod plot;
pub mod promise;
pub mod store;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::engine::{LoadOptions, Model};
use crate::eval::answers::AnswerReference;
use crate::gguf::Value;
use crate::profile::ranking::{model_ranking_path, task_ranking_path};
use crate::tasks::{read_examples, Split, Task};
use frontier::{Limits, Measured};
use grid::Point;
use measure::{BenchSettings, Steps};
use store::{Header, Store};

/// mean KL (nats per answer token) that `--max-loss` allows when not given:
/// "no loss beyond the noise". On Qwen2.5-Coder-1.5B Q4_K_M / translate every
/// point at KL <= 0.155 kept de-en BLEU within its paired 95% interval of the dense
/// file's, and the first point above (0.199) did not
/// (results/tune-check-qwen2.5-1.5b/spearman.md; one model, one task, 10 points).
pub const DEFAULT_MAX_LOSS: f64 = 0.15;

/// Profiling-split examples scored per point when `--examples` is not given.
pub const DEFAULT_EXAMPLES: usize = 16;

/// Answer tokens scored per example (summaries are cut to their opening).
pub const MAX_ANSWER_TOKENS: usize = 32;

/// A tune, as the command line asks it.
#[derive(Debug, Clone)]
pub struct TuneRequest {
    pub model: PathBuf,
    pub task: Task,
    /// Task file (default: the task's bundled file); its profiling split is read.
    pub data: Option<PathBuf>,
    /// Profile folder (default: profiles/<file stem>, made when missing).
    pub profile: Option<PathBuf>,
    /// Work folder (default: <file>.tune-<task> beside the file).
    pub work: Option<PathBuf>,
    /// Where the chosen point's slice is written.
    pub output: Option<PathBuf>,
    pub limits: Limits,
    pub examples: usize,
    pub shots: usize,
    /// Refine near the chosen point after the coarse grid.
    pub refine: bool,
    pub bench: BenchSettings,
}

/// What a tune found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TuneReport {
    pub frontier: Vec<Measured>,
    pub chosen: Point,
    /// The file that runs the chosen point (the written slice, or the user's file).
    pub file: PathBuf,
    /// The command that runs it.
    pub command: String,
    pub work: PathBuf,
    pub plot: PathBuf,
}

/// Runs a tune.
pub fn run(req: &TuneRequest) -> anyhow::Result<TuneReport> {
    let steps = Steps { exe: std::env::current_exe().context("locating the selectinfer executable")? };
    let data = req.data.clone().unwrap_or_else(|| PathBuf::from(req.task.bundled_data()));
    let all = read_examples(&crate::fsutil::bundled(&data), req.task).with_context(|| format!("cannot read {}", data.display()))?;
    let split = Split::Profile.select(&all);
    anyhow::ensure!(
        req.shots + req.examples <= split.len(),
        "{} has {} profiling examples; --shots {} and --examples {} need {}",
        data.display(),
        split.len(),
        req.shots,
        req.examples,
        req.shots + req.examples
    );
    let (shots, examples) = (&split[..req.shots], &split[req.shots..req.shots + req.examples]);

    let profile = req.profile.clone().unwrap_or_else(|| default_profile(&req.model));
    ensure_profile(&steps, &req.model, &profile, req.bench.threads)?;
    eprintln!("tune: hashing {}", req.model.display());
    let header = Header {
        model_sha256: crate::profile::file_sha256(&req.model).with_context(|| format!("cannot read {}", req.model.display()))?,
        task: req.task.name().into(),
        data: file_name(&data),
        data_sha256: crate::profile::file_sha256(&crate::fsutil::bundled(&data))?,
        examples: req.examples,
        shots: req.shots,
        profile_sha256: crate::select::rewrite::profile_sha256(&profile, req.task).with_context(|| format!("cannot read the rankings in {}", profile.display()))?,
        measure: store::MEASURE,
    };
    let work = req.work.clone().unwrap_or_else(|| default_work(&req.model, req.task));
    let store = Store::open(&work, &header)?;
    let mut reference = None;
    let mut points = grid::coarse();
    measure_points(req, &steps, &store, &profile, &points, examples, shots, &mut reference)?;
    let mut measured = joined(&store, &points)?;
    let mut chosen = frontier::choose(&measured, &req.limits).map(|m| *m.point());
    if let (true, Ok(c)) = (req.refine, &chosen) {
        let more = grid::refine(c, &points);
        if !more.is_empty() {
            eprintln!("tune: refining near {c}: {}", more.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "));
            measure_points(req, &steps, &store, &profile, &more, examples, shots, &mut reference)?;
            points.extend(more);
            measured = joined(&store, &points)?;
            chosen = frontier::choose(&measured, &req.limits).map(|m| *m.point());
        }
    }
    frontier::sort(&mut measured);
    let plot = work.join(format!("frontier-{}.svg", req.task.name()));
    plot::write(&measured, chosen.as_ref().ok(), &plot, &format!("{} on {}", file_name(&req.model), req.task.name()))?;
    let chosen = chosen.inspect_err(|_| eprintln!("{}", frontier::table(&measured, None)))?;
    let file = write_chosen(req, &store, &chosen, &measured)?;
    let command = run_command(&file, &chosen, req.output.as_deref() == Some(file.as_path()));
    Ok(TuneReport { frontier: measured, chosen, file, command, work, plot })
}

/// Measures every point of `points` that the store lacks: slices, then quality,
/// then speed and memory in one bench run.
#[allow(clippy::too_many_arguments)]
fn measure_points(
    req: &TuneRequest,
    steps: &Steps,
    store: &Store,
    profile: &Path,
    points: &[Point],
    examples: &[crate::tasks::Example],
    shots: &[crate::tasks::Example],
    reference: &mut Option<AnswerReference>,
) -> anyhow::Result<()> {
    for p in points {
        if let Some(slice) = store.slice_path(p).filter(|s| !s.exists()) {
            steps.slice(&req.model, profile, req.task, p.load, &slice)?;
        }
    }
    score_points(req, store, points, examples, shots, reference)?;
    time_points(req, steps, store, points)
}

/// Scores every point of `points` whose quality the store lacks, measuring the
/// file's own answers first if no earlier call did.
fn score_points(
    req: &TuneRequest,
    store: &Store,
    points: &[Point],
    examples: &[crate::tasks::Example],
    shots: &[crate::tasks::Example],
    reference: &mut Option<AnswerReference>,
) -> anyhow::Result<()> {
    let have = store.qualities()?;
    let todo: Vec<&Point> = points.iter().filter(|p| !have.iter().any(|q| q.point.same(p))).collect();
    if todo.is_empty() {
        return Ok(());
    }
    if reference.is_none() {
        eprintln!("tune: the file's own answers on {} profiling examples", examples.len());
        let model = Model::load(&req.model, &LoadOptions::default()).with_context(|| format!("cannot load {}", req.model.display()))?;
        *reference = Some(AnswerReference::measure(&model, examples, shots, MAX_ANSWER_TOKENS, req.bench.threads)?);
    }
    let reference = reference.as_ref().expect("measured above");
    let mut done = 0;
    let mut record = |q: &store::Quality| -> anyhow::Result<()> {
        done += 1;
        eprintln!("tune: [{done}/{}] {}: KL {:.4} [{:.4}, {:.4}], answer ppl {:.2}", todo.len(), q.point, q.kl, q.kl_lo, q.kl_hi, q.answer_ppl);
        store.add_quality(q)
    };
    // The anchor's answers are the reference itself.
    for p in todo.iter().filter(|p| p.is_anchor()) {
        record(&measure::quality(**p, &reference.own_divergence()))?;
    }
    // Every phi of one file is scored from one prefill per example.
    let mut files: Vec<(PathBuf, Vec<Point>)> = Vec::new();
    for p in todo.iter().filter(|p| !p.is_anchor()) {
        let file = store.slice_path(p).unwrap_or_else(|| req.model.clone());
        match files.iter_mut().find(|(f, _)| *f == file) {
            Some((_, ps)) => ps.push(**p),
            None => files.push((file, vec![**p])),
        }
    }
    for (file, group) in &files {
        let t0 = std::time::Instant::now();
        let qs = measure::qualities(file, group, reference, examples, shots, req.bench.threads)?;
        let secs = t0.elapsed().as_secs_f64();
        for q in &qs {
            record(q)?;
        }
        eprintln!("tune: {} point(s) of {} in {secs:.0} s", qs.len(), file_name(file));
    }
    Ok(())
}

/// Times every point of `points` that the store lacks (and the anchor, when no
/// run timed it) in one bench run; a dynamic-only point is timed as its twin with
/// the static set ([`Point::timed_as`]).
fn time_points(req: &TuneRequest, steps: &Steps, store: &Store, points: &[Point]) -> anyhow::Result<()> {
    let speeds = store.speeds()?;
    let mut untimed: Vec<Point> = Vec::new();
    for p in points.iter().map(|p| p.timed_as()) {
        if !p.is_anchor() && !speeds.iter().any(|s| s.point.same(&p)) && !untimed.iter().any(|u| u.same(&p)) {
            untimed.push(p);
        }
    }
    if !untimed.is_empty() || !speeds.iter().any(|s| s.point.is_anchor()) {
        let run = speeds.iter().map(|s| s.run + 1).max().unwrap_or(0);
        let mut timed = vec![Point::ANCHOR];
        timed.extend(untimed);
        store.add_speeds(&steps.bench(&req.model, store, &timed, &req.bench, run)?)?;
    }
    Ok(())
}

/// Each point's quality with its latest speed.
fn joined(store: &Store, points: &[Point]) -> anyhow::Result<Vec<Measured>> {
    let (qualities, speeds) = (store.qualities()?, store.speeds()?);
    points
        .iter()
        .map(|p| {
            let q = qualities.iter().rev().find(|q| q.point.same(p)).with_context(|| format!("no quality measured for {p}"))?;
            // The anchor is timed in every run; its speedup is 1 by definition.
            let s = speeds.iter().rev().find(|s| s.point.same(&p.timed_as())).with_context(|| format!("no speed measured for {p}"))?;
            Ok(Measured::new(q.clone(), s))
        })
        .collect()
}

/// Profiles `model` into `dir` for every task whose ranking is missing (the
/// model-wide ranking is the mean over the three).
fn ensure_profile(steps: &Steps, model: &Path, dir: &Path, threads: i32) -> anyhow::Result<()> {
    for task in Task::ALL {
        if !task_ranking_path(dir, task).exists() {
            steps.profile(model, task, dir, threads)?;
        }
    }
    anyhow::ensure!(model_ranking_path(dir).exists(), "{} has no model-wide ranking after profiling", dir.display());
    Ok(())
}

/// Writes the chosen point's slice to `--output` with the tuning in its metadata;
/// returns the file that runs the point.
fn write_chosen(req: &TuneRequest, store: &Store, chosen: &Point, measured: &[Measured]) -> anyhow::Result<PathBuf> {
    let Some(out) = &req.output else { return Ok(store.slice_path(chosen).unwrap_or_else(|| req.model.clone())) };
    let Some(slice) = store.slice_path(chosen) else {
        eprintln!("tune: the chosen point is the file as it is; {} is not written", out.display());
        return Ok(req.model.clone());
    };
    let m = measured.iter().find(|m| m.point().same(chosen)).expect("the chosen point was measured");
    let key = |k: &str| format!("{}tune.{k}", crate::select::meta::META_PREFIX);
    let mut extra = vec![
        (key("task"), Value::String(req.task.name().into())),
        (key("max_loss"), Value::F64(req.limits.max_loss)),
        (key("kl"), Value::F64(m.quality.kl)),
        (key("speedup"), Value::F64(m.speedup)),
        (key("peak_rss_bytes"), Value::U64(m.peak_rss_bytes)),
    ];
    if let Some(phi) = chosen.compute {
        extra.push((key("compute"), Value::F64(phi)));
        extra.push((key("no_static"), Value::Bool(chosen.no_static)));
    }
    let g = crate::gguf::GgufFile::read(&slice).with_context(|| format!("cannot read {}", slice.display()))?;
    crate::gguf::copy_with_metadata(&g, out, &extra).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(out.clone())
}

/// The `chat` command line that runs `chosen` from `file`; a file tune wrote
/// (`written`) records its phi and selection, which chat takes by default.
fn run_command(file: &Path, chosen: &Point, written: bool) -> String {
    let compute = chosen.compute.filter(|_| !written).map_or(String::new(), |phi| format!(" --compute {}", grid::share(phi)));
    let no_static = if chosen.no_static && !written { " --no-static" } else { "" };
    format!("selectinfer chat -m {}{compute}{no_static}", file.display())
}

/// profiles/<file stem>.
fn default_profile(model: &Path) -> PathBuf {
    PathBuf::from("profiles").join(model.file_stem().unwrap_or_default())
}

/// <file>.tune-<task> beside the file.
pub(crate) fn default_work(model: &Path, task: Task) -> PathBuf {
    let mut name = model.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tune-{}", task.name()));
    model.with_file_name(name)
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
