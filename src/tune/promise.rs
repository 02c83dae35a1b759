//! The tuner's promise on data it never saw: for each set of limits, the point
//! `tune` chooses from its frontier (the profiling split) and what the evaluation
//! split says of that point: its score and the paired difference to the dense
//! file. Where no point meets the limits, the closest one is shown, so that a
//! refusal can be checked as well.

use super::check::Joined;
use super::frontier::{self, Limits, Measured};
use super::grid::{share, Point};
use crate::output::{format_bytes, Table};

/// One set of limits and the point chosen under it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Choice {
    pub mem_budget: Option<u64>,
    pub min_speedup: Option<f64>,
    pub max_loss: f64,
    pub point: Point,
    /// The point meets the limits; false: none does and this is the closest.
    pub meets: bool,
    pub kl: f64,
    pub speedup: f64,
    pub peak_rss_bytes: u64,
    /// Its primary score on the evaluation split, if the results hold its row.
    pub score: Option<f64>,
    /// The score's paired difference to the dense file's, with its 95% interval.
    pub delta: Option<f64>,
    pub delta_lo: Option<f64>,
    pub delta_hi: Option<f64>,
}

/// The choice under each of `limits` from `frontier` (tune's rule,
/// [`frontier::choose`]), joined with the evaluation split's `points`.
pub fn choices(frontier: &[Measured], points: &[Joined], limits: &[Limits]) -> Vec<Choice> {
    limits
        .iter()
        .filter_map(|l| {
            let (m, meets) = match frontier::choose(frontier, l) {
                Ok(m) => (m, true),
                Err(_) => (frontier.iter().min_by(|a, b| l.excess(a).total_cmp(&l.excess(b)))?, false),
            };
            let joined = points.iter().find(|j| j.point.same(m.point()));
            let delta = joined.and_then(|j| j.delta);
            Some(Choice {
                mem_budget: l.mem_budget,
                min_speedup: l.min_speedup,
                max_loss: l.max_loss,
                point: *m.point(),
                meets,
                kl: m.quality.kl,
                speedup: m.speedup,
                peak_rss_bytes: m.peak_rss_bytes,
                score: joined.map(|j| j.score),
                delta: delta.map(|d| d.point),
                delta_lo: delta.map(|d| d.lo),
                delta_hi: delta.map(|d| d.hi),
            })
        })
        .collect()
}

/// The choices as Markdown: one row per set of limits.
pub fn report(choices: &[Choice], metric: &str) -> String {
    let mut t = Table::new(["--mem-budget".to_string(), "--min-speedup".into(), "--max-loss".into(), "chosen gamma / phi".into(), "KL".into(), "decode".into(), "peak RSS".into(), metric.to_string(), format!("Δ {metric} vs the dense file [95% CI]")]);
    for c in choices {
        let point = format!("{} / {}", share(c.point.load), c.point.compute.map_or("dense".into(), share));
        let delta = match (c.delta, c.delta_lo, c.delta_hi) {
            (Some(d), Some(lo), Some(hi)) => format!("{d:+.1} [{lo:+.1}, {hi:+.1}]{}", if lo > 0.0 || hi < 0.0 { " *" } else { "" }),
            _ if c.point.is_anchor() => "0 (the file itself)".into(),
            _ => "-".into(),
        };
        t.row(vec![
            c.mem_budget.map_or("-".into(), format_bytes),
            c.min_speedup.map_or("-".into(), |s| format!("{s}")),
            format!("{}", c.max_loss),
            if c.meets { point } else { format!("none meets; closest {point}") },
            format!("{:.3}", c.kl),
            format!("{:.2}x", c.speedup),
            format_bytes(c.peak_rss_bytes),
            c.score.map_or("-".into(), |s| format!("{s:.1}")),
            delta,
        ]);
    }
    format!("{}\n`*`: the interval excludes 0, a difference beyond the noise of the evaluation examples.\n", t.to_markdown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::bootstrap::Interval;
    use crate::tune::store::Quality;

    fn measured(load: f64, compute: Option<f64>, kl: f64, speedup: f64, peak: u64) -> Measured {
        let quality = Quality { point: Point::new(load, compute), kl, kl_lo: kl, kl_hi: kl, same_top: 1.0, answer_ppl: 1.0, ppl_lo: 1.0, ppl_hi: 1.0, tokens: 1 };
        Measured { quality, weight_bytes: peak, peak_rss_bytes: peak, decode_tps: speedup, prefill_tps: 1.0, speedup }
    }

    fn joined(m: &Measured, score: f64, delta: Option<Interval>) -> Joined {
        let q = &m.quality;
        Joined { point: q.point, kl: q.kl, kl_lo: q.kl, kl_hi: q.kl, answer_ppl: 1.0, score, score_lo: None, score_hi: None, examples: 40, delta }
    }

    #[test]
    fn each_budget_gets_tunes_choice_or_the_closest_point_with_its_evaluation_delta() {
        let f = [measured(1.0, None, 0.0, 1.0, 1300), measured(0.85, Some(0.7), 0.1, 1.1, 1150), measured(0.7, Some(0.4), 0.5, 1.3, 1050)];
        let d = Interval { point: -0.8, lo: -3.7, hi: 2.3 };
        let pts = [joined(&f[0], 28.3, None), joined(&f[1], 27.5, Some(d)), joined(&f[2], 13.6, Some(Interval { point: -14.8, lo: -20.5, hi: -8.3 }))];
        let l = |b: Option<u64>| Limits { mem_budget: b, min_speedup: None, max_loss: 0.15 };
        let c = choices(&f, &pts, &[l(None), l(Some(1200)), l(Some(1100)), Limits { max_loss: 1.0, ..l(Some(1100)) }]);
        // No budget: the fastest within KL 0.15 is 0.85 / 0.7; 1200 allows it too.
        assert_eq!((c[0].point, c[0].meets, c[0].delta), (Point::new(0.85, Some(0.7)), true, Some(-0.8)));
        assert_eq!((c[1].point, c[1].meets), (c[0].point, true));
        // 1100: 0.7 / 0.4 fits the memory but not the loss; the closest is 0.85 / 0.7
        // (4.5% over the budget), not met.
        assert_eq!((c[2].point, c[2].meets), (c[0].point, false));
        // With a loss it meets, 0.7 / 0.4 is chosen and its evaluation loss shows.
        assert_eq!((c[3].point, c[3].meets, c[3].delta_lo), (Point::new(0.7, Some(0.4)), true, Some(-20.5)));
        let md = report(&c, "BLEU");
        assert!(md.contains("| none meets; closest 0.85 / 0.7 ") && md.contains("| -14.8 [-20.5, -8.3] * ") && md.contains("| -0.8 [-3.7, +2.3] "), "{md}");
    }
}
