//! Comparison charts of an experiment's rows (PNG and SVG).
//!
//! The rows of an experiment are first turned into chart descriptions
//! ([`chart::Chart`]: plain data, titles and axis texts), then every description is
//! drawn twice with the same code, once on a bitmap and once on an SVG backend.
//! Keeping the choice of rows apart from the drawing keeps each half small and
//! testable:
//!
//! - [`style`]: one colour and marker per method, fonts and sizes;
//! - [`chart`]: the chart descriptions;
//! - [`rows`]: which rows a chart shows, and how settings and scores are read;
//! - [`build`]: rows -> chart descriptions;
//! - [`files`]: `<stem>.png` and `<stem>.svg`, written atomically;
//! - [`draw`] and [`legend`]: a description on any plotters backend.
//!
//! Legends sit outside the plotting area, on the right, so they never cover data.
//! Text uses the bundled DejaVu Sans: the machines that draw these charts have no
//! system fonts.

mod build;
mod chart;
mod draw;
mod files;
mod legend;
mod rows;
mod style;
#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::eval::harness::EvalRow;
use crate::experiment::config::Defaults;

pub use rows::primary_score;
/// The plots' font (the bundled DejaVu Sans once registered) for other charts.
pub use style::{register_fonts, FONT};

/// One row with the experiment's name for its model (rows' `model` column is a file name).
pub struct PlotPoint<'a> {
    pub model: &'a str,
    pub row: &'a EvalRow,
}

/// Writes every chart that has data; returns the files written (png and svg),
/// sorted. `defaults` (the experiment's paper settings) picks the rows of the
/// per-task bar chart.
pub fn write_plots(points: &[PlotPoint], defaults: &Defaults, dir: &Path) -> Result<Vec<PathBuf>> {
    style::register_fonts()?;
    let charts = build::charts(points, defaults);
    if charts.is_empty() {
        return Ok(Vec::new());
    }
    fs::create_dir_all(dir).with_context(|| format!("creating plot directory {}", dir.display()))?;
    let mut written = Vec::new();
    for chart in &charts {
        written.extend(files::render(chart, dir).with_context(|| format!("drawing chart {}", chart.stem()))?);
    }
    written.sort();
    Ok(written)
}
