//! Choosing rows: which rows a chart shows, in which order, and how their settings
//! and scores are read and written.

use crate::eval::bootstrap::Metric;
use crate::eval::harness::{EvalRow, Method};
use crate::experiment::config::Defaults;
use crate::tasks::Task;

use super::style::method_key;


/// The primary score of a row's task ([`Metric::primary`]): qa F1, translate BLEU,
/// summarize ROUGE-L.
pub(super) fn primary_metric(row: &EvalRow) -> Option<Metric> {
    Task::from_name(&row.task).map(Metric::primary)
}

/// The primary score of a row and its name: qa -> ("F1", f1), translate -> ("BLEU",
/// bleu), summarize -> ("ROUGE-L", rouge_l); None for speed-only rows (scores empty).
pub fn primary_score(row: &EvalRow) -> Option<(&'static str, f64)> {
    if row.speed_only_tokens.is_some() {
        return None;
    }
    let m = primary_metric(row)?;
    row.score(m).filter(|v| v.is_finite()).map(|v| (m.label(), v))
}

/// The 95% interval of a row's primary score, where the row has one.
pub(super) fn primary_interval(row: &EvalRow) -> Option<(f64, f64)> {
    primary_score(row)?;
    row.interval(primary_metric(row)?).map(|iv| (iv.lo, iv.hi)).filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
}

/// Float settings (gamma, phi, ...) compare equal within this.
pub(super) const EPS: f64 = 1e-6;

pub(super) fn same(a: f64, b: f64) -> bool {
    (a - b).abs() < EPS
}

pub(super) fn same_opt(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| same(a, b))
}

/// A setting as a map key (floats are not `Ord`).
pub(super) fn float_key(v: f64) -> i64 {
    (v / EPS).round() as i64
}

pub(super) const MIB: f64 = 1024.0 * 1024.0;

pub(super) fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB
}

pub(super) fn scored(row: &EvalRow) -> bool {
    primary_score(row).is_some()
}

pub(super) fn uncapped(row: &EvalRow) -> bool {
    row.mem_cap_bytes.is_none()
}

/// The last of `rows` after narrowing by each preference in turn, where a
/// preference that would leave nothing is skipped: when several runs of one
/// setting exist, the one closest to the defaults (then the latest) is shown.
pub(super) fn pick<'a>(rows: &[&'a EvalRow], prefs: &[&dyn Fn(&EvalRow) -> bool]) -> Option<&'a EvalRow> {
    let mut left: Vec<&EvalRow> = rows.to_vec();
    for pref in prefs {
        let narrowed: Vec<&EvalRow> = left.iter().copied().filter(|r| pref(r)).collect();
        if !narrowed.is_empty() {
            left = narrowed;
        }
    }
    left.last().copied()
}

/// Tasks in a stable order: the three bundled ones first, then others by name.
pub(super) fn task_order(rows: &[&EvalRow]) -> Vec<String> {
    let mut tasks: Vec<String> = Vec::new();
    for r in rows {
        if !tasks.contains(&r.task) {
            tasks.push(r.task.clone());
        }
    }
    let rank = |t: &str| Task::from_name(t).and_then(|t| Task::ALL.iter().position(|k| *k == t)).unwrap_or(Task::ALL.len());
    tasks.sort_by_key(|t| (rank(t), t.clone()));
    tasks
}

/// Methods present in `rows`, in legend order.
pub(super) fn methods_of(rows: &[&EvalRow]) -> Vec<String> {
    let mut methods: Vec<String> = Vec::new();
    for r in rows {
        if !methods.contains(&r.method) {
            methods.push(r.method.clone());
        }
    }
    methods.sort_by_key(|m| method_key(m));
    methods
}

/// Appended to every title whose chart shows a synthetic-weight row.
pub(super) fn synthetic_note(rows: &[&EvalRow]) -> &'static str {
    if rows.iter().any(|r| r.synthetic) {
        " (synthetic weights)"
    } else {
        ""
    }
}

/// A model name usable in a file name: characters outside [A-Za-z0-9._-] become `_`.
pub(super) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The axis description of a score: percentages say so, BLEU is on its own scale.
pub(super) fn score_desc(metric: Metric) -> String {
    match metric {
        Metric::F1 => "F1 (%)".into(),
        Metric::RougeL => "ROUGE-L F (%)".into(),
        Metric::Bleu => "BLEU (0-100)".into(),
        other => other.label().to_string(),
    }
}

/// A share (gamma, phi) or measurement written compactly: `0.7`, `1`, `96.5`.
pub(super) fn compact(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Whether a row is the default setting of its method: a slice at the default γ
/// (coreinfer on the whole model), a computing method at the default φ and α, and
/// a dense method without `--compute`.
pub(super) fn at_defaults(row: &EvalRow, d: &Defaults) -> bool {
    let Some(m) = Method::from_name(&row.method) else { return false };
    let unsliced = same(row.load, 1.0);
    let load_ok = if m.slices() {
        same(row.load, d.load.0)
    } else if m.computes() {
        unsliced
    } else {
        unsliced || same(row.load, d.load.0)
    };
    if m.is_dense() {
        load_ok && row.compute.is_none()
    } else {
        load_ok && same_opt(row.compute, d.compute.0) && same_opt(row.token_share, d.token_share.0)
    }
}
