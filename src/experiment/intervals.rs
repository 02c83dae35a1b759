//! 95% intervals of an experiment's rows, from the cells' per-example outputs.
//!
//! Every scored cell keeps its answers in `outputs/` (`selectinfer eval
//! --outputs`). From them and the dataset's references the report computes
//! ([`super::super::eval::bootstrap`]):
//! - the paired difference of each method to the reference cell of the same model,
//!   task, dataset, shots and example count (so the same example ids), with its
//!   paired-bootstrap interval;
//! - the interval of a row written before rows carried one.
//!
//! Outputs that do not reproduce their row's scores (a stale file) are not used.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::config::{Cell, Experiment};
use super::child::EvalCall;
use super::run::scored_examples;
use crate::eval::bootstrap::{bootstrap, paired, per_example, resamples, Interval, Metric, PerExample, RESAMPLES, SEED};
use crate::eval::harness::{EvalRow, Method};
use crate::tasks::{read_examples, Example, Split, Task};

/// Paired differences to the reference, by row index.
pub type Paired = HashMap<usize, Vec<(Metric, Interval)>>;

/// Reads an outputs file: (id, answer) per line.
pub fn read_outputs(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let v: serde_json::Value = serde_json::from_str(l).with_context(|| format!("{} line {}: not JSON", path.display(), i + 1))?;
            match (v["id"].as_str(), v["output"].as_str()) {
                (Some(id), Some(out)) => Ok((id.to_string(), out.to_string())),
                _ => anyhow::bail!("{} line {}: needs string fields \"id\" and \"output\"", path.display(), i + 1),
            }
        })
        .collect()
}

/// A cell's row and the per-example statistics of its outputs.
struct Scored {
    row: usize,
    stats: Vec<(Metric, PerExample)>,
}

/// The per-example statistics of `outputs` against the first `n` evaluation
/// examples, if the ids are theirs and the scores reproduce `row`'s.
fn score_outputs(task: Task, outputs: &[(String, String)], eval: &[Example], row: &EvalRow) -> Option<Vec<(Metric, PerExample)>> {
    if outputs.len() != eval.len() || outputs.iter().zip(eval).any(|((id, _), ex)| *id != ex.id) {
        return None;
    }
    let preds: Vec<&str> = outputs.iter().map(|(_, o)| o.as_str()).collect();
    let refs: Vec<&Vec<String>> = eval.iter().map(|e| &e.references).collect();
    let stats = per_example(task, &preds, &refs).ok()?;
    let reproduces = stats.iter().all(|(m, s)| row.score(*m).is_some_and(|v| (v - s.score()).abs() < 1e-6));
    reproduces.then_some(stats)
}

/// Fills the interval columns `rows` lack from the outputs in `outputs_dir`, and
/// returns each row's paired differences to its reference cell.
pub fn compute(e: &Experiment, cells: &[Cell], rows: &mut [EvalRow], outputs_dir: &Path) -> anyhow::Result<Paired> {
    let mut split_sizes = HashMap::new();
    let mut datasets: HashMap<(PathBuf, Task), Vec<Example>> = HashMap::new();
    let mut scored: Vec<Option<Scored>> = Vec::with_capacity(cells.len());
    for cell in cells {
        scored.push(None);
        if cell.speed_only.is_some() {
            continue;
        }
        let Ok(n) = scored_examples(cell, &mut split_sizes) else { continue };
        let call = EvalCall::new(cell, cell.prep.path(&e.models[cell.model].name), n);
        let Some(row) = rows.iter().rposition(|r| call.matches(r)) else { continue };
        // Outputs written before their names carried the dataset have the older name.
        let path = [call.outputs_name(), call.legacy_outputs_name()].map(|n| outputs_dir.join(n)).into_iter().find(|p| p.exists()).unwrap_or_else(|| outputs_dir.join(call.outputs_name()));
        let Ok(outputs) = read_outputs(&path) else { continue };
        let key = (cell.data.clone(), cell.task);
        if !datasets.contains_key(&key) {
            datasets.insert(key.clone(), read_examples(&cell.data, cell.task)?);
        }
        let eval = Split::Eval.select(&datasets[&key]);
        let Some(stats) = score_outputs(cell.task, &outputs, &eval[..n.min(eval.len())], &rows[row]) else {
            eprintln!("experiment: {} does not reproduce its row's scores; not used for intervals", path.display());
            continue;
        };
        let sets = resamples(n, RESAMPLES, SEED);
        for (m, s) in &stats {
            if rows[row].interval(*m).is_none() {
                rows[row].set_interval(*m, bootstrap(s, &sets));
            }
        }
        *scored.last_mut().expect("pushed") = Some(Scored { row, stats });
    }

    let mut out = Paired::new();
    for (i, cell) in cells.iter().enumerate() {
        let Some(sys) = &scored[i] else { continue };
        if cell.method == Method::Reference {
            continue;
        }
        let base = cells.iter().zip(&scored).find_map(|(c, s)| {
            let same = c.method == Method::Reference && c.mem_cap.is_none() && c.model == cell.model && c.task == cell.task && c.data == cell.data && c.examples == cell.examples && c.shots == cell.shots;
            s.as_ref().filter(|_| same)
        });
        let Some(base) = base else { continue };
        let sets = resamples(sys.stats[0].1.len(), RESAMPLES, SEED);
        let diffs = sys.stats.iter().zip(&base.stats).map(|((m, s), (_, b))| paired(s, b, &sets).map(|iv| (*m, iv))).collect::<Result<Vec<_>, _>>()?;
        out.insert(sys.row, diffs);
    }
    Ok(out)
}
