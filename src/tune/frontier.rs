//! What `tune` measured at each point, the frontier table, and the choice of the
//! point that meets the user's limits.

use anyhow::bail;

use super::grid::{share, Point};
use super::store::{Quality, Speed};
use crate::output::{format_bytes, Table};

/// One point's measurements: quality on the task's profiling split, speed in one
/// round-robin run with the anchor, peak resident memory in its own process.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    /// The point and its quality.
    #[serde(flatten)]
    pub quality: Quality,
    /// Tensor bytes of the point's file.
    pub weight_bytes: u64,
    /// Peak resident memory of a process that runs the point (median over reps).
    pub peak_rss_bytes: u64,
    pub decode_tps: f64,
    pub prefill_tps: f64,
    /// Decode speed over the anchor's, in the same round-robin run.
    pub speedup: f64,
}

impl Measured {
    /// A point's quality joined with its speed from a bench run.
    pub fn new(quality: Quality, s: &Speed) -> Measured {
        Measured { quality, weight_bytes: s.weight_bytes, peak_rss_bytes: s.peak_rss_bytes, decode_tps: s.decode_tps, prefill_tps: s.prefill_tps, speedup: s.speedup }
    }

    /// The point measured.
    pub fn point(&self) -> &Point {
        &self.quality.point
    }
}

/// The user's limits.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Most peak resident memory, bytes.
    pub mem_budget: Option<u64>,
    /// Least decode speedup over the file as it is.
    pub min_speedup: Option<f64>,
    /// Most mean KL from the file as it is, nats per answer token.
    pub max_loss: f64,
}

impl Limits {
    /// How far `m` is outside the limits, as the largest relative excess (0: inside).
    pub fn excess(&self, m: &Measured) -> f64 {
        let mut e: f64 = 0.0;
        if let Some(b) = self.mem_budget {
            e = e.max(m.peak_rss_bytes as f64 / b as f64 - 1.0);
        }
        if let Some(s) = self.min_speedup {
            e = e.max(s / m.speedup - 1.0);
        }
        e.max(m.quality.kl / self.max_loss.max(1e-12) - 1.0)
    }
}

/// The chosen point: among those within every limit, the fastest decode (ties: the
/// lower KL, then the smaller peak RSS). None meets them: an error naming the
/// closest point and what it misses.
pub fn choose<'a>(measured: &'a [Measured], limits: &Limits) -> anyhow::Result<&'a Measured> {
    let within = measured.iter().filter(|m| limits.excess(m) <= 0.0);
    let best = within.max_by(|a, b| a.speedup.total_cmp(&b.speedup).then(b.quality.kl.total_cmp(&a.quality.kl)).then(b.peak_rss_bytes.cmp(&a.peak_rss_bytes)));
    if let Some(b) = best {
        return Ok(b);
    }
    let Some(closest) = measured.iter().min_by(|a, b| limits.excess(a).total_cmp(&limits.excess(b))) else { bail!("no point was measured") };
    let mut misses = Vec::new();
    if let Some(b) = limits.mem_budget.filter(|&b| closest.peak_rss_bytes > b) {
        misses.push(format!("peak RSS {} over the budget {}", format_bytes(closest.peak_rss_bytes), format_bytes(b)));
    }
    if let Some(s) = limits.min_speedup.filter(|&s| closest.speedup < s) {
        misses.push(format!("decode {:.2}x under --min-speedup {s}", closest.speedup));
    }
    if closest.quality.kl > limits.max_loss {
        misses.push(format!("KL {:.4} over --max-loss {}", closest.quality.kl, limits.max_loss));
    }
    bail!("no measured point meets the limits; the closest is {} ({})", closest.point(), misses.join(", "))
}

/// The frontier as a Markdown table, the chosen point marked.
pub fn table(measured: &[Measured], chosen: Option<&Point>) -> String {
    let mut t = Table::new(["", "gamma", "phi", "weights", "peak RSS", "decode tok/s", "speedup", "KL [95% CI]", "same top", "answer ppl [95% CI]"]);
    for m in measured {
        let mark = if chosen.is_some_and(|c| c.same(m.point())) { "->" } else { "" };
        t.row([
            mark.to_string(),
            share(m.point().load),
            match m.point().compute {
                Some(phi) if m.point().no_static => format!("{} dynamic only", share(phi)),
                Some(phi) => share(phi),
                None => "dense".into(),
            },
            format_bytes(m.weight_bytes),
            format_bytes(m.peak_rss_bytes),
            format!("{:.1}", m.decode_tps),
            format!("{:.2}x", m.speedup),
            format!("{:.4} [{:.4}, {:.4}]", m.quality.kl, m.quality.kl_lo, m.quality.kl_hi),
            format!("{:.1}%", 100.0 * m.quality.same_top),
            format!("{:.2} [{:.2}, {:.2}]", m.quality.answer_ppl, m.quality.ppl_lo, m.quality.ppl_hi),
        ]);
    }
    t.to_markdown()
}

/// Points sorted as the table shows them: gamma down, then phi down (dense
/// first), the paper's selection before dynamic only.
pub fn sort(measured: &mut [Measured]) {
    let key = |m: &Measured| (-m.point().load, -m.point().compute.unwrap_or(2.0), m.point().no_static);
    measured.sort_by(|a, b| {
        let (x, y) = (key(a), key(b));
        x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)).then(x.2.cmp(&y.2))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(load: f64, compute: Option<f64>, rss_mib: u64, speedup: f64, kl: f64) -> Measured {
        let quality = Quality { point: Point::new(load, compute), kl, kl_lo: kl, kl_hi: kl, same_top: 1.0, answer_ppl: 1.0, ppl_lo: 1.0, ppl_hi: 1.0, tokens: 1 };
        Measured { quality, weight_bytes: 0, peak_rss_bytes: rss_mib << 20, decode_tps: 10.0 * speedup, prefill_tps: 0.0, speedup }
    }

    fn frontier() -> Vec<Measured> {
        vec![m(1.0, None, 1300, 1.0, 0.0), m(0.85, Some(0.7), 1250, 0.97, 0.02), m(0.7, Some(0.55), 1210, 1.11, 0.05), m(0.7, Some(0.4), 1200, 1.2, 0.12)]
    }

    #[test]
    fn the_fastest_point_within_every_limit_is_chosen() {
        let f = frontier();
        let limits = |mem: Option<u64>, speed: Option<f64>, loss: f64| Limits { mem_budget: mem.map(|m| m << 20), min_speedup: speed, max_loss: loss };
        assert_eq!(choose(&f, &limits(None, None, 0.06)).unwrap().point(), &Point::new(0.7, Some(0.55)));
        assert_eq!(choose(&f, &limits(None, None, 0.5)).unwrap().point(), &Point::new(0.7, Some(0.4)));
        assert_eq!(choose(&f, &limits(None, None, 0.01)).unwrap().point(), &Point::ANCHOR);
        assert_eq!(choose(&f, &limits(Some(1260), None, 0.03)).unwrap().point(), &Point::new(0.85, Some(0.7)));
    }

    #[test]
    fn a_limit_no_point_meets_names_the_closest() {
        let f = frontier();
        let e = choose(&f, &Limits { mem_budget: None, min_speedup: Some(1.2), max_loss: 0.06 }).unwrap_err().to_string();
        assert!(e.contains("the closest is gamma 0.7 / phi 0.55") && e.contains("decode 1.11x under --min-speedup 1.2"), "{e}");
        let e = choose(&f, &Limits { mem_budget: Some(1000 << 20), min_speedup: None, max_loss: 1.0 }).unwrap_err().to_string();
        assert!(e.contains("gamma 0.7 / phi 0.4") && e.contains("over the budget"), "{e}");
    }

    #[test]
    fn the_table_marks_the_chosen_point() {
        let mut f = frontier();
        f.reverse();
        sort(&mut f);
        assert!(f[0].point().is_anchor());
        let t = table(&f, Some(&Point::new(0.7, Some(0.55))));
        let marked: Vec<&str> = t.lines().filter(|l| l.starts_with("| ->")).collect();
        assert_eq!(marked.len(), 1);
        let cells: Vec<&str> = marked[0].split('|').map(str::trim).collect();
        assert_eq!(&cells[2..4], ["0.7", "0.55"], "{t}");
    }
}
