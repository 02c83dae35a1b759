//! Measuring points: quality in this process through the real decode path
//! ([`crate::eval::answers::answer_divergence`]), speed and peak RSS by `selectinfer
//! bench --processes` (each setting in its own process, round-robin, the anchor in
//! the same run), and the slices by `selectinfer slice`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context};

use super::grid::{share, Point, STATIC_SHARE};
use super::store::{Quality, Speed, Store};
use crate::compute::{ComputeRequest, SessionPlan};
use crate::engine::{LoadOptions, Model, SessionOptions};
use crate::eval::answers::{answer_divergences, AnswerDivergence, AnswerReference};
use crate::tasks::{Example, Task};

/// How `bench` times the points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchSettings {
    pub reps: usize,
    pub prompt_tokens: usize,
    pub gen: usize,
    pub threads: i32,
}

/// This executable, for the child steps.
pub struct Steps {
    pub exe: PathBuf,
}

impl Steps {
    fn run(&self, what: &str, args: &[String]) -> anyhow::Result<String> {
        eprintln!("tune: {what}: selectinfer {}", args.join(" "));
        let out = Command::new(&self.exe).args(args).stdin(Stdio::null()).stderr(Stdio::inherit()).output().with_context(|| format!("starting {}", self.exe.display()))?;
        ensure!(out.status.success(), "{what} failed ({})", out.status);
        String::from_utf8(out.stdout).with_context(|| format!("{what} printed text that is not UTF-8"))
    }

    /// Profiles `model` for `task` into `dir` (the profile's default token budget).
    pub fn profile(&self, model: &Path, task: Task, dir: &Path, threads: i32) -> anyhow::Result<()> {
        let args = ["profile", "-m", &path_arg(model), "--task", task.name(), "-o", &path_arg(dir), "-t", &threads.to_string()];
        self.run(&format!("profiling {}", task.name()), &args.map(String::from)).map(drop)
    }

    /// Slices `model` at gamma `load` into `out`: the paper's selection (task base,
    /// model-wide secondary, no compensation) with a neuron-major ffn_down, the
    /// layout selective computation runs in place on.
    pub fn slice(&self, model: &Path, profile: &Path, task: Task, load: f64, out: &Path) -> anyhow::Result<()> {
        let args = [
            "slice", "-m", &path_arg(model), "--profile", &path_arg(profile), "--task", task.name(), "--load", &share(load), "--static", &share(STATIC_SHARE),
            "--down-layout", "neurons", "--compensate", "none", "--importance", "activation", "--budget", "uniform", "--secondary", "model", "-o", &path_arg(out),
        ];
        self.run(&format!("slicing at gamma {}", share(load)), &args.map(String::from)).map(drop)
    }

    /// Times `points` (their files in `store`, the anchor `source`) in one
    /// round-robin run; returns their speeds, numbered `run`.
    pub fn bench(&self, source: &Path, store: &Store, points: &[Point], s: &BenchSettings, run: usize) -> anyhow::Result<Vec<Speed>> {
        let mut args: Vec<String> = ["bench", "--processes", "-o", "json", "--dense", &path_arg(source)].map(String::from).into();
        let mut files: Vec<(PathBuf, f64)> = Vec::new();
        for p in points {
            if let Some(f) = store.slice_path(p) {
                if !files.iter().any(|(g, _)| g == &f) {
                    files.push((f, p.load));
                }
            }
        }
        for (f, _) in &files {
            args.extend(["-m".into(), path_arg(f)]);
        }
        let mut phis: Vec<f64> = points.iter().filter_map(|p| p.compute).collect();
        phis.push(1.0);
        phis.sort_by(f64::total_cmp);
        phis.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        let list: Vec<String> = phis.iter().map(|&p| share(p)).collect();
        args.extend(["--compute-list".into(), list.join(","), "--reps".into(), s.reps.to_string(), "--prompt-tokens".into(), s.prompt_tokens.to_string()]);
        args.extend(["--gen".into(), s.gen.to_string(), "-t".into(), s.threads.to_string()]);
        let text = self.run("timing the points in one round-robin run", &args)?;
        let records: Vec<BenchLine> = crate::output::record::read_json_lines(&text).context("reading bench's records")?;
        let load_of = |model: &str| -> Option<f64> {
            let model = file_name(Path::new(model));
            if file_name(source) == model {
                return Some(1.0);
            }
            files.iter().find(|(f, _)| file_name(f) == model).map(|(_, g)| *g)
        };
        let mut out: Vec<Speed> = Vec::new();
        for r in &records {
            let Some(load) = load_of(&r.model) else { bail!("bench timed a file tune did not give it: {}", r.model) };
            let point = Point::new(load, (!r.dense).then_some(r.compute));
            if !points.iter().any(|p| p.same(&point)) || out.iter().any(|s| s.point.same(&point)) {
                continue;
            }
            let Some(rss) = r.peak_rss_bytes else { bail!("bench gave no peak RSS for {point}") };
            out.push(Speed { point, run, weight_bytes: r.weight_bytes, peak_rss_bytes: rss, decode_tps: r.decode_tps, prefill_tps: r.prefill_tps, speedup: r.speedup });
        }
        for p in points {
            ensure!(out.iter().any(|s| s.point.same(p)), "bench timed no setting for {p}");
        }
        Ok(out)
    }
}

/// The fields of a `bench -o json` record that tune reads.
#[derive(Debug, serde::Deserialize)]
struct BenchLine {
    model: String,
    compute: f64,
    dense: bool,
    prefill_tps: f64,
    decode_tps: f64,
    speedup: f64,
    weight_bytes: u64,
    peak_rss_bytes: Option<u64>,
}

/// The quality of each of `points`, all on the file `file` (one slice's phis, or
/// the file's own phis): their answers to `examples` against the anchor's `reference`,
/// decode computing each point's phi, every phi from one prefill per example
/// ([`answer_divergences`]).
pub fn qualities(file: &Path, points: &[Point], reference: &AnswerReference, examples: &[Example], shots: &[Example], threads: i32) -> anyhow::Result<Vec<Quality>> {
    let model = Model::load(file, &LoadOptions::default()).with_context(|| format!("cannot load {}", file.display()))?;
    let plans: Vec<SessionPlan> = points.iter().map(|p| SessionPlan::build(&ComputeRequest { compute: p.compute, no_static: p.no_static, ..ComputeRequest::default() }, model.gguf())).collect::<anyhow::Result<_>>()?;
    let n_ctx = reference.n_ctx();
    let opts = || SessionOptions { n_ctx, n_batch: n_ctx, threads, observer: None };
    // The plans differ in phi and the static set only; the session is opened with
    // one that counts votes.
    let opener = plans.iter().find(|p| p.compute.is_selective()).unwrap_or(&plans[0]);
    let mut s = opener.open(&model, opts())?;
    let computes: Vec<_> = plans.iter().map(|p| p.compute.clone()).collect();
    let ds = answer_divergences(&mut s, &computes, examples, shots, reference)?;
    Ok(points.iter().zip(ds).map(|(p, d)| quality(*p, &d)).collect())
}

/// `point`'s record of its divergence `d`.
pub fn quality(point: Point, d: &AnswerDivergence) -> Quality {
    Quality {
        point,
        kl: d.kl.point,
        kl_lo: d.kl.lo,
        kl_hi: d.kl.hi,
        same_top: d.same_top,
        answer_ppl: d.ppl.point,
        ppl_lo: d.ppl.lo,
        ppl_hi: d.ppl.hi,
        tokens: d.tokens,
    }
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
