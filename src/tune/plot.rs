//! The frontier plot: KL from the file as it is against decode speedup, one
//! marker per point sized by its peak RSS, the chosen point in red; a
//! dynamic-only point is labelled gamma/phi`d`.

use std::path::Path;

use anyhow::{anyhow, Context};
use plotters::prelude::*;

use super::frontier::Measured;
use super::grid::{share, Point};

/// Draws `measured` to the SVG file `out` (written whole or not at all).
pub fn write(measured: &[Measured], chosen: Option<&Point>, out: &Path, title: &str) -> anyhow::Result<()> {
    crate::experiment::plot::register_fonts()?;
    let font = crate::experiment::plot::FONT;
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", out.display());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (x0, x1) = bounds(measured.iter().map(|m| m.speedup));
        let (_, y1) = bounds(measured.iter().map(|m| m.quality.kl_hi));
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title}: quality against speed (marker area: peak RSS)"), (font, 20))
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0.0..y1)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("decode speedup over the file as it is")
            .y_desc("mean KL from the file as it is (nats / answer token)")
            .label_style((font, 13))
            .axis_desc_style((font, 14))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(|e| err(&e))?;
        let max_rss = measured.iter().map(|m| m.peak_rss_bytes).max().unwrap_or(1).max(1) as f64;
        for m in measured {
            let is_chosen = chosen.is_some_and(|c| c.same(m.point()));
            let color = if is_chosen { RED } else { BLUE };
            let radius = (14.0 * (m.peak_rss_bytes as f64 / max_rss).sqrt()).max(3.0) as i32;
            // A dynamic-only point sits at its twin's speed: its label says "d".
            let label = match m.point().compute {
                Some(phi) if m.point().no_static => format!("{}/{}d", share(m.point().load), share(phi)),
                Some(phi) => format!("{}/{}", share(m.point().load), share(phi)),
                None => format!("{}/dense", share(m.point().load)),
            };
            chart
                .draw_series(std::iter::once(PathElement::new(vec![(m.speedup, m.quality.kl_lo), (m.speedup, m.quality.kl_hi)], color.mix(0.6))))
                .map_err(|e| err(&e))?;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((m.speedup, m.quality.kl)) + Circle::new((0, 0), radius, color.mix(0.5).filled()) + Text::new(label, (radius + 3, -6), (font, 13).into_font()),
                ))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    crate::fsutil::write_atomic(out, svg.as_bytes()).with_context(|| format!("cannot write {}", out.display()))
}

/// A padded axis range around `values`.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.12).max(0.02);
    (lo - pad, hi + pad)
}
