//! Chart descriptions: what one chart shows (its data, titles and axis texts) as
//! plain data, independent of the backend that draws it. [`super::build`] makes
//! them from rows, [`super::draw`] draws them.

use plotters::style::RGBColor;

use super::style::{method_color, method_mark, MarkStyle, CHART_SIZE, PANELS_SIZE};

/// One chart to draw: its data and texts, independent of the backend.
#[derive(Debug)]
pub(super) enum Chart {
    Scatter(Scatter),
    Panels(Panels),
    Bars(Bars),
}

/// Points of several methods on two numeric axes.
#[derive(Debug)]
pub(super) struct Scatter {
    pub(super) stem: String,
    pub(super) title: String,
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    pub(super) series: Vec<Series>,
}

/// One method's points in a scatter chart.
#[derive(Debug)]
pub(super) struct Series {
    pub(super) method: String,
    pub(super) points: Vec<(f64, f64)>,
}

/// Two side-by-side panels that share an x axis and a set of lines.
#[derive(Debug)]
pub(super) struct Panels {
    pub(super) stem: String,
    pub(super) title: String,
    pub(super) x_desc: String,
    pub(super) left: PanelAxis,
    /// The second panel (None: the score panel alone, full width).
    pub(super) right: Option<PanelAxis>,
    pub(super) lines: Vec<SweepLine>,
    /// Score of the reference model, drawn as a dashed line in the left panel.
    pub(super) reference: Option<f64>,
}

/// The y axis of one panel.
#[derive(Debug)]
pub(super) struct PanelAxis {
    pub(super) caption: String,
    pub(super) desc: String,
    /// Scores start at zero; measurements are padded around their data.
    pub(super) from_zero: bool,
}

/// One point of a sweep line.
#[derive(Debug, Clone, Copy)]
pub(super) struct SweepPoint {
    pub(super) x: f64,
    /// The score (left panel), if the row has one.
    pub(super) score: Option<f64>,
    /// Its 95% interval, if the row has one.
    pub(super) interval: Option<(f64, f64)>,
    /// The right panel's value.
    pub(super) right: f64,
}

/// One line of a sweep, sorted by x.
#[derive(Debug)]
pub(super) struct SweepLine {
    pub(super) method: String,
    pub(super) label: String,
    /// Index among the lines of the same method: picks a dashed style for odd ones.
    pub(super) variant: usize,
    pub(super) points: Vec<SweepPoint>,
}

/// Grouped bars: one group per label, one bar per series.
#[derive(Debug)]
pub(super) struct Bars {
    pub(super) stem: String,
    pub(super) title: String,
    pub(super) y_desc: String,
    pub(super) groups: Vec<String>,
    pub(super) series: Vec<BarSeries>,
    /// Print each bar's value on top of it (when the text fits above the bar).
    pub(super) value_labels: bool,
}

/// Mixes of a method's colour for its settings in order: towards white (> 0) or
/// black (< 0).
pub(super) const SHADES: [f64; 8] = [0.0, 0.45, -0.4, 0.7, -0.65, 0.25, 0.85, -0.2];

/// One method's bars, one value per group (None: no bar there).
#[derive(Debug)]
pub(super) struct BarSeries {
    pub(super) method: String,
    /// Legend text: the method, plus gamma where one method has several settings.
    pub(super) label: String,
    /// 0 for a method's first setting; later settings get lighter shades.
    pub(super) shade: u8,
    pub(super) values: Vec<Option<f64>>,
    /// 95% interval of each value, drawn as a whisker (None: no whisker).
    pub(super) intervals: Vec<Option<(f64, f64)>>,
}

impl BarSeries {
    /// The method's colour for its first setting; its later settings take it
    /// mixed with white (positive steps) or black (negative ones), alternating, so
    /// that a sweep of up to [`SHADES`]`.len()` variants of one method has as many
    /// colours (they repeat after that).
    pub(super) fn color(&self) -> RGBColor {
        let RGBColor(r, g, b) = method_color(&self.method);
        let t = SHADES[usize::from(self.shade) % SHADES.len()];
        let mix = |c: u8| {
            let c = f64::from(c);
            (if t >= 0.0 { c + (255.0 - c) * t } else { c * (1.0 + t) }).round() as u8
        };
        RGBColor(mix(r), mix(g), mix(b))
    }
}

impl Chart {
    pub(super) fn stem(&self) -> &str {
        match self {
            Chart::Scatter(c) => &c.stem,
            Chart::Panels(c) => &c.stem,
            Chart::Bars(c) => &c.stem,
        }
    }

    pub(super) fn title(&self) -> &str {
        match self {
            Chart::Scatter(c) => &c.title,
            Chart::Panels(c) => &c.title,
            Chart::Bars(c) => &c.title,
        }
    }

    pub(super) fn size(&self) -> (u32, u32) {
        match self {
            Chart::Panels(c) if c.right.is_some() => PANELS_SIZE,
            _ => CHART_SIZE,
        }
    }

    /// The legend: one entry per method (scatter, bars) or per line (sweeps).
    pub(super) fn legend(&self) -> Vec<LegendEntry> {
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
pub(super) struct LegendEntry {
    pub(super) label: String,
    pub(super) key: LegendKey,
}

/// What a legend line shows before its text.
#[derive(Debug)]
pub(super) enum LegendKey {
    Marker(MarkStyle),
    /// A line with a marker; dashed when true.
    Line(MarkStyle, bool),
    Bar(RGBColor),
    /// The dashed reference score line.
    Reference,
}
