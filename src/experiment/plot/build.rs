//! Chart descriptions from rows: per model and task a scatter of score against
//! weight memory and the two sweeps, per model the bars of every method at the
//! default setting, and the capped-speed bars of all models.

use std::collections::BTreeMap;

use crate::eval::harness::{EvalRow, Method};
use crate::experiment::config::Defaults;

use super::chart::{BarSeries, Bars, Chart, PanelAxis, Panels, Scatter, Series, SweepLine, SweepPoint};
use super::rows::*;
use super::style::method_key;
use super::PlotPoint;

/// Every chart with data, in file-name order. Charts are drawn per model (stems
/// get `-{model}` when the rows cover several models), except `capped-speed`,
/// whose groups already name the model.
pub(super) fn charts(points: &[PlotPoint], defaults: &Defaults) -> Vec<Chart> {
    let mut models: Vec<&str> = Vec::new();
    for p in points {
        if !models.contains(&p.model) {
            models.push(p.model);
        }
    }
    let several = models.len() > 1;
    let mut out = Vec::new();
    for model in &models {
        let rows: Vec<&EvalRow> = points.iter().filter(|p| p.model == *model).map(|p| p.row).collect();
        let suffix = if several { format!("-{}", sanitize(model)) } else { String::new() };
        for task in task_order(&rows) {
            let task_rows: Vec<&EvalRow> = rows.iter().copied().filter(|r| r.task == task).collect();
            // No accuracy-vs-speed chart: the rows' decode speeds come from cells run
            // at different times, which only a round-robin benchmark can compare.
            out.extend(scatter_chart(model, &task, &task_rows, XAxis::Memory, &suffix));
            out.extend(sweep_chart(Sweep::Gamma, model, &task, &task_rows, &suffix));
            out.extend(sweep_chart(Sweep::Phi, model, &task, &task_rows, &suffix));
        }
        out.extend(tasks_chart(model, &rows, defaults, &suffix));
    }
    out.extend(capped_speed(points));
    out
}

/// The x axis of a scatter chart.
#[derive(Clone, Copy)]
enum XAxis {
    Memory,
}

impl XAxis {
    fn value(self, row: &EvalRow) -> f64 {
        match self {
            XAxis::Memory => mib(row.weight_bytes),
        }
    }
}

/// `accuracy-vs-memory-{task}`: score against weight memory, one series per method.
fn scatter_chart(model: &str, task: &str, rows: &[&EvalRow], axis: XAxis, suffix: &str) -> Option<Chart> {
    let rows: Vec<&EvalRow> = rows.iter().copied().filter(|r| scored(r) && uncapped(r)).collect();
    let metric = primary_metric(rows.first()?)?;
    let series = methods_of(&rows)
        .into_iter()
        .map(|method| {
            let points = rows
                .iter()
                .filter(|r| r.method == method)
                .filter_map(|r| primary_score(r).map(|(_, s)| (axis.value(r), s)))
                .filter(|(x, _)| x.is_finite())
                .collect();
            Series { method, points }
        })
        .filter(|s: &Series| !s.points.is_empty())
        .collect::<Vec<_>>();
    if series.is_empty() {
        return None;
    }
    let (kind, x_desc, what) = match axis {
        XAxis::Memory => ("memory", "weight memory (MiB)", "weight memory"),
    };
    Some(Chart::Scatter(Scatter {
        stem: format!("accuracy-vs-{kind}-{task}{suffix}"),
        title: format!("{model} {task}: {} vs {what}{}", metric.label(), synthetic_note(&rows)),
        x_desc: x_desc.into(),
        y_desc: score_desc(metric),
        series,
    }))
}

/// One sweep line's points, one per x setting (the last run of a setting wins).
pub(super) fn sweep_points(rows: &[&EvalRow], x: impl Fn(&EvalRow) -> f64, right: impl Fn(&EvalRow) -> f64) -> Vec<SweepPoint> {
    let mut by_x: BTreeMap<i64, Vec<&EvalRow>> = BTreeMap::new();
    for r in rows {
        by_x.entry(float_key(x(r))).or_default().push(r);
    }
    by_x.values()
        .filter_map(|cell| pick(cell, &[]))
        .map(|r| SweepPoint { x: x(r), score: primary_score(r).map(|(_, s)| s), interval: primary_interval(r), right: right(r) })
        .collect()
}

/// Groups rows into sweep lines by (method, setting) and keeps the lines with at
/// least two x values; `None` when no line is left. A single point belongs to the
/// other sweep (the phi sweep's gamma 0.4 point is on the gamma sweep's chart) and
/// would only add legend entries in the same colour.
pub(super) fn sweep_lines(
    rows: &[&EvalRow],
    setting: impl Fn(&EvalRow) -> Option<f64>,
    setting_name: &str,
    x: impl Fn(&EvalRow) -> f64 + Copy,
    right: impl Fn(&EvalRow) -> f64 + Copy,
) -> Option<Vec<SweepLine>> {
    // Key: (method sort key, setting); BTreeMap keeps lines in legend order.
    type LineKey = ((usize, String), Option<i64>);
    let mut groups: BTreeMap<LineKey, Vec<&EvalRow>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((method_key(&r.method), setting(r).map(float_key)))
            .or_default()
            .push(r);
    }
    let mut lines: Vec<SweepLine> = Vec::new();
    for (((_, method), _), group) in groups {
        let points = sweep_points(&group, x, right);
        if points.len() < 2 {
            continue;
        }
        let variant = lines.iter().filter(|l| l.method == method).count();
        let label = match setting(group[0]) {
            Some(v) => format!("{method} {setting_name}={}", compact(v)),
            None => method.clone(),
        };
        lines.push(SweepLine {
            method,
            label,
            variant,
            points,
        });
    }
    (!lines.is_empty()).then_some(lines)
}

/// The reference model's score on a task, for the dashed line of the sweeps.
pub(super) fn reference_score(rows: &[&EvalRow]) -> Option<f64> {
    let refs: Vec<&EvalRow> = rows
        .iter()
        .copied()
        .filter(|r| Method::from_name(&r.method) == Some(Method::Reference) && scored(r) && uncapped(r))
        .collect();
    pick(&refs, &[]).and_then(primary_score).map(|(_, s)| s)
}

/// The two sweep charts: which rows each draws, over which setting, and with one
/// line per value of which other setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Sweep {
    /// `gamma-sweep-{task}`: dense-loaded and selectinfer over load γ; score and
    /// weight memory side by side, one line per (method, φ).
    Gamma,
    /// `phi-sweep-{task}`: selectinfer and coreinfer over compute φ, one line per
    /// (method, γ). Score only: the rows' decode speeds come from cells run at
    /// different times (`selectinfer bench` compares φ round-robin).
    Phi,
}

impl Sweep {
    fn methods(self) -> &'static [Method] {
        match self {
            Sweep::Gamma => &[Method::DenseLoaded, Method::Selectinfer],
            Sweep::Phi => &[Method::Selectinfer, Method::Coreinfer],
        }
    }

    /// Whether a row is drawn (scored and uncapped rows of the sweep's methods).
    fn shows(self, r: &EvalRow) -> bool {
        let method = Method::from_name(&r.method).is_some_and(|m| self.methods().contains(&m));
        method && (self == Sweep::Gamma || r.compute.is_some()) && scored(r) && uncapped(r)
    }

    /// The x value of a row.
    fn x(self, r: &EvalRow) -> f64 {
        match self {
            Sweep::Gamma => r.load,
            Sweep::Phi => r.compute.unwrap_or(f64::NAN),
        }
    }

    /// The setting that tells the lines apart, and its symbol.
    fn line_setting(self, r: &EvalRow) -> Option<f64> {
        match self {
            Sweep::Gamma => r.compute,
            Sweep::Phi => Some(r.load),
        }
    }

    fn line_symbol(self) -> &'static str {
        match self {
            Sweep::Gamma => "φ",
            Sweep::Phi => "γ",
        }
    }

    /// The right panel's value of a row (NaN: no right panel).
    fn right(self, r: &EvalRow) -> f64 {
        match self {
            Sweep::Gamma => mib(r.weight_bytes),
            Sweep::Phi => f64::NAN,
        }
    }
}

/// A sweep chart (see [`Sweep`]); `None` when no line has two settings.
pub(super) fn sweep_chart(sweep: Sweep, model: &str, task: &str, rows: &[&EvalRow], suffix: &str) -> Option<Chart> {
    let shown: Vec<&EvalRow> = rows.iter().copied().filter(|r| sweep.shows(r)).collect();
    let metric = primary_metric(shown.first()?)?;
    let lines = sweep_lines(&shown, |r| sweep.line_setting(r), sweep.line_symbol(), |r| sweep.x(r), |r| sweep.right(r))?;
    let score = metric.label();
    let (stem, title, x_desc, right) = match sweep {
        Sweep::Gamma => (
            "gamma-sweep",
            format!("{score} and weight memory vs load γ"),
            "load γ (share of FFN neurons kept)",
            Some(PanelAxis { caption: "weight memory".into(), desc: "weight memory (MiB)".into(), from_zero: false }),
        ),
        Sweep::Phi => ("phi-sweep", format!("{score} vs compute φ"), "compute φ (share of FFN neurons computed)", None),
    };
    Some(Chart::Panels(Panels {
        stem: format!("{stem}-{task}{suffix}"),
        title: format!("{model} {task}: {title}{}", synthetic_note(&shown)),
        x_desc: x_desc.into(),
        left: PanelAxis { caption: score.into(), desc: score_desc(metric), from_zero: true },
        right,
        lines,
        reference: reference_score(rows),
    }))
}

/// `capped-speed`: decode speed of every method under each memory cap, one group
/// per (model, cap).
pub(super) fn capped_speed(points: &[PlotPoint]) -> Option<Chart> {
    let capped: Vec<&PlotPoint> = points.iter().filter(|p| p.row.mem_cap_bytes.is_some()).collect();
    let mut groups: Vec<(&str, u64)> = Vec::new();
    for p in &capped {
        let key = (p.model, p.row.mem_cap_bytes.unwrap_or(0));
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    // Models in first-seen order, caps ascending within a model.
    let model_pos = |m: &str| groups.iter().position(|g| g.0 == m).unwrap_or(0);
    let mut sorted = groups.clone();
    sorted.sort_by_key(|&(m, cap)| (model_pos(m), cap));
    let rows: Vec<&EvalRow> = capped.iter().map(|p| p.row).collect();
    // One bar per method, load and variant (e.g. a quantized base): a cap is where
    // gamma decides whether a model fits.
    let mut settings: Vec<(String, u64, String)> = Vec::new();
    for method in methods_of(&rows) {
        let mut keys: Vec<(u64, String)> = rows.iter().filter(|r| r.method == method).map(|r| ((r.load * 1000.0).round() as u64, r.variant.clone())).collect();
        keys.sort();
        keys.dedup();
        settings.extend(keys.into_iter().map(|(l, v)| (method.clone(), l, v)));
    }
    let series: Vec<BarSeries> = settings
        .iter()
        .map(|(method, load, variant)| {
            let values: Vec<Option<f64>> = sorted
                .iter()
                .map(|&(model, cap)| {
                    let cell: Vec<&EvalRow> = capped
                        .iter()
                        .filter(|p| {
                            p.model == model
                                && p.row.mem_cap_bytes == Some(cap)
                                && &p.row.method == method
                                && (p.row.load * 1000.0).round() as u64 == *load
                                && &p.row.variant == variant
                        })
                        .map(|p| p.row)
                        .collect();
                    pick(&cell, &[]).map(|r| r.decode_tps).filter(|v| v.is_finite())
                })
                .collect();
            let mut label = if *load < 1000 { format!("{method} γ={}", compact(*load as f64 / 1000.0)) } else { method.clone() };
            if !variant.is_empty() {
                label.push_str(&format!(" ({variant})"));
            }
            let shade = settings.iter().take_while(|(m, l, v)| !(m == method && l == load && v == variant)).filter(|(m, _, _)| m == method).count() as u8;
            let intervals = vec![None; values.len()];
            BarSeries { method: method.clone(), label, shade, values, intervals }
        })
        .filter(|s| s.values.iter().any(Option::is_some))
        .collect();
    if series.is_empty() {
        return None;
    }
    let single_model = sorted.iter().all(|g| g.0 == sorted[0].0);
    let title_model = if single_model {
        format!("{}: ", sorted[0].0)
    } else {
        String::new()
    };
    Some(Chart::Bars(Bars {
        stem: "capped-speed".into(),
        title: format!("{title_model}decode speed under a memory cap{}", synthetic_note(&rows)),
        y_desc: "decode speed (tok/s)".into(),
        groups: sorted
            .iter()
            .map(|&(m, cap)| format!("{m} cap {} MiB", compact(mib(cap))))
            .collect(),
        series,
        value_labels: true,
    }))
}

/// `tasks`: every method's score per task at the default setting ([`at_defaults`]).
pub(super) fn tasks_chart(model: &str, rows: &[&EvalRow], d: &Defaults, suffix: &str) -> Option<Chart> {
    let chosen: Vec<&EvalRow> = rows.iter().copied().filter(|r| scored(r) && at_defaults(r, d)).collect();
    let tasks = task_order(&chosen);
    let prefer_uncapped = |r: &EvalRow| uncapped(r);
    let prefer_static = |r: &EvalRow| same(r.static_share, d.static_share.0);
    let most_examples = |task: &str| chosen.iter().filter(|r| r.task == task).map(|r| r.examples).max().unwrap_or(0);
    // One series per method and selection variant (the paper's selection first,
    // then the variants in row order, in lighter shades of the method's colour).
    let mut settings: Vec<(String, String)> = Vec::new();
    for method in methods_of(&chosen) {
        let mut variants: Vec<String> = vec![];
        for r in chosen.iter().filter(|r| r.method == method) {
            if !variants.contains(&r.variant) {
                variants.push(r.variant.clone());
            }
        }
        variants.sort_by_key(|v| !v.is_empty());
        settings.extend(variants.into_iter().map(|v| (method.clone(), v)));
    }
    let series: Vec<BarSeries> = settings
        .iter()
        .map(|(method, variant)| {
            let picked: Vec<Option<&EvalRow>> = tasks
                .iter()
                .map(|task| {
                    let cell: Vec<&EvalRow> = chosen.iter().copied().filter(|r| &r.task == task && &r.method == method && &r.variant == variant).collect();
                    pick(&cell, &[&prefer_uncapped, &prefer_static])
                })
                .collect();
            let values = picked.iter().map(|r| r.and_then(primary_score).map(|(_, s)| s)).collect();
            let intervals = picked.iter().map(|r| r.and_then(primary_interval)).collect();
            let mut label = if variant.is_empty() { method.clone() } else { format!("{method} ({variant})") };
            // A method scored on fewer examples of a task than the others (disk
            // offload, whose answers equal the reference's) says so, or its bars
            // would read as a score drop.
            if let Some(fewest) = picked.iter().flatten().filter(|r| r.examples < most_examples(&r.task)).map(|r| r.examples).min() {
                label.push_str(&format!(" ({fewest} ex.)"));
            }
            let shade = settings.iter().take_while(|(m, v)| !(m == method && v == variant)).filter(|(m, _)| m == method).count() as u8;
            BarSeries { label, shade, method: method.clone(), values, intervals }
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let groups = tasks
        .iter()
        .map(|t| match chosen.iter().find(|r| &r.task == t).and_then(|r| primary_score(r)) {
            Some((name, _)) => format!("{t} ({name})"),
            None => t.clone(),
        })
        .collect();
    Some(Chart::Bars(Bars {
        stem: format!("tasks{suffix}"),
        title: format!(
            "{model}: score per task at γ={} φ={} α={}{}",
            compact(d.load.0),
            compact(d.compute.0),
            compact(d.token_share.0),
            synthetic_note(&chosen)
        ),
        y_desc: "score (F1 / BLEU / ROUGE-L), whiskers: 95% CI".into(),
        groups,
        series,
        value_labels: true,
    }))
}
