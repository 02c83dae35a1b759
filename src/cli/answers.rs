//! `selectinfer perplexity --task T --answers`: answer perplexity with selective
//! computation ([`crate::eval::answers`]), optionally a CSV row and a paired
//! difference to another run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;

use super::perplexity::PerplexityArgs;
use crate::compute::SessionPlan;
use crate::engine::{LoadOptions, Model, SessionOptions};
use crate::eval::answers::answer_nlls;
use crate::eval::perplexity::{paired_difference, perplexity_interval, NllSpan};
use crate::eval::harness::variant_label;
use crate::select::SliceMeta;
use crate::tasks::{read_examples, Split};

/// One CSV row of an answer-perplexity run.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct AnswerRow {
    timestamp: String,
    git_commit: String,
    model: String,
    variant: String,
    task: String,
    data: String,
    examples: usize,
    shots: usize,
    load: f64,
    compute: Option<f64>,
    token_share: Option<f64>,
    tokens: usize,
    ppl: f64,
    ppl_lo: f64,
    ppl_hi: f64,
    baseline: Option<String>,
    diff: Option<f64>,
    diff_lo: Option<f64>,
    diff_hi: Option<f64>,
    wall_s: f64,
    threads: i32,
}

pub fn run(a: &PerplexityArgs) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let task = a.task.expect("--answers requires --task");
    let data = a.data.clone().unwrap_or_else(|| PathBuf::from(task.bundled_data()));
    let all = read_examples(&data, task)?;
    let mut eval = Split::Eval.select(&all).to_vec();
    if let Some(n) = a.limit {
        eval.truncate(n);
    }
    let shots = Split::Profile.select(&all);
    anyhow::ensure!(a.shots <= shots.len(), "--shots {} exceeds the {} profiling examples of {}", a.shots, shots.len(), data.display());
    let shots = &shots[..a.shots];
    let model = Model::load(&a.model, &LoadOptions::default()).with_context(|| format!("cannot load {}", a.model.display()))?;
    let plan = SessionPlan::build(&a.compute.request(), model.gguf())?;
    let longest = eval
        .iter()
        .map(|e| model.tokenize(&format!("{} {}", crate::eval::harness::prompt_with_shots(e, shots), e.references[0]), true, false).len())
        .max()
        .unwrap_or(0);
    let threads = a.threads.get();
    let n_ctx = (longest + 8).next_multiple_of(256) as u32;
    let mut s = plan.open(&model, SessionOptions { n_ctx, n_batch: n_ctx, threads, observer: None })?;
    let nlls = answer_nlls(&mut s, &eval, shots)?;
    let iv = perplexity_interval(&nlls);
    if let Some(p) = &a.per_example {
        let lines: Vec<String> = eval.iter().zip(&nlls).map(|(e, n)| serde_json::json!({"id": e.id, "tokens": n.tokens, "nll": n.nll}).to_string()).collect();
        crate::fsutil::write_atomic(p, (lines.join("\n") + "\n").as_bytes()).with_context(|| format!("writing {}", p.display()))?;
    }
    let paired = match &a.paired_with {
        Some(p) => Some(paired_difference(&nlls, &read_per_example(p, &eval)?)?),
        None => None,
    };
    let tokens: usize = nlls.iter().map(|n| n.tokens).sum();
    println!("answer perplexity {:.4} [95% CI {:.4}, {:.4}] over {} answer tokens of {} examples", iv.point, iv.lo, iv.hi, tokens, nlls.len());
    if let Some(d) = &paired {
        println!("paired difference to {}: {:+.4} [95% CI {:+.4}, {:+.4}]", a.paired_with.as_ref().unwrap().display(), d.point, d.lo, d.hi);
    }
    if let Some(out) = &a.out {
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let meta = SliceMeta::from_gguf(model.gguf())?;
        let row = AnswerRow {
            timestamp: crate::output::utc_timestamp(),
            git_commit: crate::output::git_commit(),
            model: name(&a.model),
            variant: variant_label(meta.as_ref(), model.gguf(), plan.decode()),
            task: task.name().into(),
            data: name(&data),
            examples: nlls.len(),
            shots: a.shots,
            load: meta.as_ref().map_or(1.0, |m| m.load),
            compute: a.compute.compute,
            token_share: a.compute.compute.map(|_| a.compute.token_share),
            tokens,
            ppl: iv.point,
            ppl_lo: iv.lo,
            ppl_hi: iv.hi,
            baseline: a.paired_with.as_deref().map(name),
            diff: paired.map(|d| d.point),
            diff_lo: paired.map(|d| d.lo),
            diff_hi: paired.map(|d| d.hi),
            wall_s: t0.elapsed().as_secs_f64(),
            threads,
        };
        crate::eval::harness::append_row(out, &row)?;
        eprintln!("perplexity: appended a row to {}", out.display());
    }
    Ok(())
}

/// A `--per-example` file's NLLs, checked to be of the same examples.
fn read_per_example(path: &Path, eval: &[crate::tasks::Example]) -> anyhow::Result<Vec<NllSpan>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let rows: Vec<serde_json::Value> =
        text.lines().filter(|l| !l.trim().is_empty()).map(serde_json::from_str).collect::<Result<_, _>>().with_context(|| format!("{} is not JSON Lines", path.display()))?;
    anyhow::ensure!(rows.len() == eval.len(), "{} has {} examples, this run {}", path.display(), rows.len(), eval.len());
    rows.iter()
        .zip(eval)
        .enumerate()
        .map(|(i, (r, e))| {
            let (id, tokens, nll) = (r["id"].as_str(), r["tokens"].as_u64(), r["nll"].as_f64());
            match (id, tokens, nll) {
                (Some(id), Some(tokens), Some(nll)) if id == e.id => Ok(NllSpan { tokens: tokens as usize, nll }),
                _ => anyhow::bail!("{} line {}: expected example {} with tokens and nll", path.display(), i + 1, e.id),
            }
        })
        .collect()
}
