//! Chart files: every chart is drawn twice with the same code, as `<stem>.png`
//! and `<stem>.svg`, each written under a temporary name and renamed when complete.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use plotters::prelude::*;

use super::chart::Chart;
use super::draw::{draw, plot_err};

/// Draws a chart as `<stem>.png` and `<stem>.svg` in `dir`.
pub(super) fn render(chart: &Chart, dir: &Path) -> Result<Vec<PathBuf>> {
    let png = dir.join(format!("{}.png", chart.stem()));
    let svg = dir.join(format!("{}.svg", chart.stem()));
    write_png(chart, &png)?;
    write_svg(chart, &svg)?;
    Ok(vec![png, svg])
}

/// The bitmap backend picks its encoder from the file extension, so the temporary
/// name must still end in `.png`.
pub(super) fn png_temp_path(target: &Path) -> PathBuf {
    let mut name = crate::fsutil::temp_path(target).into_os_string();
    name.push(".png");
    name.into()
}

/// Draws into a temporary PNG and renames it over `target` once complete.
pub(super) fn write_png(chart: &Chart, target: &Path) -> Result<()> {
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
pub(super) fn write_svg(chart: &Chart, target: &Path) -> Result<()> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, chart.size()).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(plot_err)?;
    }
    crate::fsutil::write_atomic(target, text.as_bytes()).with_context(|| format!("writing {}", target.display()))
}
