//! Comparison charts of an experiment's rows (PNG and SVG).
//!
//! The rows of an experiment are first turned into chart descriptions ([`Chart`]:
//! plain data, titles and axis texts), then every description is drawn twice with
//! the same code, once on a bitmap and once on an SVG backend. Keeping the choice
//! of rows apart from the drawing keeps each half small and testable.
//!
//! Every method has a fixed colour and marker (by its position in [`METHODS`]), so
//! a method looks the same in every chart. Legends sit outside the plotting area,
//! on the right, so they never cover data. Text uses the bundled DejaVu Sans: the
//! machines that draw these charts have no system fonts.

use std::collections::BTreeMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::eval::bootstrap::Metric;
use crate::eval::harness::EvalRow;

/// One row with the experiment's name for its model (rows' `model` column is a file name).
pub struct PlotPoint<'a> {
    pub model: &'a str,
    pub row: &'a EvalRow,
}

/// The paper's default setting, used to pick the rows of the per-task bar chart.
pub struct Defaults {
    pub load: f64,
    pub static_share: f64,
    pub compute: f64,
    pub token_share: f64,
}

/// Writes every chart that has data; returns the files written (png and svg), sorted.
pub fn write_plots(points: &[PlotPoint], defaults: &Defaults, dir: &Path) -> Result<Vec<PathBuf>> {
    register_fonts()?;
    let charts = charts(points, defaults);
    if charts.is_empty() {
        return Ok(Vec::new());
    }
    fs::create_dir_all(dir).with_context(|| format!("creating plot directory {}", dir.display()))?;
    let mut written = Vec::new();
    for chart in &charts {
        written.extend(render(chart, dir).with_context(|| format!("drawing chart {}", chart.stem()))?);
    }
    written.sort();
    Ok(written)
}

/// The primary score of a row's task: qa F1, translate BLEU, summarize ROUGE-L.
fn primary_metric(row: &EvalRow) -> Option<Metric> {
    match row.task.as_str() {
        "qa" => Some(Metric::F1),
        "translate" => Some(Metric::Bleu),
        "summarize" => Some(Metric::RougeL),
        _ => None,
    }
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
fn primary_interval(row: &EvalRow) -> Option<(f64, f64)> {
    primary_score(row)?;
    row.interval(primary_metric(row)?).map(|iv| (iv.lo, iv.hi)).filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
}

// ---------------------------------------------------------------------------
// Methods, colours, markers
// ---------------------------------------------------------------------------

/// Every method in a fixed order: the order of legends and bars, and the index
/// into [`PALETTE`] and the marker list.
const METHODS: [&str; 10] = {
    let mut names = [""; 10];
    let mut i = 0;
    while i < names.len() {
        names[i] = super::run::METHOD_ORDER[i].name();
        i += 1;
    }
    names
};

/// Methods that use the whole (unsliced) model at full compute.
const DENSE_METHODS: [&str; 6] = ["reference", "dense-loaded", "q4_0", "q4_k_m", "q8_0", "disk-offload"];
/// Methods that compute a share phi of the neurons.
const COMPUTE_METHODS: [&str; 4] = ["selectinfer", "coreinfer", "coreinfer-loading", "random-loading"];
/// Baselines marked in the scatter charts with large markers and a text label.
const LANDMARKS: [&str; 4] = ["reference", "q4_0", "q4_k_m", "q8_0"];

/// One colour per method of [`METHODS`], then spares for methods not in it.
const PALETTE: [RGBColor; 13] = [
    RGBColor(34, 34, 34),    // reference: black
    RGBColor(31, 119, 180),  // dense-loaded: blue
    RGBColor(214, 39, 40),   // selectinfer: red
    RGBColor(44, 160, 44),   // coreinfer: green
    RGBColor(140, 86, 75),   // coreinfer-loading: brown
    RGBColor(127, 127, 127), // random-loading: grey
    RGBColor(255, 127, 14),  // q4_0: orange
    RGBColor(148, 103, 189), // q4_k_m: purple
    RGBColor(227, 119, 194), // q8_0: pink
    RGBColor(23, 190, 207),  // disk-offload: cyan
    RGBColor(188, 189, 34),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
];

/// The font every text is drawn in (registered by [`register_fonts`]).
const FONT: &str = "sans-serif";
// Even pixel sizes: plotters' ab_glyph renderer truncates half a font size when it
// places each glyph, so odd sizes set some glyphs (the decimal point) a pixel high.
const CAPTION_PX: u32 = 18;
const GROUP_PX: u32 = 16;
const TITLE_PX: u32 = 22;
const AXIS_DESC_PX: u32 = 16;
const TICK_PX: u32 = 14;
const LEGEND_PX: u32 = 14;
const NOTE_PX: u32 = 12;

/// Single-panel charts.
const CHART_SIZE: (u32, u32) = (1000, 650);
/// Two-panel sweep charts.
const PANELS_SIZE: (u32, u32) = (1300, 600);

/// Registers the bundled font under [`FONT`] once per process: plotters' ab_glyph
/// text rendering knows no fonts but registered ones.
fn register_fonts() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    static FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the bundled font assets/DejaVuSans.ttf is not a valid font"))
    }
}

/// Position of a method in [`METHODS`]; unknown methods sort after all known ones.
fn method_rank(method: &str) -> usize {
    METHODS.iter().position(|m| *m == method).unwrap_or(METHODS.len())
}

/// Sort key of methods: known ones in [`METHODS`] order, then the rest by name.
fn method_key(method: &str) -> (usize, String) {
    (method_rank(method), method.to_string())
}

/// The colour of a method; unknown methods get a spare colour derived from the name
/// so that they too keep one colour across charts.
fn method_color(method: &str) -> RGBColor {
    match METHODS.iter().position(|m| *m == method) {
        Some(i) => PALETTE[i],
        None => {
            let spare = PALETTE.len() - METHODS.len();
            let h = method.bytes().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
            PALETTE[METHODS.len() + h % spare]
        }
    }
}

/// Marker shapes (drawn as pixel polygons so that SVG and PNG look the same).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Circle,
    Square,
    TriangleUp,
    TriangleDown,
    Diamond,
    Pentagon,
    Hexagon,
    Star,
    Cross,
    Plus,
}

/// How one point of a method is drawn.
#[derive(Clone, Copy, Debug)]
struct MarkStyle {
    shape: Shape,
    color: RGBColor,
    /// Radius in pixels.
    size: i32,
}

/// The marker of a method: landmarks (reference, quantized) are larger.
fn method_mark(method: &str) -> MarkStyle {
    let shape = match method {
        "reference" => Shape::Star,
        "dense-loaded" => Shape::Circle,
        "selectinfer" => Shape::Diamond,
        "coreinfer" => Shape::TriangleUp,
        "coreinfer-loading" => Shape::TriangleDown,
        "random-loading" => Shape::Cross,
        "q4_0" => Shape::Square,
        "q4_k_m" => Shape::Pentagon,
        "q8_0" => Shape::Hexagon,
        "disk-offload" => Shape::Plus,
        _ => Shape::Circle,
    };
    let size = if LANDMARKS.contains(&method) { 9 } else { 6 };
    MarkStyle {
        shape,
        color: method_color(method),
        size,
    }
}

/// Vertices of a regular polygon of radius `r`, first vertex at angle `start` (radians).
fn regular(n: usize, r: f64, start: f64) -> Vec<(i32, i32)> {
    (0..n)
        .map(|i| {
            let a = start + i as f64 * std::f64::consts::TAU / n as f64;
            ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
        })
        .collect()
}

/// The outline of a filled shape, in pixel offsets from the point (y grows down).
fn shape_outline(shape: Shape, r: i32) -> Vec<(i32, i32)> {
    let rf = r as f64;
    let up = -std::f64::consts::FRAC_PI_2;
    match shape {
        Shape::Circle => regular(20, rf, 0.0),
        Shape::Square => {
            let s = (rf * 0.85).round() as i32;
            vec![(-s, -s), (s, -s), (s, s), (-s, s)]
        }
        Shape::TriangleUp => regular(3, rf * 1.15, up),
        Shape::TriangleDown => regular(3, rf * 1.15, -up),
        Shape::Diamond => vec![(0, -r - 1), (r, 0), (0, r + 1), (-r, 0)],
        Shape::Pentagon => regular(5, rf, up),
        Shape::Hexagon => regular(6, rf, 0.0),
        Shape::Star => {
            let outer = regular(5, rf * 1.25, up);
            let inner = regular(5, rf * 0.55, up + std::f64::consts::PI / 5.0);
            outer.into_iter().zip(inner).flat_map(|(o, i)| [o, i]).collect()
        }
        // Stroked shapes have no outline; see `draw_marker`.
        Shape::Cross | Shape::Plus => Vec::new(),
    }
}

/// Draws a marker at `at` (any coordinate system) on `area`.
fn draw_marker<DB, CT>(area: &DrawingArea<DB, CT>, at: CT::From, mark: &MarkStyle) -> Result<()>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    let r = mark.size;
    let stroke = mark.color.stroke_width(3);
    match mark.shape {
        Shape::Cross | Shape::Plus => {
            let (a, b) = if mark.shape == Shape::Cross {
                (vec![(-r, -r), (r, r)], vec![(-r, r), (r, -r)])
            } else {
                (vec![(-r - 1, 0), (r + 1, 0)], vec![(0, -r - 1), (0, r + 1)])
            };
            let e = EmptyElement::at(at) + PathElement::new(a, stroke) + PathElement::new(b, stroke);
            area.draw(&e).map_err(plot_err)
        }
        shape => {
            let outline = shape_outline(shape, r);
            let mut ring = outline.clone();
            ring.extend(outline.first().copied());
            let edge = RGBColor(255, 255, 255).mix(0.9).stroke_width(1);
            let e = EmptyElement::at(at) + Polygon::new(outline, mark.color.filled()) + PathElement::new(ring, edge);
            area.draw(&e).map_err(plot_err)
        }
    }
}

/// plotters' errors carry the backend's error type; this keeps their message.
fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e}")
}

// ---------------------------------------------------------------------------
// Chart descriptions
// ---------------------------------------------------------------------------

/// One chart to draw: its data and texts, independent of the backend.
#[derive(Debug)]
enum Chart {
    Scatter(Scatter),
    Panels(Panels),
    Bars(Bars),
}

/// Points of several methods on two numeric axes.
#[derive(Debug)]
struct Scatter {
    stem: String,
    title: String,
    x_desc: String,
    y_desc: String,
    series: Vec<Series>,
}

/// One method's points in a scatter chart.
#[derive(Debug)]
struct Series {
    method: String,
    points: Vec<(f64, f64)>,
}

/// Two side-by-side panels that share an x axis and a set of lines.
#[derive(Debug)]
struct Panels {
    stem: String,
    title: String,
    x_desc: String,
    left: PanelAxis,
    /// The second panel (None: the score panel alone, full width).
    right: Option<PanelAxis>,
    lines: Vec<SweepLine>,
    /// Score of the reference model, drawn as a dashed line in the left panel.
    reference: Option<f64>,
}

/// The y axis of one panel.
#[derive(Debug)]
struct PanelAxis {
    caption: String,
    desc: String,
    /// Scores start at zero; measurements are padded around their data.
    from_zero: bool,
}

/// One point of a sweep line.
#[derive(Debug, Clone, Copy)]
struct SweepPoint {
    x: f64,
    /// The score (left panel), if the row has one.
    score: Option<f64>,
    /// Its 95% interval, if the row has one.
    interval: Option<(f64, f64)>,
    /// The right panel's value.
    right: f64,
}

/// One line of a sweep, sorted by x.
#[derive(Debug)]
struct SweepLine {
    method: String,
    label: String,
    /// Index among the lines of the same method: picks a dashed style for odd ones.
    variant: usize,
    points: Vec<SweepPoint>,
}

/// Grouped bars: one group per label, one bar per series.
#[derive(Debug)]
struct Bars {
    stem: String,
    title: String,
    y_desc: String,
    groups: Vec<String>,
    series: Vec<BarSeries>,
    /// Print each bar's value on top of it (when the text fits above the bar).
    value_labels: bool,
}

/// One method's bars, one value per group (None: no bar there).
#[derive(Debug)]
struct BarSeries {
    method: String,
    /// Legend text: the method, plus gamma where one method has several settings.
    label: String,
    /// 0 for a method's first setting; later settings get lighter shades.
    shade: u8,
    values: Vec<Option<f64>>,
    /// 95% interval of each value, drawn as a whisker (None: no whisker).
    intervals: Vec<Option<(f64, f64)>>,
}

impl BarSeries {
    /// The method's colour, mixed with white for its later settings.
    fn color(&self) -> RGBColor {
        let RGBColor(r, g, b) = method_color(&self.method);
        let t = (0.45 * f64::from(self.shade)).min(0.8);
        let mix = |c: u8| (f64::from(c) + (255.0 - f64::from(c)) * t).round() as u8;
        RGBColor(mix(r), mix(g), mix(b))
    }
}

impl Chart {
    fn stem(&self) -> &str {
        match self {
            Chart::Scatter(c) => &c.stem,
            Chart::Panels(c) => &c.stem,
            Chart::Bars(c) => &c.stem,
        }
    }

    fn title(&self) -> &str {
        match self {
            Chart::Scatter(c) => &c.title,
            Chart::Panels(c) => &c.title,
            Chart::Bars(c) => &c.title,
        }
    }

    fn size(&self) -> (u32, u32) {
        match self {
            Chart::Panels(c) if c.right.is_some() => PANELS_SIZE,
            _ => CHART_SIZE,
        }
    }

    /// The legend: one entry per method (scatter, bars) or per line (sweeps).
    fn legend(&self) -> Vec<LegendEntry> {
        match self {
            Chart::Scatter(c) => c
                .series
                .iter()
                .map(|s| LegendEntry {
                    label: s.method.clone(),
                    key: LegendKey::Marker(method_mark(&s.method)),
                })
                .collect(),
            Chart::Panels(c) => {
                let mut v: Vec<LegendEntry> = c
                    .lines
                    .iter()
                    .map(|l| LegendEntry {
                        label: l.label.clone(),
                        key: LegendKey::Line(method_mark(&l.method), l.variant % 2 == 1),
                    })
                    .collect();
                if c.reference.is_some() {
                    v.push(LegendEntry {
                        label: "reference (dense)".into(),
                        key: LegendKey::Reference,
                    });
                }
                v
            }
            Chart::Bars(c) => c
                .series
                .iter()
                .map(|s| LegendEntry {
                    label: s.label.clone(),
                    key: LegendKey::Bar(s.color()),
                })
                .collect(),
        }
    }
}

/// One legend line.
#[derive(Debug)]
struct LegendEntry {
    label: String,
    key: LegendKey,
}

/// What a legend line shows before its text.
#[derive(Debug)]
enum LegendKey {
    Marker(MarkStyle),
    /// A line with a marker; dashed when true.
    Line(MarkStyle, bool),
    Bar(RGBColor),
    /// The dashed reference score line.
    Reference,
}

// ---------------------------------------------------------------------------
// Choosing rows
// ---------------------------------------------------------------------------

/// Float settings (gamma, phi, ...) compare equal within this.
const EPS: f64 = 1e-6;

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() < EPS
}

fn same_opt(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| same(a, b))
}

/// A setting as a map key (floats are not `Ord`).
fn float_key(v: f64) -> i64 {
    (v / EPS).round() as i64
}

const MIB: f64 = 1024.0 * 1024.0;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB
}

fn scored(row: &EvalRow) -> bool {
    primary_score(row).is_some()
}

fn uncapped(row: &EvalRow) -> bool {
    row.mem_cap_bytes.is_none()
}

/// The last of `rows` after narrowing by each preference in turn, where a
/// preference that would leave nothing is skipped: when several runs of one
/// setting exist, the one closest to the defaults (then the latest) is shown.
fn pick<'a>(rows: &[&'a EvalRow], prefs: &[&dyn Fn(&EvalRow) -> bool]) -> Option<&'a EvalRow> {
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
fn task_order(rows: &[&EvalRow]) -> Vec<String> {
    let known = ["qa", "translate", "summarize"];
    let mut tasks: Vec<String> = Vec::new();
    for r in rows {
        if !tasks.contains(&r.task) {
            tasks.push(r.task.clone());
        }
    }
    tasks.sort_by_key(|t| (known.iter().position(|k| k == t).unwrap_or(known.len()), t.clone()));
    tasks
}

/// Methods present in `rows`, in legend order.
fn methods_of(rows: &[&EvalRow]) -> Vec<String> {
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
fn synthetic_note(rows: &[&EvalRow]) -> &'static str {
    if rows.iter().any(|r| r.synthetic) {
        " (synthetic weights)"
    } else {
        ""
    }
}

/// A model name usable in a file name: characters outside [A-Za-z0-9._-] become `_`.
fn sanitize(name: &str) -> String {
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
fn score_desc(name: &str) -> String {
    match name {
        "F1" => "F1 (%)".into(),
        "ROUGE-L" => "ROUGE-L F (%)".into(),
        "BLEU" => "BLEU (0-100)".into(),
        other => other.to_string(),
    }
}

/// A share (gamma, phi) or measurement written compactly: `0.7`, `1`, `96.5`.
fn compact(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Every chart with data, in file-name order. Charts are drawn per model (stems
/// get `-{model}` when the rows cover several models), except `capped-speed`,
/// whose groups already name the model.
fn charts(points: &[PlotPoint], defaults: &Defaults) -> Vec<Chart> {
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
            out.extend(gamma_sweep(model, &task, &task_rows, &suffix));
            out.extend(phi_sweep(model, &task, &task_rows, &suffix));
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
    let (score_name, _) = primary_score(rows.first()?)?;
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
        title: format!("{model} {task}: {score_name} vs {what}{}", synthetic_note(&rows)),
        x_desc: x_desc.into(),
        y_desc: score_desc(score_name),
        series,
    }))
}

/// One sweep line's points, one per x setting (the last run of a setting wins).
fn sweep_points(rows: &[&EvalRow], x: impl Fn(&EvalRow) -> f64, right: impl Fn(&EvalRow) -> f64) -> Vec<SweepPoint> {
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
fn sweep_lines(
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
fn reference_score(rows: &[&EvalRow]) -> Option<f64> {
    let refs: Vec<&EvalRow> = rows
        .iter()
        .copied()
        .filter(|r| r.method == "reference" && scored(r) && uncapped(r))
        .collect();
    pick(&refs, &[]).and_then(primary_score).map(|(_, s)| s)
}

/// `gamma-sweep-{task}`: dense-loaded and selectinfer over load gamma; score and
/// weight memory side by side, one line per (method, phi).
fn gamma_sweep(model: &str, task: &str, rows: &[&EvalRow], suffix: &str) -> Option<Chart> {
    let sweep: Vec<&EvalRow> = rows
        .iter()
        .copied()
        .filter(|r| matches!(r.method.as_str(), "dense-loaded" | "selectinfer") && scored(r) && uncapped(r))
        .collect();
    let (score_name, _) = primary_score(sweep.first()?)?;
    let lines = sweep_lines(&sweep, |r| r.compute, "φ", |r| r.load, |r| mib(r.weight_bytes))?;
    Some(Chart::Panels(Panels {
        stem: format!("gamma-sweep-{task}{suffix}"),
        title: format!("{model} {task}: {score_name} and weight memory vs load γ{}", synthetic_note(&sweep)),
        x_desc: "load γ (share of FFN neurons kept)".into(),
        left: PanelAxis {
            caption: score_name.into(),
            desc: score_desc(score_name),
            from_zero: true,
        },
        right: Some(PanelAxis {
            caption: "weight memory".into(),
            desc: "weight memory (MiB)".into(),
            from_zero: false,
        }),
        lines,
        reference: reference_score(rows),
    }))
}

/// `phi-sweep-{task}`: selectinfer and coreinfer over compute phi, one line per
/// (method, gamma). Score only: the rows' decode speeds come from cells run at
/// different times (`selectinfer bench` compares phi round-robin).
fn phi_sweep(model: &str, task: &str, rows: &[&EvalRow], suffix: &str) -> Option<Chart> {
    let sweep: Vec<&EvalRow> = rows
        .iter()
        .copied()
        .filter(|r| matches!(r.method.as_str(), "selectinfer" | "coreinfer") && r.compute.is_some() && scored(r) && uncapped(r))
        .collect();
    let (score_name, _) = primary_score(sweep.first()?)?;
    let lines = sweep_lines(&sweep, |r| Some(r.load), "γ", |r| r.compute.unwrap_or(f64::NAN), |_| f64::NAN)?;
    Some(Chart::Panels(Panels {
        stem: format!("phi-sweep-{task}{suffix}"),
        title: format!("{model} {task}: {score_name} vs compute φ{}", synthetic_note(&sweep)),
        x_desc: "compute φ (share of FFN neurons computed)".into(),
        left: PanelAxis {
            caption: score_name.into(),
            desc: score_desc(score_name),
            from_zero: true,
        },
        right: None,
        lines,
        reference: reference_score(rows),
    }))
}

/// `capped-speed`: decode speed of every method under each memory cap, one group
/// per (model, cap).
fn capped_speed(points: &[PlotPoint]) -> Option<Chart> {
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
    // One bar per method and load: a cap is where gamma decides whether a model fits.
    let mut settings: Vec<(String, u64)> = Vec::new();
    for method in methods_of(&rows) {
        let mut loads: Vec<u64> = rows.iter().filter(|r| r.method == method).map(|r| (r.load * 1000.0).round() as u64).collect();
        loads.sort();
        loads.dedup();
        settings.extend(loads.into_iter().map(|l| (method.clone(), l)));
    }
    let series: Vec<BarSeries> = settings
        .iter()
        .map(|(method, load)| {
            let values: Vec<Option<f64>> = sorted
                .iter()
                .map(|&(model, cap)| {
                    let cell: Vec<&EvalRow> = capped
                        .iter()
                        .filter(|p| p.model == model && p.row.mem_cap_bytes == Some(cap) && &p.row.method == method && (p.row.load * 1000.0).round() as u64 == *load)
                        .map(|p| p.row)
                        .collect();
                    pick(&cell, &[]).map(|r| r.decode_tps).filter(|v| v.is_finite())
                })
                .collect();
            let label = if *load < 1000 { format!("{method} γ={}", compact(*load as f64 / 1000.0)) } else { method.clone() };
            let shade = settings.iter().take_while(|(m, l)| !(m == method && l == load)).filter(|(m, _)| m == method).count() as u8;
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

/// Whether a row is the default setting of its method (see [`Defaults`]).
fn at_defaults(row: &EvalRow, d: &Defaults) -> bool {
    let m = row.method.as_str();
    let unsliced = same(row.load, 1.0);
    if DENSE_METHODS.contains(&m) {
        if row.compute.is_some() {
            return false;
        }
        return match m {
            "dense-loaded" => same(row.load, d.load),
            _ => unsliced || same(row.load, d.load),
        };
    }
    if COMPUTE_METHODS.contains(&m) {
        let load_ok = if m == "coreinfer" { unsliced } else { same(row.load, d.load) };
        return load_ok && same_opt(row.compute, d.compute) && same_opt(row.token_share, d.token_share);
    }
    false
}

/// `tasks`: every method's score per task at the default setting.
fn tasks_chart(model: &str, rows: &[&EvalRow], d: &Defaults, suffix: &str) -> Option<Chart> {
    let chosen: Vec<&EvalRow> = rows.iter().copied().filter(|r| scored(r) && at_defaults(r, d)).collect();
    let tasks = task_order(&chosen);
    let prefer_uncapped = |r: &EvalRow| uncapped(r);
    let prefer_static = |r: &EvalRow| same(r.static_share, d.static_share);
    let most_examples = chosen.iter().map(|r| r.examples).max().unwrap_or(0);
    let series: Vec<BarSeries> = methods_of(&chosen)
        .into_iter()
        .map(|method| {
            let picked: Vec<Option<&EvalRow>> = tasks
                .iter()
                .map(|task| {
                    let cell: Vec<&EvalRow> = chosen.iter().copied().filter(|r| &r.task == task && r.method == method).collect();
                    pick(&cell, &[&prefer_uncapped, &prefer_static])
                })
                .collect();
            let values = picked.iter().map(|r| r.and_then(primary_score).map(|(_, s)| s)).collect();
            let intervals = picked.iter().map(|r| r.and_then(primary_interval)).collect();
            // A method scored on fewer examples (disk offload, whose answers equal
            // the reference's) says so, or its bars would read as a score drop.
            let fewest = picked.iter().flatten().map(|r| r.examples).min().unwrap_or(most_examples);
            let label = if fewest < most_examples { format!("{method} ({fewest} ex.)") } else { method.clone() };
            BarSeries { label, shade: 0, method, values, intervals }
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
            compact(d.load),
            compact(d.compute),
            compact(d.token_share),
            synthetic_note(&chosen)
        ),
        y_desc: "score (F1 / BLEU / ROUGE-L), whiskers: 95% CI".into(),
        groups,
        series,
        value_labels: true,
    }))
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// Draws a chart as `<stem>.png` and `<stem>.svg` in `dir`.
fn render(chart: &Chart, dir: &Path) -> Result<Vec<PathBuf>> {
    let png = dir.join(format!("{}.png", chart.stem()));
    let svg = dir.join(format!("{}.svg", chart.stem()));
    write_png(chart, &png)?;
    write_svg(chart, &svg)?;
    Ok(vec![png, svg])
}

/// The bitmap backend picks its encoder from the file extension, so the temporary
/// name must still end in `.png`.
fn png_temp_path(target: &Path) -> PathBuf {
    let mut name = crate::fsutil::temp_path(target).into_os_string();
    name.push(".png");
    name.into()
}

/// Draws into a temporary PNG and renames it over `target` once complete.
fn write_png(chart: &Chart, target: &Path) -> Result<()> {
    let tmp = png_temp_path(target);
    let drawn = (|| -> Result<()> {
        let root = BitMapBackend::new(&tmp, chart.size()).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(plot_err)
    })();
    let done = drawn.and_then(|()| fs::rename(&tmp, target).with_context(|| format!("renaming {} to {}", tmp.display(), target.display())));
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    done.with_context(|| format!("writing {}", target.display()))
}

/// Draws into memory and writes the SVG atomically.
fn write_svg(chart: &Chart, target: &Path) -> Result<()> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, chart.size()).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(plot_err)?;
    }
    crate::fsutil::write_atomic(target, text.as_bytes()).with_context(|| format!("writing {}", target.display()))
}

// ---------------------------------------------------------------------------
// Drawing
// ---------------------------------------------------------------------------

type Area<DB> = DrawingArea<DB, Shift>;
type XY = Cartesian2d<RangedCoordf64, RangedCoordf64>;

fn font(px: u32) -> TextStyle<'static> {
    (FONT, px).into_font().color(&BLACK)
}

/// Draws the whole chart: white page, title, plot(s), and the legend on the right.
fn draw<DB: DrawingBackend>(root: &Area<DB>, chart: &Chart) -> Result<()> {
    root.fill(&WHITE).map_err(plot_err)?;
    let body = root.titled(chart.title(), font(TITLE_PX)).map_err(plot_err)?;
    let legend = chart.legend();
    let legend_w = legend_width(root, &legend)?;
    let (w, _) = body.dim_in_pixel();
    let (plot, legend_area) = body.split_horizontally(w.saturating_sub(legend_w));
    let legend_top = match chart {
        Chart::Scatter(c) => draw_scatter(&plot, c)?,
        Chart::Panels(c) => draw_panels(&plot, c)?,
        Chart::Bars(c) => draw_bars(&plot, c)?,
    };
    draw_legend(&legend_area, &legend, legend_top)
}

/// Light grey grid, compact ticks, axis descriptions: the same look for every plot.
fn style_mesh<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, XY>,
    x_desc: &str,
    y_desc: &str,
    x_range: &Range<f64>,
    y_range: &Range<f64>,
) -> Result<()> {
    let fx = tick_formatter(x_range);
    let fy = tick_formatter(y_range);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(TICK_PX))
        .x_labels(9)
        .y_labels(8)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.mix(0.6))
        .draw()
        .map_err(plot_err)
}

/// Tick labels with as many decimals as the tick spacing needs (`0.35`, `120`).
fn tick_formatter(range: &Range<f64>) -> impl Fn(&f64) -> String {
    let step = (range.end - range.start).abs() / 8.0;
    let decimals = if step >= 1.0 || step <= 0.0 {
        0
    } else {
        (-step.log10()).ceil().clamp(0.0, 6.0) as usize
    };
    move |v: &f64| {
        let s = format!("{v:.decimals$}");
        if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
            s[1..].to_string()
        } else {
            s
        }
    }
}

/// The data span padded by 7% each side (or a small window around a single value).
fn padded(values: impl IntoIterator<Item = f64>, from_zero: bool) -> Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let span = hi - lo;
    let pad = if span > 0.0 { span * 0.07 } else { (hi.abs() * 0.1).max(0.5) };
    let start = if from_zero && lo >= 0.0 { 0.0 } else { lo - pad };
    start..hi + pad
}

/// `padded`, with the top extended so text above the highest point/bar fits.
fn padded_top(values: impl IntoIterator<Item = f64>, extra: f64) -> Range<f64> {
    let r = padded(values, true);
    r.start..r.end + (r.end - r.start) * extra
}

/// A rectangle in backend pixels, for placing text away from markers and text.
#[derive(Clone, Copy, Debug)]
struct Boxed {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Boxed {
    fn around((x, y): (i32, i32), r: i32) -> Boxed {
        Boxed {
            x0: x - r,
            y0: y - r,
            x1: x + r,
            y1: y + r,
        }
    }
    fn overlap(&self, o: &Boxed) -> i64 {
        let w = (self.x1.min(o.x1) - self.x0.max(o.x0)).max(0) as i64;
        let h = (self.y1.min(o.y1) - self.y0.max(o.y0)).max(0) as i64;
        w * h
    }
    /// Area of `self` outside `bounds`.
    fn outside(&self, bounds: &Boxed) -> i64 {
        let area = ((self.x1 - self.x0) as i64) * ((self.y1 - self.y0) as i64);
        area - self.overlap(bounds)
    }
}

/// Draws the scatter plot; returns the pixel row where the legend should start.
fn draw_scatter<DB: DrawingBackend>(area: &Area<DB>, c: &Scatter) -> Result<i32> {
    let all = c.series.iter().flat_map(|s| s.points.iter());
    let x_range = padded(all.clone().map(|p| p.0), false);
    let y_range = padded_top(all.map(|p| p.1), 0.04);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(58)
        .y_label_area_size(68)
        .build_cartesian_2d(x_range.clone(), y_range.clone())
        .map_err(plot_err)?;
    style_mesh(&mut chart, &c.x_desc, &c.y_desc, &x_range, &y_range)?;
    // Landmarks last so they sit on top of the crowd.
    let mut order: Vec<&Series> = c.series.iter().collect();
    order.sort_by_key(|s| LANDMARKS.contains(&s.method.as_str()));
    for s in &order {
        let mark = method_mark(&s.method);
        for &p in &s.points {
            draw_marker(chart.plotting_area(), p, &mark)?;
        }
    }
    label_landmarks(area, &chart, c)?;
    Ok(12)
}

/// Writes the method name next to each reference/quantized point, choosing for each
/// label the side where it covers the fewest markers and earlier labels.
fn label_landmarks<DB: DrawingBackend>(area: &Area<DB>, chart: &ChartContext<DB, XY>, c: &Scatter) -> Result<()> {
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let bounds = Boxed {
        x0: xs.start,
        y0: ys.start,
        x1: xs.end,
        y1: ys.end,
    };
    let mut taken: Vec<Boxed> = c
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(move |p| Boxed::around(chart.backend_coord(p), method_mark(&s.method).size + 2))
        })
        .collect();
    let style = font(NOTE_PX);
    for s in c.series.iter().filter(|s| LANDMARKS.contains(&s.method.as_str())) {
        let mark = method_mark(&s.method);
        // Stars reach 1.25 times their size.
        let gap = mark.size * 5 / 4 + 4;
        for p in &s.points {
            let (w, h) = area.estimate_text_size(&s.method, &style).map_err(plot_err)?;
            let (w, h) = (w as i32, h as i32);
            let (px, py) = chart.backend_coord(p);
            let candidates = [
                (px + gap, py - h / 2),
                (px - gap - w, py - h / 2),
                (px - w / 2, py - gap - h),
                (px - w / 2, py + gap),
                (px + gap, py - gap - h),
                (px + gap, py + gap),
                (px - gap - w, py - gap - h),
                (px - gap - w, py + gap),
            ];
            let cost = |&(x, y): &(i32, i32)| {
                let b = Boxed {
                    x0: x,
                    y0: y,
                    x1: x + w,
                    y1: y + h,
                };
                taken.iter().map(|t| t.overlap(&b)).sum::<i64>() + 10 * b.outside(&bounds)
            };
            let Some(&(x, y)) = candidates.iter().min_by_key(|c| cost(c)) else {
                continue;
            };
            taken.push(Boxed {
                x0: x,
                y0: y,
                x1: x + w,
                y1: y + h,
            });
            let text = Text::new(s.method.clone(), (x - px, y - py), style.pos(Pos::new(HPos::Left, VPos::Top)));
            chart.plotting_area().draw(&(EmptyElement::at(*p) + text)).map_err(plot_err)?;
        }
    }
    Ok(())
}

/// Draws the sweep panels (score, and the second one if any); returns the pixel
/// row where the legend should start.
fn draw_panels<DB: DrawingBackend>(area: &Area<DB>, c: &Panels) -> Result<i32> {
    let halves = if c.right.is_some() { area.split_evenly((1, 2)) } else { vec![area.clone()] };
    let xs = || c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x));
    let x_range = padded(xs(), false);
    let left_values: Vec<f64> = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().flat_map(|p| p.score.into_iter().chain(p.interval.map(|i| i.1))))
        .chain(c.reference)
        .collect();
    let right_values: Vec<f64> = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.right)).collect();
    let mut panels = vec![(&c.left, left_values)];
    if let Some(right) = &c.right {
        panels.push((right, right_values));
    }
    for (half, (axis, values)) in halves.iter().zip(panels) {
        let y_range = if axis.from_zero {
            padded_top(values, 0.03)
        } else {
            padded(values, false)
        };
        let mut chart = ChartBuilder::on(half)
            .margin(10)
            .margin_right(22)
            .caption(&axis.caption, font(CAPTION_PX))
            .x_label_area_size(58)
            .y_label_area_size(68)
            .build_cartesian_2d(x_range.clone(), y_range.clone())
            .map_err(plot_err)?;
        style_mesh(&mut chart, &c.x_desc, &axis.desc, &x_range, &y_range)?;
        let left = std::ptr::eq(axis, &c.left);
        if left {
            if let Some(r) = c.reference {
                let style = method_color("reference").stroke_width(2);
                let series = DashedLineSeries::new([(x_range.start, r), (x_range.end, r)], 8, 6, style);
                chart.draw_series(series).map_err(plot_err)?;
            }
        }
        if left {
            // Whiskers of lines that share an x are spread a little sideways.
            let span = x_range.end - x_range.start;
            let mid = (c.lines.len() as f64 - 1.0) / 2.0;
            for (i, line) in c.lines.iter().enumerate() {
                let color = method_color(&line.method);
                let dodge = (i as f64 - mid) * span * 0.008;
                for p in &line.points {
                    if let Some((lo, hi)) = p.interval {
                        draw_whisker(&mut chart, p.x + dodge, lo, hi, span * 0.006, color)?;
                    }
                }
            }
        }
        for (i, line) in c.lines.iter().enumerate() {
            let pts: Vec<(f64, f64)> = line
                .points
                .iter()
                .filter_map(|p| if left { p.score.map(|s| (p.x, s)) } else { Some((p.x, p.right)) })
                .collect();
            // Lines drawn earlier get larger markers, so a line hidden under a later one
            // (equal weight memory of dense-loaded and selectinfer) still shows as rims.
            let under = (c.lines.len() - 1 - i).min(1) as u32;
            draw_line(&mut chart, line, &pts, under)?;
        }
    }
    let (_, caption_h) = area.estimate_text_size("Ag", &font(CAPTION_PX)).map_err(plot_err)?;
    Ok(10 + caption_h as i32 + 8)
}

/// A 95% interval as a vertical line from `lo` to `hi` at `x` with end caps
/// `half_w` wide (in x units).
fn draw_whisker<DB: DrawingBackend>(chart: &mut ChartContext<DB, XY>, x: f64, lo: f64, hi: f64, half_w: f64, color: RGBColor) -> Result<()> {
    let style = color.mix(0.8).stroke_width(2);
    let segments = [vec![(x, lo), (x, hi)], vec![(x - half_w, lo), (x + half_w, lo)], vec![(x - half_w, hi), (x + half_w, hi)]];
    chart.draw_series(segments.into_iter().map(|pts| PathElement::new(pts, style))).map_err(plot_err)?;
    Ok(())
}

/// One sweep line: solid (or dashed for a method's second, fourth... line) with
/// markers; `widen` makes the markers 3 px larger per step.
fn draw_line<DB: DrawingBackend>(chart: &mut ChartContext<DB, XY>, line: &SweepLine, pts: &[(f64, f64)], widen: u32) -> Result<()> {
    let base = method_mark(&line.method);
    let mark = MarkStyle {
        size: base.size + 3 * widen as i32,
        ..base
    };
    let style = mark.color.stroke_width(2);
    if pts.len() >= 2 {
        if line.variant % 2 == 1 {
            chart
                .draw_series(DashedLineSeries::new(pts.iter().copied(), 10, 5, style))
                .map_err(plot_err)?;
        } else {
            chart.draw_series(LineSeries::new(pts.iter().copied(), style)).map_err(plot_err)?;
        }
    }
    for &p in pts {
        draw_marker(chart.plotting_area(), p, &mark)?;
    }
    Ok(())
}

/// Draws grouped bars; returns the pixel row where the legend should start.
fn draw_bars<DB: DrawingBackend>(area: &Area<DB>, c: &Bars) -> Result<i32> {
    let n_groups = c.groups.len().max(1);
    let values = c.series.iter().flat_map(|s| s.values.iter().flatten().copied().chain(s.intervals.iter().flatten().map(|i| i.1)));
    let y_range = padded_top(values, 0.05);
    let x_range = 0.0..n_groups as f64;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(50)
        .y_label_area_size(68)
        .build_cartesian_2d(x_range.clone(), y_range.clone())
        .map_err(plot_err)?;
    let fy = tick_formatter(&y_range);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(&c.y_desc)
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(TICK_PX))
        .y_labels(8)
        .y_label_formatter(&fy)
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.mix(0.6))
        .draw()
        .map_err(plot_err)?;
    // Group names under the group centres (plotters' numeric axis puts its own
    // ticks elsewhere), wrapped onto several lines when wider than their group.
    let group_px = {
        let (xs, _) = chart.plotting_area().get_pixel_range();
        (xs.end - xs.start) as f64 / n_groups as f64
    };
    let label_style = font(GROUP_PX).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, name) in c.groups.iter().enumerate() {
        for (li, line) in wrap(area, name, group_px - 10.0, &label_style)?.into_iter().enumerate() {
            let text = Text::new(line, (0, 10 + li as i32 * (GROUP_PX as i32 + 2)), label_style.clone());
            chart
                .plotting_area()
                .draw(&(EmptyElement::at((i as f64 + 0.5, y_range.start)) + text))
                .map_err(plot_err)?;
        }
    }
    // Every group reserves a slot for every series so a method sits in the same
    // place in each group; bars are at most MAX_BAR_PX wide so few bars stay bars.
    let slots = c.series.len().max(1) as f64;
    let inner = (0.8f64).min(slots * MAX_BAR_PX / group_px.max(1.0));
    let slot_w = inner / slots;
    let bar_px = group_px * slot_w;
    let decimals = bar_decimals(c);
    let value_style = font(NOTE_PX).pos(Pos::new(HPos::Center, VPos::Bottom));
    let fits = c.value_labels && value_labels_fit(area, c, bar_px, decimals, &value_style)?;
    for (si, s) in c.series.iter().enumerate() {
        let color = s.color();
        for (gi, v) in s.values.iter().enumerate() {
            let Some(v) = *v else { continue };
            let x0 = gi as f64 + (1.0 - inner) / 2.0 + si as f64 * slot_w;
            let x1 = x0 + slot_w;
            let gap = slot_w * 0.08;
            let bar = Rectangle::new([(x0 + gap, 0.0), (x1 - gap, v)], color.filled());
            chart.plotting_area().draw(&bar).map_err(plot_err)?;
            let interval = s.intervals.get(gi).copied().flatten();
            if let Some((lo, hi)) = interval {
                draw_whisker(&mut chart, (x0 + x1) / 2.0, lo, hi, slot_w * 0.18, RGBColor(0, 0, 0))?;
            }
            if fits {
                // Above the whisker where there is one.
                let top = interval.map_or(v, |(_, hi)| hi.max(v));
                let text = Text::new(format!("{v:.decimals$}"), (0, -3), value_style.clone());
                chart
                    .plotting_area()
                    .draw(&(EmptyElement::at(((x0 + x1) / 2.0, top)) + text))
                    .map_err(plot_err)?;
            }
        }
    }
    Ok(12)
}

/// Splits `text` at spaces into lines no wider than `max_px` (a single word may be wider).
fn wrap<DB: DrawingBackend>(area: &Area<DB>, text: &str, max_px: f64, style: &TextStyle) -> Result<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        if let Some(last) = lines.last_mut() {
            let joined = format!("{last} {word}");
            if area.estimate_text_size(&joined, style).map_err(plot_err)?.0 as f64 <= max_px {
                *last = joined;
                continue;
            }
        }
        lines.push(word.to_string());
    }
    Ok(lines)
}

/// Widest bar in pixels.
const MAX_BAR_PX: f64 = 90.0;

/// Decimals of the value labels, one count for the whole chart so that labels
/// line up: about three significant digits of the largest value.
fn bar_decimals(c: &Bars) -> usize {
    let max = c
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    if max >= 100.0 {
        0
    } else if max >= 10.0 {
        1
    } else {
        2
    }
}

/// Whether every value label is narrower than its bar (crowded charts skip them).
fn value_labels_fit<DB: DrawingBackend>(area: &Area<DB>, c: &Bars, bar_px: f64, decimals: usize, style: &TextStyle) -> Result<bool> {
    for v in c.series.iter().flat_map(|s| s.values.iter().flatten()) {
        let (w, _) = area.estimate_text_size(&format!("{v:.decimals$}"), style).map_err(plot_err)?;
        if w as f64 > bar_px + 6.0 {
            return Ok(false);
        }
    }
    Ok(true)
}

const LEGEND_ROW: i32 = 24;
const LEGEND_KEY_W: i32 = 34;
const LEGEND_PAD: i32 = 10;

/// Width of the legend column: the longest label plus its key and padding.
fn legend_width<DB: DrawingBackend>(root: &Area<DB>, legend: &[LegendEntry]) -> Result<u32> {
    let mut widest = 0;
    for e in legend {
        widest = widest.max(root.estimate_text_size(&e.label, &font(LEGEND_PX)).map_err(plot_err)?.0);
    }
    Ok(widest + (LEGEND_KEY_W + 3 * LEGEND_PAD) as u32 + 14)
}

/// Draws the legend box at the top of its column, beside the plot.
fn draw_legend<DB: DrawingBackend>(area: &Area<DB>, legend: &[LegendEntry], top: i32) -> Result<()> {
    if legend.is_empty() {
        return Ok(());
    }
    let (w, _) = area.dim_in_pixel();
    let (x0, x1) = (0, w as i32 - 14);
    let y1 = top + 2 * LEGEND_PAD + LEGEND_ROW * legend.len() as i32 - 4;
    area.draw(&Rectangle::new([(x0, top), (x1, y1)], WHITE.filled()))
        .map_err(plot_err)?;
    area.draw(&Rectangle::new([(x0, top), (x1, y1)], BLACK.mix(0.35).stroke_width(1)))
        .map_err(plot_err)?;
    let text_style = font(LEGEND_PX).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, e) in legend.iter().enumerate() {
        let y = top + LEGEND_PAD + LEGEND_ROW * i as i32 + LEGEND_ROW / 2 - 2;
        let kx = x0 + LEGEND_PAD + LEGEND_KEY_W / 2;
        draw_legend_key(area, &e.key, (kx, y))?;
        area.draw(&Text::new(
            e.label.clone(),
            (x0 + 2 * LEGEND_PAD + LEGEND_KEY_W, y),
            text_style.clone(),
        ))
        .map_err(plot_err)?;
    }
    Ok(())
}

/// The key of one legend line, centred at `(x, y)`.
fn draw_legend_key<DB: DrawingBackend>(area: &Area<DB>, key: &LegendKey, (x, y): (i32, i32)) -> Result<()> {
    let half = LEGEND_KEY_W / 2;
    match key {
        LegendKey::Marker(mark) => draw_marker(area, (x, y), mark),
        LegendKey::Line(mark, dashed) => {
            let style = mark.color.stroke_width(2);
            let ends = [(x - half, y), (x + half, y)];
            if *dashed {
                area.draw(&DashedPathElement::new(ends, 7, 4, style)).map_err(plot_err)?;
            } else {
                area.draw(&PathElement::new(ends.to_vec(), style)).map_err(plot_err)?;
            }
            draw_marker(
                area,
                (x, y),
                &MarkStyle {
                    size: mark.size.min(7),
                    ..*mark
                },
            )
        }
        LegendKey::Bar(color) => area
            .draw(&Rectangle::new([(x - 9, y - 7), (x + 9, y + 7)], color.filled()))
            .map_err(plot_err),
        LegendKey::Reference => {
            let style = method_color("reference").stroke_width(2);
            area.draw(&DashedPathElement::new([(x - half, y), (x + half, y)], 7, 4, style))
                .map_err(plot_err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scored (or speed-only) row with the settings that matter to the charts.
    #[allow(clippy::too_many_arguments)]
    fn row(
        method: &str,
        task: &str,
        load: f64,
        compute: Option<f64>,
        score: Option<f64>,
        decode: f64,
        weight_mib: f64,
        cap_mib: Option<f64>,
    ) -> EvalRow {
        let metric = |t: &str| if task == t { score } else { None };
        let sliced = matches!(method, "dense-loaded" | "selectinfer" | "random-loading");
        let mut r = EvalRow {
            timestamp: "2024-01-01T00:00:00Z".into(),
            git_commit: "unknown".into(),
            machine: "test".into(),
            model: "SmolLM2-135M-Instruct.F16.gguf".into(),
            method: method.into(),
            task: task.into(),
            data: format!("{task}.jsonl"),
            examples: 50,
            shots: 1,
            template_version: "1".into(),
            load,
            static_share: if sliced { 0.3 } else { 0.0 },
            compute,
            token_share: compute.map(|_| 0.5),
            em: metric("qa").map(|f| f - 10.0),
            em_lo: None,
            em_hi: None,
            f1: metric("qa"),
            f1_lo: None,
            f1_hi: None,
            bleu: metric("translate"),
            bleu_lo: None,
            bleu_hi: None,
            chrf: metric("translate").map(|b| b + 20.0),
            chrf_lo: None,
            chrf_hi: None,
            rouge1: metric("summarize").map(|r| r + 5.0),
            rouge1_lo: None,
            rouge1_hi: None,
            rouge2: metric("summarize").map(|r| r - 8.0),
            rouge2_lo: None,
            rouge2_hi: None,
            rouge_l: metric("summarize"),
            rouge_l_lo: None,
            rouge_l_hi: None,
            prefill_tps: decode * 8.0,
            decode_tps: decode,
            select_ms: compute.map(|_| 1.5),
            weight_bytes: (weight_mib * MIB) as u64,
            peak_rss_bytes: (weight_mib * MIB * 1.2) as u64,
            major_faults: 0,
            wall_s: 30.0,
            mem_cap_bytes: cap_mib.map(|c| (c * MIB) as u64),
            cap_max_usage_bytes: cap_mib.map(|c| (c * MIB) as u64),
            speed_only_tokens: score.is_none().then_some(64),
            synthetic: false,
            threads: 2,
            chat: false,
            variant: String::new(),
        };
        // Intervals of +-12% around the primary score, as the harness writes them.
        if let (Some(m), Some(v)) = (primary_metric(&r), score) {
            r.set_interval(m, crate::eval::bootstrap::Interval { point: v, lo: 0.88 * v, hi: 1.12 * v });
        }
        r
    }

    /// Three tasks, every method at the defaults, a gamma sweep, a phi sweep and two
    /// capped rows, with plausible numbers for SmolLM2-135M.
    fn sample_rows() -> Vec<EvalRow> {
        let mut rows = Vec::new();
        // Weights: 135 MiB outside the FFNs plus gamma times 121.6 MiB of FFN.
        let mem = |load: f64| 135.0 + 121.6 * load;
        for (task, base) in [("qa", 42.0), ("translate", 18.0), ("summarize", 24.0)] {
            let s = |f: f64| Some(base * f);
            rows.push(row("reference", task, 1.0, None, s(1.0), 55.0, mem(1.0), None));
            rows.push(row("dense-loaded", task, 0.7, None, s(0.93), 61.0, mem(0.7), None));
            rows.push(row("selectinfer", task, 0.7, Some(0.4), s(0.9), 68.0, mem(0.7), None));
            rows.push(row("coreinfer", task, 1.0, Some(0.4), s(0.8), 64.0, mem(1.0), None));
            rows.push(row("coreinfer-loading", task, 0.7, Some(0.4), s(0.72), 67.0, mem(0.7), None));
            rows.push(row("random-loading", task, 0.7, Some(0.4), s(0.41), 67.5, mem(0.7), None));
            rows.push(row("q4_0", task, 1.0, None, s(0.86), 98.0, 87.0, None));
            rows.push(row("q4_k_m", task, 1.0, None, s(0.94), 90.0, 100.0, None));
            rows.push(row("q8_0", task, 1.0, None, s(0.99), 80.0, 139.0, None));
        }
        for load in [0.4, 0.5, 0.6, 0.8, 0.9] {
            let d = load - 0.7;
            rows.push(row(
                "dense-loaded",
                "translate",
                load,
                None,
                Some(18.0 * (0.93 + 0.22 * d)),
                61.0 - 12.0 * d,
                mem(load),
                None,
            ));
            rows.push(row(
                "selectinfer",
                "translate",
                load,
                Some(0.4),
                Some(18.0 * (0.9 + 0.3 * d)),
                68.0 - 2.0 * d,
                mem(load),
                None,
            ));
        }
        for phi in [0.3, 0.5, 0.6, 0.7] {
            let d = phi - 0.4;
            rows.push(row(
                "selectinfer",
                "qa",
                0.7,
                Some(phi),
                Some(42.0 * (0.9 + 0.25 * d)),
                68.0 - 30.0 * d,
                mem(0.7),
                None,
            ));
            rows.push(row(
                "coreinfer",
                "qa",
                1.0,
                Some(phi),
                Some(42.0 * (0.8 + 0.35 * d)),
                64.0 - 28.0 * d,
                mem(1.0),
                None,
            ));
        }
        rows.push(row("disk-offload", "qa", 1.0, None, None, 3.2, mem(1.0), Some(192.0)));
        rows.push(row("selectinfer", "qa", 0.7, Some(0.4), None, 66.0, mem(0.7), Some(192.0)));
        rows
    }

    fn defaults() -> Defaults {
        Defaults {
            load: 0.7,
            static_share: 0.3,
            compute: 0.4,
            token_share: 0.5,
        }
    }

    fn points(rows: &[EvalRow]) -> Vec<PlotPoint<'_>> {
        rows.iter()
            .map(|row| PlotPoint {
                model: "SmolLM2-135M",
                row,
            })
            .collect()
    }

    /// Width and height from a PNG's IHDR chunk.
    fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
        if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
            return None;
        }
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Some((be(&bytes[16..20]), be(&bytes[20..24])))
    }

    fn stems(files: &[PathBuf], ext: &str) -> Vec<String> {
        files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == ext))
            .filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect()
    }

    #[test]
    fn writes_every_chart_with_data() -> Result<()> {
        let rows = sample_rows();
        let dir = tempfile::tempdir()?;
        let files = write_plots(&points(&rows), &defaults(), dir.path())?;
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(files, sorted, "returned sorted");
        let expected = [
            "accuracy-vs-memory-qa",
            "accuracy-vs-memory-summarize",
            "accuracy-vs-memory-translate",
            "capped-speed",
            "gamma-sweep-translate",
            "phi-sweep-qa",
            "tasks",
        ];
        for ext in ["png", "svg"] {
            let mut got = stems(&files, ext);
            got.sort();
            assert_eq!(got, expected, "{ext} files");
        }
        for f in &files {
            let bytes = fs::read(f)?;
            assert!(f.exists() && !bytes.is_empty(), "{}", f.display());
            if f.extension().is_some_and(|e| e == "png") {
                let want = if f.to_string_lossy().contains("gamma-sweep") {
                    PANELS_SIZE
                } else {
                    CHART_SIZE
                };
                assert_eq!(png_size(&bytes), Some(want), "{}", f.display());
            } else {
                assert!(String::from_utf8_lossy(&bytes).contains("<svg"), "{}", f.display());
            }
        }
        let leftovers: Vec<_> = fs::read_dir(dir.path())?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
        Ok(())
    }

    #[test]
    fn skips_charts_without_data() -> Result<()> {
        // Only speed-only rows: no scored chart, no sweep, no per-task bars.
        let rows: Vec<EvalRow> = sample_rows().into_iter().filter(|r| r.mem_cap_bytes.is_some()).collect();
        let dir = tempfile::tempdir()?;
        let files = write_plots(&points(&rows), &defaults(), dir.path())?;
        assert_eq!(stems(&files, "png"), ["capped-speed"]);
        // A single gamma per line draws no gamma sweep.
        let rows: Vec<EvalRow> = sample_rows()
            .into_iter()
            .filter(|r| r.task != "translate" || r.load == 0.7 || r.load == 1.0)
            .collect();
        let charts = charts(&points(&rows), &defaults());
        assert!(!charts.iter().any(|c| c.stem().starts_with("gamma-sweep")));
        // Nothing at all writes nothing and creates no directory.
        let missing = dir.path().join("none");
        assert!(write_plots(&[], &defaults(), &missing)?.is_empty());
        assert!(!missing.exists());
        Ok(())
    }

    #[test]
    fn several_models_get_suffixes_and_synthetic_titles() {
        let rows = sample_rows();
        let mut synth = row("selectinfer", "qa", 0.7, Some(0.4), None, 12.0, 1800.0, Some(512.0));
        synth.synthetic = true;
        let mut pts = points(&rows);
        pts.push(PlotPoint {
            model: "Llama 3.2/1B",
            row: &synth,
        });
        let charts = charts(&pts, &defaults());
        assert!(charts.iter().any(|c| c.stem() == "tasks-SmolLM2-135M"));
        assert!(charts.iter().any(|c| c.stem() == "phi-sweep-qa-SmolLM2-135M"));
        let capped = charts.iter().find(|c| c.stem() == "capped-speed").expect("capped chart");
        assert!(capped.title().contains("(synthetic weights)"), "{}", capped.title());
        assert!(charts
            .iter()
            .filter(|c| c.stem() != "capped-speed")
            .all(|c| !c.title().contains("synthetic")));
        assert_eq!(sanitize("Llama 3.2/1B"), "Llama_3.2_1B");
    }

    #[test]
    fn sweeps_draw_only_lines_with_two_or_more_settings() {
        // phi sweep at gamma 0.7 (three phis) plus a lone gamma 0.4 point.
        let rows = [
            row("selectinfer", "qa", 0.7, Some(0.3), Some(10.0), 50.0, 220.0, None),
            row("selectinfer", "qa", 0.7, Some(0.4), Some(11.0), 45.0, 220.0, None),
            row("selectinfer", "qa", 0.7, Some(0.5), Some(12.0), 40.0, 220.0, None),
            row("selectinfer", "qa", 0.4, Some(0.4), Some(8.0), 55.0, 180.0, None),
        ];
        let refs: Vec<&EvalRow> = rows.iter().collect();
        let lines = sweep_lines(&refs, |r| Some(r.load), "γ", |r| r.compute.unwrap_or(f64::NAN), |r| r.decode_tps).expect("a phi sweep");
        let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["selectinfer γ=0.7"]);
        assert_eq!(lines[0].points.iter().map(|p| p.x).collect::<Vec<_>>(), [0.3, 0.4, 0.5]);
        // No line with two settings: no chart.
        assert!(sweep_lines(&refs[2..], |r| Some(r.load), "γ", |r| r.compute.unwrap_or(f64::NAN), |r| r.decode_tps).is_none());
    }

    #[test]
    fn primary_score_picks_the_task_metric() {
        let qa = row("reference", "qa", 1.0, None, Some(40.0), 50.0, 256.0, None);
        assert_eq!(primary_score(&qa), Some(("F1", 40.0)));
        let tr = row("reference", "translate", 1.0, None, Some(17.5), 50.0, 256.0, None);
        assert_eq!(primary_score(&tr), Some(("BLEU", 17.5)));
        let su = row("reference", "summarize", 1.0, None, Some(22.0), 50.0, 256.0, None);
        assert_eq!(primary_score(&su), Some(("ROUGE-L", 22.0)));
        let speed = row("reference", "qa", 1.0, None, None, 50.0, 256.0, None);
        assert_eq!(primary_score(&speed), None);
    }

    #[test]
    fn tasks_chart_takes_the_default_rows() {
        let rows = sample_rows();
        let rows_ref: Vec<&EvalRow> = rows.iter().collect();
        let Some(Chart::Bars(bars)) = tasks_chart("m", &rows_ref, &defaults(), "") else {
            panic!("no tasks chart")
        };
        assert_eq!(bars.groups, ["qa (F1)", "translate (BLEU)", "summarize (ROUGE-L)"]);
        let methods: Vec<&str> = bars.series.iter().map(|s| s.method.as_str()).collect();
        assert_eq!(
            methods,
            [
                "reference",
                "dense-loaded",
                "selectinfer",
                "coreinfer",
                "coreinfer-loading",
                "random-loading",
                "q4_0",
                "q4_k_m",
                "q8_0"
            ]
        );
        let si = &bars.series[2];
        assert_eq!(si.values[1], Some(18.0 * 0.9), "selectinfer translate at gamma 0.7, phi 0.4");
        let (lo, hi) = si.intervals[1].expect("the row's BLEU interval");
        assert!((lo - 0.88 * 18.0 * 0.9).abs() < 1e-9 && (hi - 1.12 * 18.0 * 0.9).abs() < 1e-9);
        assert!(bars.series.iter().all(|s| s.label == s.method), "all on 50 examples");

        // A method scored on fewer examples says so in its legend entry.
        let mut fewer = rows.clone();
        let mut disk = row("disk-offload", "qa", 1.0, None, Some(30.0), 3.0, 256.0, None);
        disk.examples = 10;
        fewer.push(disk);
        let fewer_ref: Vec<&EvalRow> = fewer.iter().collect();
        let Some(Chart::Bars(bars)) = tasks_chart("m", &fewer_ref, &defaults(), "") else {
            panic!("no tasks chart")
        };
        let labels: Vec<&str> = bars.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels.last(), Some(&"disk-offload (10 ex.)"));
        assert_eq!(labels[0], "reference");
    }

    /// Renders the sample charts into /tmp/plots-preview for a look:
    /// `cargo test --release --lib preview -- --ignored`.
    #[test]
    #[ignore = "writes sample charts to /tmp/plots-preview for a person to look at; run with --ignored"]
    fn preview() -> Result<()> {
        let rows = sample_rows();
        let files = write_plots(&points(&rows), &defaults(), Path::new("/tmp/plots-preview"))?;
        assert!(!files.is_empty());
        // Two models, synthetic capped rows at two caps: suffixes and wrapped group names.
        let big: Vec<EvalRow> = [
            ("selectinfer", 512.0, 14.0),
            ("disk-offload", 512.0, 0.9),
            ("selectinfer", 1024.0, 15.5),
            ("disk-offload", 1024.0, 2.1),
        ]
        .iter()
        .map(|&(m, cap, tps)| {
            let mut r = row(m, "qa", 1.0, None, None, tps, 2357.0, Some(cap));
            r.synthetic = true;
            r
        })
        .collect();
        let mut pts = points(&rows);
        pts.extend(big.iter().map(|row| PlotPoint {
            model: "Llama-3.2-1B",
            row,
        }));
        write_plots(&pts, &defaults(), Path::new("/tmp/plots-preview/several-models"))?;
        Ok(())
    }
}
