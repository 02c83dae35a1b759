//! Drawing a chart description on any plotters backend: the page, the title, the
//! plot (scatter, sweep panels or grouped bars) and the legend column beside it.

use std::ops::Range;

use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{Bars, Chart, Panels, Scatter, Series, SweepLine};
use super::legend::{draw_legend, draw_marker, legend_width};
use super::style::*;

pub(super) type Area<DB> = DrawingArea<DB, Shift>;
pub(super) type XY = Cartesian2d<RangedCoordf64, RangedCoordf64>;

pub(super) fn font(px: u32) -> TextStyle<'static> {
    (FONT, px).into_font().color(&BLACK)
}

/// Draws the whole chart: white page, title, plot(s), and the legend on the right.
pub(super) fn draw<DB: DrawingBackend>(root: &Area<DB>, chart: &Chart) -> Result<()> {
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
pub(super) fn style_mesh<DB: DrawingBackend>(
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
pub(super) fn tick_formatter(range: &Range<f64>) -> impl Fn(&f64) -> String {
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
pub(super) fn padded(values: impl IntoIterator<Item = f64>, from_zero: bool) -> Range<f64> {
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
pub(super) fn padded_top(values: impl IntoIterator<Item = f64>, extra: f64) -> Range<f64> {
    let r = padded(values, true);
    r.start..r.end + (r.end - r.start) * extra
}

/// A rectangle in backend pixels, for placing text away from markers and text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Boxed {
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
pub(super) fn draw_scatter<DB: DrawingBackend>(area: &Area<DB>, c: &Scatter) -> Result<i32> {
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
    order.sort_by_key(|s| is_baseline(&s.method));
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
pub(super) fn label_landmarks<DB: DrawingBackend>(area: &Area<DB>, chart: &ChartContext<DB, XY>, c: &Scatter) -> Result<()> {
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
    for s in c.series.iter().filter(|s| is_baseline(&s.method)) {
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
pub(super) fn draw_panels<DB: DrawingBackend>(area: &Area<DB>, c: &Panels) -> Result<i32> {
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
                let style = reference_color().stroke_width(2);
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
pub(super) fn draw_whisker<DB: DrawingBackend>(chart: &mut ChartContext<DB, XY>, x: f64, lo: f64, hi: f64, half_w: f64, color: RGBColor) -> Result<()> {
    let style = color.mix(0.8).stroke_width(2);
    let segments = [vec![(x, lo), (x, hi)], vec![(x - half_w, lo), (x + half_w, lo)], vec![(x - half_w, hi), (x + half_w, hi)]];
    chart.draw_series(segments.into_iter().map(|pts| PathElement::new(pts, style))).map_err(plot_err)?;
    Ok(())
}

/// One sweep line: solid (or dashed for a method's second, fourth... line) with
/// markers; `widen` makes the markers 3 px larger per step.
pub(super) fn draw_line<DB: DrawingBackend>(chart: &mut ChartContext<DB, XY>, line: &SweepLine, pts: &[(f64, f64)], widen: u32) -> Result<()> {
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
pub(super) fn draw_bars<DB: DrawingBackend>(area: &Area<DB>, c: &Bars) -> Result<i32> {
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
pub(super) fn wrap<DB: DrawingBackend>(area: &Area<DB>, text: &str, max_px: f64, style: &TextStyle) -> Result<Vec<String>> {
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
pub(super) const MAX_BAR_PX: f64 = 90.0;

/// Decimals of the value labels, one count for the whole chart so that labels
/// line up: about three significant digits of the largest value.
pub(super) fn bar_decimals(c: &Bars) -> usize {
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
pub(super) fn value_labels_fit<DB: DrawingBackend>(area: &Area<DB>, c: &Bars, bar_px: f64, decimals: usize, style: &TextStyle) -> Result<bool> {
    for v in c.series.iter().flat_map(|s| s.values.iter().flatten()) {
        let (w, _) = area.estimate_text_size(&format!("{v:.decimals$}"), style).map_err(plot_err)?;
        if w as f64 > bar_px + 6.0 {
            return Ok(false);
        }
    }
    Ok(true)
}


/// plotters' errors carry the backend's error type; this keeps their message.
pub(super) fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e}")
}
