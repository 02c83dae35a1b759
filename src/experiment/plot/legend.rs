//! The legend column beside every plot, and the method markers it shares with the
//! plots.

use anyhow::Result;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{LegendEntry, LegendKey};
use super::draw::{font, plot_err, Area};
use super::style::*;

pub(super) const LEGEND_ROW: i32 = 24;
pub(super) const LEGEND_KEY_W: i32 = 34;
pub(super) const LEGEND_PAD: i32 = 10;

/// Width of the legend column: the longest label plus its key and padding.
pub(super) fn legend_width<DB: DrawingBackend>(root: &Area<DB>, legend: &[LegendEntry]) -> Result<u32> {
    let mut widest = 0;
    for e in legend {
        widest = widest.max(root.estimate_text_size(&e.label, &font(LEGEND_PX)).map_err(plot_err)?.0);
    }
    Ok(widest + (LEGEND_KEY_W + 3 * LEGEND_PAD) as u32 + 14)
}

/// Draws the legend box at the top of its column, beside the plot.
pub(super) fn draw_legend<DB: DrawingBackend>(area: &Area<DB>, legend: &[LegendEntry], top: i32) -> Result<()> {
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
pub(super) fn draw_legend_key<DB: DrawingBackend>(area: &Area<DB>, key: &LegendKey, (x, y): (i32, i32)) -> Result<()> {
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
            let style = reference_color().stroke_width(2);
            area.draw(&DashedPathElement::new([(x - half, y), (x + half, y)], 7, 4, style))
                .map_err(plot_err)
        }
    }
}

/// Draws a marker at `at` (any coordinate system) on `area`.
pub(super) fn draw_marker<DB, CT>(area: &DrawingArea<DB, CT>, at: CT::From, mark: &MarkStyle) -> Result<()>
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
