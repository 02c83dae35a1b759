//! The operating points `tune` measures: (gamma, phi) pairs, each selective one
//! also with dynamic-only computation, a coarse grid first and then the points
//! halfway to the chosen one's neighbours.

use std::fmt;

/// delta (the static share) of every tuned point: the paper's 0.3.
pub const STATIC_SHARE: f64 = 0.3;

/// The coarse grid's loaded shares gamma (1.0 is the file as it is).
pub const COARSE_LOAD: [f64; 3] = [0.7, 0.85, 1.0];

/// The coarse grid's computed shares phi below gamma (gamma itself, every loaded
/// neuron, is always a point).
pub const COARSE_COMPUTE: [f64; 3] = [0.4, 0.55, 0.7];

/// One operating point: gamma (loaded share) and phi (computed share, `None`:
/// every loaded neuron), and whether decode computes the prompt's phi*N most
/// voted neurons only instead of the static delta*N plus the most voted
/// (`--no-static`). gamma 1.0 with phi `None` is the user's file as it is, the
/// anchor of every comparison.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    /// gamma.
    pub load: f64,
    /// phi; `None`: dense decode.
    pub compute: Option<f64>,
    /// Dynamic neurons only (stores written before the field read as false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_static: bool,
}

impl Point {
    /// The user's file, dense: the anchor.
    pub const ANCHOR: Point = Point { load: 1.0, compute: None, no_static: false };

    /// gamma and phi with the paper's selection (static set plus the prompt's vote).
    pub const fn new(load: f64, compute: Option<f64>) -> Point {
        Point { load, compute, no_static: false }
    }

    /// The same gamma and phi computing the prompt's most-voted neurons only.
    pub const fn dynamic_only(self) -> Point {
        Point { no_static: true, ..self }
    }

    /// The point whose bench timing this one's is: itself, or for dynamic only the
    /// same gamma and phi with the static set (the same number of neurons computed
    /// from the same file in the same layout, so one timing serves both).
    pub const fn timed_as(self) -> Point {
        Point { no_static: false, ..self }
    }

    /// Whether this is the anchor.
    pub fn is_anchor(&self) -> bool {
        self.same(&Point::ANCHOR)
    }

    /// Whether decode computes only part of the loaded neurons.
    pub fn is_selective(&self) -> bool {
        self.compute.is_some()
    }

    /// Equal settings (within the rounding of a share's text).
    pub fn same(&self, other: &Point) -> bool {
        let eq = |a: f64, b: f64| (a - b).abs() < 1e-6;
        eq(self.load, other.load)
            && self.no_static == other.no_static
            && match (self.compute, other.compute) {
                (None, None) => true,
                (Some(a), Some(b)) => eq(a, b),
                _ => false,
            }
    }

    /// The file name stem of this point's slice (`load0.7`); `None` for gamma 1.0.
    pub fn slice_stem(&self) -> Option<String> {
        (self.load < 1.0).then(|| format!("load{}", share(self.load)))
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.compute {
            Some(phi) if self.no_static => write!(f, "gamma {} / phi {} dynamic only", share(self.load), share(phi)),
            Some(phi) => write!(f, "gamma {} / phi {}", share(self.load), share(phi)),
            None => write!(f, "gamma {} / dense", share(self.load)),
        }
    }
}

/// A share as short text: 0.7, 0.85, 0.475.
pub fn share(v: f64) -> String {
    let t = format!("{:.3}", v);
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The coarse grid: the anchor, gamma in [`COARSE_LOAD`] dense, and every phi of
/// [`COARSE_COMPUTE`] below each gamma under 1 (above delta), each with the
/// paper's selection and then dynamic only.
pub fn coarse() -> Vec<Point> {
    let mut v = vec![Point::ANCHOR];
    for &load in COARSE_LOAD.iter().filter(|&&g| g < 1.0) {
        v.push(Point::new(load, None));
        for &phi in COARSE_COMPUTE.iter().filter(|&&p| p < load && p > STATIC_SHARE) {
            v.push(Point::new(load, Some(phi)));
            v.push(Point::new(load, Some(phi)).dynamic_only());
        }
    }
    v
}

/// The refinement around `chosen`: at its gamma and with its selection, the phis
/// halfway to the next measured phi above and below it (dense counts as phi =
/// gamma, for either selection); none for the anchor. Points already in
/// `measured` are left out.
pub fn refine(chosen: &Point, measured: &[Point]) -> Vec<Point> {
    if chosen.load >= 1.0 {
        return Vec::new();
    }
    let phi_of = |p: &Point| p.compute.unwrap_or(p.load);
    let same_selection = |p: &&Point| p.compute.is_none() || p.no_static == chosen.no_static;
    let mut phis: Vec<f64> = measured.iter().filter(|p| (p.load - chosen.load).abs() < 1e-6).filter(same_selection).map(phi_of).collect();
    phis.sort_by(f64::total_cmp);
    let c = phi_of(chosen);
    let below = phis.iter().copied().filter(|&p| p < c - 1e-6).last();
    let above = phis.iter().copied().find(|&p| p > c + 1e-6);
    [below, above]
        .into_iter()
        .flatten()
        .map(|p| Point { load: chosen.load, compute: Some(((p + c) / 2.0 * 1000.0).round() / 1000.0), no_static: chosen.no_static })
        .filter(|p| p.compute.is_some_and(|phi| phi > STATIC_SHARE && phi < p.load))
        .filter(|p| !measured.iter().any(|m| m.same(p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_grid_holds_the_anchor_and_every_phi_below_gamma() {
        let g = coarse();
        let text: Vec<String> = g.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            text,
            [
                "gamma 1 / dense",
                "gamma 0.7 / dense",
                "gamma 0.7 / phi 0.4",
                "gamma 0.7 / phi 0.4 dynamic only",
                "gamma 0.7 / phi 0.55",
                "gamma 0.7 / phi 0.55 dynamic only",
                "gamma 0.85 / dense",
                "gamma 0.85 / phi 0.4",
                "gamma 0.85 / phi 0.4 dynamic only",
                "gamma 0.85 / phi 0.55",
                "gamma 0.85 / phi 0.55 dynamic only",
                "gamma 0.85 / phi 0.7",
                "gamma 0.85 / phi 0.7 dynamic only"
            ]
        );
        assert!(g[0].is_anchor() && !g[1].is_anchor());
        // A dynamic-only point is another point, timed as its twin with the static set.
        assert!(!g[3].same(&g[2]) && g[3].timed_as().same(&g[2]) && g[2].timed_as().same(&g[2]));
        assert_eq!(g[2].slice_stem().as_deref(), Some("load0.7"));
        assert_eq!(g[0].slice_stem(), None);
    }

    #[test]
    fn refining_adds_the_midpoints_beside_the_chosen_phi() {
        let g = coarse();
        let chosen = Point::new(0.85, Some(0.55));
        let r = refine(&chosen, &g);
        assert_eq!(r, [Point::new(0.85, Some(0.475)), Point::new(0.85, Some(0.625))]);
        // A dynamic-only choice refines dynamic only, beside its own measured phis.
        let dynamic = chosen.dynamic_only();
        assert_eq!(refine(&dynamic, &g), [Point::new(0.85, Some(0.475)).dynamic_only(), Point::new(0.85, Some(0.625)).dynamic_only()]);
        // Refining again halves the steps again, never repeating a measured point;
        // the anchor is not refined.
        let mut all = g.clone();
        all.extend(r);
        assert_eq!(refine(&chosen, &all), [Point::new(0.85, Some(0.513)), Point::new(0.85, Some(0.588))]);
        assert_eq!(refine(&Point::ANCHOR, &g), []);
        // The lowest phi has no neighbour below.
        assert_eq!(refine(&Point::new(0.7, Some(0.4)), &g), [Point::new(0.7, Some(0.475))]);
    }
}
