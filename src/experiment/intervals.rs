//! 95% intervals of an experiment's rows, from the cells' per-example outputs.
//!
//! Every scored cell keeps its answers in `outputs/` (`selectinfer eval
//! --outputs`). From them and the dataset's references the report computes
//! ([`super::super::eval::bootstrap`]):
//! - the paired difference of each method to the reference cell of the same model,
//!   task, dataset, shots and example count (so the same example ids), with its
//!   paired-bootstrap interval;
//! - the paired difference of each selection variant to the paper's selection (see
//!   [`paper_twin`]), the comparison by which the refit became the default;
//! - the interval of a row written before rows carried one.
//!
//! Outputs that do not reproduce their row's scores (a stale file) are not used.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::child::EvalCall;
use super::config::{Cell, Experiment, Prep};
use super::run::scored_examples;
use crate::compute::Vote;
use crate::eval::bootstrap::{bootstrap, paired, per_example, resamples, Interval, Metric, PerExample, RESAMPLES, SEED};
use crate::eval::harness::{EvalRow, Method};
use crate::select::variant::SliceVariant;
use crate::tasks::{read_examples, Example, Split, Task};

/// Paired differences to the reference, by row index.
pub type Paired = HashMap<usize, Vec<(Metric, Interval)>>;

/// Every paired difference of an experiment's rows.
#[derive(Debug, Default)]
pub struct Pairs {
    /// To the reference cell, by row index.
    pub reference: Paired,
    /// For a selection variant's row: the row of the paper's selection it is
    /// paired with, and the differences (variant minus the paper's selection).
    pub paper: HashMap<usize, (usize, Vec<(Metric, Interval)>)>,
    /// Each scored row's per-example statistics, by row index.
    pub stats: HashMap<usize, Vec<(Metric, PerExample)>>,
}

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
/// returns each row's paired differences to its reference cell and, for a
/// selection variant, to the paper's selection.
pub fn compute(e: &Experiment, cells: &[Cell], rows: &mut [EvalRow], outputs_dir: &Path) -> anyhow::Result<Pairs> {
    let mut split_sizes = HashMap::new();
    let mut datasets: HashMap<(PathBuf, Task), Vec<Example>> = HashMap::new();
    let mut scored: Vec<Option<Scored>> = Vec::with_capacity(cells.len());
    for cell in cells {
        scored.push(None);
        if cell.speed_only.is_some() {
            continue;
        }
        let Ok(n) = scored_examples(cell, &mut split_sizes) else { continue };
        let call = EvalCall::new(cell, e.models[cell.model].file(&cell.prep), n).with_reference(e.models[cell.model].reference);
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
        out.insert(sys.row, differences(sys, base)?);
    }
    let mut paper = HashMap::new();
    for (i, sys) in scored.iter().enumerate() {
        let Some(sys) = sys else { continue };
        let bytes = |j: usize| scored[j].as_ref().map(|s| rows[s.row].weight_bytes);
        let Some(j) = paper_twin(e, cells, i, &bytes) else { continue };
        let base = scored[j].as_ref().expect("twins are scored");
        paper.insert(sys.row, (base.row, differences(sys, base)?));
    }
    let stats = scored.into_iter().flatten().map(|s| (s.row, s.stats)).collect();
    Ok(Pairs { reference: out, paper, stats })
}

/// The paired differences `sys - base` of every metric, over the same resamples.
fn differences(sys: &Scored, base: &Scored) -> anyhow::Result<Vec<(Metric, Interval)>> {
    let sets = resamples(sys.stats[0].1.len(), RESAMPLES, SEED);
    Ok(sys.stats.iter().zip(&base.stats).map(|((m, s), (_, b))| paired(s, b, &sets).map(|iv| (*m, iv))).collect::<Result<Vec<_>, _>>()?)
}

/// Whether a profile-slice cell uses the paper's selection (the default until the
/// refit, docs/selection.md): the paper's ranking over the default layers with the experiment's static share, and, if
/// it computes, the static set plus the |activation| vote with the experiment's alpha.
fn paper_selection(e: &Experiment, c: &Cell) -> bool {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let Prep::ProfileSlice { static_share, layers, variant, .. } = &c.prep else { return false };
    !c.no_static
        && *variant == SliceVariant::default()
        && layers.is_none()
        && close(*static_share, e.defaults.static_share.0)
        && c.vote == Vote::default()
        && !c.decode_bias
        && c.decode_refit.is_none()
        && c.compute.is_none_or(|(_, alpha)| close(alpha, e.defaults.token_share.0))
}

/// Largest relative difference in weight bytes at which a paper's-selection cell counts as
/// spending the same memory as a variant (a compensation bias adds n_embd x 4
/// bytes per layer).
const SAME_BYTES: f64 = 0.01;

/// The cell of the paper's selection that selection variant `i` is compared with: the
/// same method (selectinfer for dynamic-only computation on a profile slice,
/// coreinfer-loading with `slice: profile`), model, task, examples, shots, phi, base file and `ffn_down`
/// layout, with the paper's selection, whose row holds the same weight bytes
/// (within [`SAME_BYTES`]; the closest if several). So a variant at gamma 0.55
/// pairs with the paper's selection at 0.55, and a narrower layer range at a lower
/// gamma with the paper's selection that spends the same bytes over the default
/// range. None for a cell of the paper's selection itself or without such a cell. `bytes(j)`: the weight
/// bytes of cell j's row (None: no scored row).
fn paper_twin(e: &Experiment, cells: &[Cell], i: usize, bytes: &dyn Fn(usize) -> Option<u64>) -> Option<usize> {
    let c = &cells[i];
    let Prep::ProfileSlice { base, down, .. } = &c.prep else { return None };
    if paper_selection(e, c) || c.mem_cap.is_some() || c.speed_only.is_some() {
        return None;
    }
    let own = bytes(i)? as f64;
    let phi = c.compute.map(|(p, _)| p);
    let method = if c.no_static { Method::Selectinfer } else { c.method };
    cells
        .iter()
        .enumerate()
        .filter(|(j, d)| {
            let same_file_kind = matches!(&d.prep, Prep::ProfileSlice { base: b, down: w, .. } if b == base && w == down);
            *j != i
                && same_file_kind
                && paper_selection(e, d)
                && (d.method, d.model, d.task, &d.data, d.examples, d.shots) == (method, c.model, c.task, &c.data, c.examples, c.shots)
                && d.mem_cap.is_none()
                && d.speed_only.is_none()
                && d.compute.map(|(p, _)| p) == phi
        })
        .filter_map(|(j, _)| bytes(j).map(|b| (j, (b as f64 - own).abs() / own.max(1.0))))
        .filter(|&(_, rel)| rel <= SAME_BYTES)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(j, _)| j)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which cell of the paper's selection each variant of a small sweep is paired
    /// with, by the rule of `paper_twin`: same method, task and phi, the paper's selection,
    /// the same weight bytes.
    #[test]
    fn each_variant_pairs_with_the_papers_selection_that_spends_the_same_bytes() {
        let e = Experiment::parse(
            "models: [{name: m, source: m.gguf, profile: p}]
tasks: [{task: qa, examples: 10, shots: 1}]
methods:
  - method: reference
  - {method: selectinfer, load: [0.7, 0.55]}
  - {method: selectinfer, load: 0.7, compensate: mean}
  - {method: selectinfer, load: 0.55, importance: contribution}
  - {method: selectinfer, load: 0.7, vote: signed}
  - {method: selectinfer, load: 0.7, token_share: 0.4}
  - {method: selectinfer, load: 0.58, layers: \"4..14\"}
  - {method: selectinfer, load: 0.7, compute: 0.5, vote: signed}
  - {method: dense-loaded, load: 0.7}
  - {method: dense-loaded, load: 0.7, compensate: mean}
  - {method: coreinfer-loading, load: 0.7, slice: profile}
  - {method: coreinfer-loading, load: 0.7}
",
        )
        .unwrap();
        let cells = e.cells();
        let load = |c: &Cell| if let Prep::ProfileSlice { load, .. } = c.prep { load } else { 1.0 };
        // Weight bytes per cell: 1000 per unit of gamma over 14 sparsified layers of
        // N = 1 plus 4 dense ones, so 4..14 at 0.58 spends what 3..17 at 0.7 does;
        // a compensation bias adds 0.1%.
        let bytes = |j: usize| {
            let c = &cells[j];
            let narrow = matches!(&c.prep, Prep::ProfileSlice { layers: Some(_), .. });
            let kept = if narrow { 10.0 * load(c) + 8.0 } else { 14.0 * load(c) + 4.0 };
            let bias = matches!(&c.prep, Prep::ProfileSlice { variant, .. } if variant.compensation != SliceVariant::default().compensation);
            Some((kept * 1000.0 * if bias { 1.001 } else { 1.0 }).round() as u64)
        };
        let twins: Vec<Option<usize>> = (0..cells.len()).map(|i| paper_twin(&e, &cells, i, &bytes)).collect();
        // Cells in file order: reference, the paper's selection at 0.7 and 0.55, compensate,
        // contribution 0.55, signed, alpha 0.4, layers, signed at phi 0.5,
        // dense-loaded, dense-loaded compensate, dynamic only on the profile slice
        // (paired with the paper's selection, static set and vote, of the same
        // file), CoreInfer on a random slice (nothing to pair with).
        assert_eq!(twins, [None, None, None, Some(1), Some(2), Some(1), Some(1), Some(1), None, None, Some(9), Some(1), None]);
        // Without the paper's selection's row there is nothing to pair with.
        let no_paper = |j: usize| if j == 1 { None } else { bytes(j) };
        assert_eq!(paper_twin(&e, &cells, 3, &no_paper), None);
        // Bytes more than 1% apart are not the same memory.
        let off = |j: usize| if j == 6 { bytes(j).map(|b| b * 102 / 100) } else { bytes(j) };
        assert_eq!(paper_twin(&e, &cells, 6, &off), None);
    }
}
