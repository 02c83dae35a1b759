//! The look every chart shares: one colour and marker per method (fixed by its
//! place in [`Method::ALL`], so a method looks the same in every chart), fonts,
//! text sizes and chart sizes.

use std::sync::OnceLock;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use crate::eval::harness::Method;

/// One colour per method of [`Method::ALL`], in its order, then spares for methods
/// not in it.
pub(super) const PALETTE: [RGBColor; 13] = [
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
pub const FONT: &str = "sans-serif";
// Even pixel sizes: plotters' ab_glyph renderer truncates half a font size when it
// places each glyph, so odd sizes set some glyphs (the decimal point) a pixel high.
pub(super) const CAPTION_PX: u32 = 18;
pub(super) const GROUP_PX: u32 = 16;
pub(super) const TITLE_PX: u32 = 22;
pub(super) const AXIS_DESC_PX: u32 = 16;
pub(super) const TICK_PX: u32 = 14;
pub(super) const LEGEND_PX: u32 = 14;
pub(super) const NOTE_PX: u32 = 12;

/// Single-panel charts.
pub(super) const CHART_SIZE: (u32, u32) = (1000, 650);
/// Two-panel sweep charts.
pub(super) const PANELS_SIZE: (u32, u32) = (1300, 600);

/// Registers the bundled font under [`FONT`] once per process: plotters' ab_glyph
/// text rendering knows no fonts but registered ones.
pub fn register_fonts() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    static FONT_BYTES: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the bundled font assets/DejaVuSans.ttf is not a valid font"))
    }
}

/// Sort key of the methods a chart shows: known ones in [`Method::ALL`] order, then
/// the rest by name.
pub(super) fn method_key(method: &str) -> (usize, String) {
    (Method::rank_of(method), method.to_string())
}

/// The colour of a method; unknown methods get a spare colour derived from the name
/// so that they too keep one colour across charts.
pub(super) fn method_color(method: &str) -> RGBColor {
    match Method::from_name(method) {
        Some(m) => PALETTE[m.rank()],
        None => {
            let known = Method::ALL.len();
            let h = method.bytes().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
            PALETTE[known + h % (PALETTE.len() - known)]
        }
    }
}

/// The reference's colour, for the dashed reference-score line of the sweeps.
pub(super) fn reference_color() -> RGBColor {
    PALETTE[Method::Reference.rank()]
}

/// Marker shapes (drawn as pixel polygons so that SVG and PNG look the same).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Shape {
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
pub(super) struct MarkStyle {
    pub(super) shape: Shape,
    pub(super) color: RGBColor,
    /// Radius in pixels.
    pub(super) size: i32,
}


/// The marker of a method: baselines (reference, quantized) are larger.
pub(super) fn method_mark(method: &str) -> MarkStyle {
    let m = Method::from_name(method);
    let shape = match m {
        Some(Method::Reference) => Shape::Star,
        Some(Method::DenseLoaded) => Shape::Circle,
        Some(Method::Selectinfer) => Shape::Diamond,
        Some(Method::Coreinfer) => Shape::TriangleUp,
        Some(Method::CoreinferLoading) => Shape::TriangleDown,
        Some(Method::RandomLoading) => Shape::Cross,
        Some(Method::Q4_0) => Shape::Square,
        Some(Method::Q4KM) => Shape::Pentagon,
        Some(Method::Q8_0) => Shape::Hexagon,
        Some(Method::DiskOffload) => Shape::Plus,
        None => Shape::Circle,
    };
    MarkStyle { shape, color: method_color(method), size: if is_baseline(method) { 9 } else { 6 } }
}

/// Whether a method's points are labelled by name and drawn large and on top
/// (see [`Method::is_baseline`]).
pub(super) fn is_baseline(method: &str) -> bool {
    Method::from_name(method).is_some_and(Method::is_baseline)
}

/// Vertices of a regular polygon of radius `r`, first vertex at angle `start` (radians).
pub(super) fn regular(n: usize, r: f64, start: f64) -> Vec<(i32, i32)> {
    (0..n)
        .map(|i| {
            let a = start + i as f64 * std::f64::consts::TAU / n as f64;
            ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
        })
        .collect()
}

/// The outline of a filled shape, in pixel offsets from the point (y grows down).
pub(super) fn shape_outline(shape: Shape, r: i32) -> Vec<(i32, i32)> {
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
