//! Does tune's measure predict the answers? Joins a tune work folder's points with
//! an experiment's results rows at the same points (the evaluation split, which
//! tune never reads) and compares the two rankings: Spearman's rank correlation of
//! each measure (KL, answer perplexity) with the task score's loss, and its 95%
//! interval from the Fisher transform with Fieller, Hartley and Pearson's (1957)
//! variance 1.06 / (n - 3). Beside them, the scores' own rank stability: how far
//! the points' scores on a bootstrap resample of the examples keep the ranking of
//! their scores on all of them, about what any measure can reach, on average, against
//! scores of that many examples ([`rank_stability`]).

use anyhow::{bail, ensure};

use super::grid::{share, Point};
use super::store::Quality;
use crate::eval::bootstrap::{resamples, Interval, Metric, PerExample, RESAMPLES, SEED};
use crate::eval::method::Method;
use crate::eval::row::EvalRow;
use crate::experiment::config::Experiment;
use crate::experiment::report::model_label;
use crate::output::Table;
use crate::tasks::Task;

/// One point measured both ways.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Joined {
    pub point: Point,
    pub kl: f64,
    pub kl_lo: f64,
    pub kl_hi: f64,
    pub answer_ppl: f64,
    /// The task's primary score on the evaluation split, with its interval.
    pub score: f64,
    pub score_lo: Option<f64>,
    pub score_hi: Option<f64>,
    /// Examples the score is over.
    pub examples: usize,
    /// The score's paired difference to the anchor's on the same examples, where
    /// the experiment's outputs give it.
    #[serde(skip)]
    pub delta: Option<Interval>,
}

/// A results row and, where the experiment's outputs give it, its primary score's
/// paired difference to the anchor (the reference file) on the same examples.
#[derive(Debug, Clone)]
pub struct Scored {
    pub row: EvalRow,
    pub delta: Option<Interval>,
    /// The primary score's per-example statistics, where the outputs give them.
    pub per_example: Option<PerExample>,
}

/// A rank correlation with its 95% interval (none below 4 points).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Correlation {
    pub rho: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub n: usize,
}

/// The check of one task.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub task: Task,
    pub metric: &'static str,
    pub points: Vec<Joined>,
    /// Spearman of KL with the score's loss (1: the same order).
    pub kl: Correlation,
    /// Spearman of answer perplexity with the score's loss.
    pub answer_ppl: Correlation,
    /// The scores' own rank stability ([`rank_stability`]), where every joined
    /// row's outputs give its per-example statistics over the same examples.
    pub score_stability: Option<f64>,
    /// The points tune chooses under the limits asked for ([`super::promise`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<super::promise::Choice>,
}

/// The tune point a results row measured: the reference file is the anchor, a
/// dense-loaded slice a point without phi, a SelectInfer slice one with it. Rows
/// of other methods have none.
pub fn row_point(row: &EvalRow) -> Option<Point> {
    match Method::from_name(&row.method)? {
        Method::Reference => Some(Point::ANCHOR),
        Method::DenseLoaded => Some(Point::new(row.load, None)),
        Method::Selectinfer => Some(Point::new(row.load, row.compute)),
        _ => None,
    }
}

/// The rows of one experiment model: `name`, or the experiment's only model. Rows
/// are told apart by the file they ran ([`model_label`]).
pub fn rows_of_model(e: &Experiment, rows: Vec<Scored>, name: Option<&str>) -> anyhow::Result<Vec<Scored>> {
    let names: Vec<&str> = e.models.iter().map(|m| m.name.as_str()).collect();
    let name = match (name, names.as_slice()) {
        (Some(n), _) => {
            ensure!(names.contains(&n), "the experiment has no model {n:?} (it has {})", names.join(", "));
            n
        }
        (None, [only]) => only,
        (None, _) => bail!("the experiment has {} models ({}); name the tuned one with --model", names.len(), names.join(", ")),
    };
    Ok(rows.into_iter().filter(|r| model_label(e, &r.row) == name).collect())
}

/// Keeps the anchor rows and the slice rows of selection `variant` (the results'
/// `variant` column: `base=q4_k_m,down=neurons`, or empty for the paper's
/// selection of an F16 slice).
pub fn rows_of_variant(rows: Vec<Scored>, variant: &str) -> Vec<Scored> {
    rows.into_iter().filter(|r| r.row.method == Method::Reference.name() || r.row.variant == variant).collect()
}

/// The one file and selection that `candidates` (rows of one task at one point)
/// ran, or an error naming them when they are several: a tune measures one file,
/// and its points are joined with rows of that file only.
fn one_file<'a>(candidates: &[&'a Scored], point: &Point) -> anyhow::Result<Option<&'a Scored>> {
    let mut kinds: Vec<(&str, &str)> = candidates.iter().map(|r| (r.row.model.as_str(), r.row.variant.as_str())).collect();
    kinds.sort_unstable();
    kinds.dedup();
    if kinds.len() > 1 {
        let list: Vec<String> = kinds.iter().map(|(m, v)| if v.is_empty() { m.to_string() } else { format!("{m} [{v}]") }).collect();
        bail!(
            "the results hold rows of {} files or selections at {point}: {}; give --experiment with --model for the tuned file, or --variant for its selection",
            kinds.len(),
            list.join(", ")
        );
    }
    // The last row of a point wins, as in the experiment's report.
    Ok(candidates.last().copied())
}

/// Joins `qualities` with the `task` rows of `rows` at the same points and ranks
/// them. Rows at one point must all be of one file and selection ([`one_file`]).
pub fn check(qualities: &[Quality], rows: &[Scored], task: Task) -> anyhow::Result<Check> {
    let metric = Metric::primary(task);
    let (mut seen, mut points, mut stats): (Vec<Point>, Vec<Joined>, Vec<Option<&PerExample>>) = (Vec::new(), Vec::new(), Vec::new());
    // Newest first: a point measured again is joined by its latest quality.
    for q in qualities.iter().rev() {
        if seen.iter().any(|p| p.same(&q.point)) {
            continue;
        }
        seen.push(q.point);
        let candidates: Vec<&Scored> = rows.iter().filter(|r| r.row.task == task.name() && row_point(&r.row).is_some_and(|p| p.same(&q.point))).collect();
        let Some(scored) = one_file(&candidates, &q.point)? else { continue };
        let row = &scored.row;
        let Some(score) = row.score(metric) else { continue };
        let (score_lo, score_hi) = row.interval(metric).map_or((None, None), |iv| (Some(iv.lo), Some(iv.hi)));
        let delta = scored.delta.filter(|_| !q.point.is_anchor());
        points.push(Joined { point: q.point, kl: q.kl, kl_lo: q.kl_lo, kl_hi: q.kl_hi, answer_ppl: q.answer_ppl, score, score_lo, score_hi, examples: row.examples, delta });
        stats.push(scored.per_example.as_ref());
    }
    ensure!(points.len() >= 3, "only {} tuned points have a {} row at the same gamma and phi; a rank correlation needs 3 or more", points.len(), task.name());
    let score_stability = stats.into_iter().collect::<Option<Vec<_>>>().and_then(|s| rank_stability(&s));
    points.sort_by(|a, b| a.kl.total_cmp(&b.kl));
    let loss: Vec<f64> = points.iter().map(|j| -j.score).collect();
    let of = |xs: Vec<f64>| correlation(&xs, &loss);
    Ok(Check {
        task,
        metric: metric.label(),
        kl: of(points.iter().map(|j| j.kl).collect()),
        answer_ppl: of(points.iter().map(|j| j.answer_ppl).collect()),
        score_stability,
        points,
        choices: Vec::new(),
    })
}

/// The mean Spearman of the points' scores on a bootstrap resample of their
/// examples (the same resample for every point, [`RESAMPLES`] of them) with their
/// scores on all examples: how well the measured scores keep their own ranking
/// when the examples are drawn again. The measured scores stand to their
/// expectations about as a resample's stand to the measured ones, so a measure that
/// ranked the points exactly by their expected scores would reach about this much
/// against the measured ones, on average: a rank correlation well below 1 with
/// scores whose stability is low says little about the measure. `None` unless 3 or more points share one example count.
pub fn rank_stability(stats: &[&PerExample]) -> Option<f64> {
    let n = stats.first()?.len();
    if stats.len() < 3 || n < 2 || stats.iter().any(|s| s.len() != n) {
        return None;
    }
    let observed: Vec<f64> = stats.iter().map(|s| s.score()).collect();
    let rhos: Vec<f64> = resamples(n, RESAMPLES, SEED)
        .iter()
        .map(|set| spearman(&stats.iter().map(|s| s.score_of(set)).collect::<Vec<_>>(), &observed))
        .filter(|r| r.is_finite())
        .collect();
    (!rhos.is_empty()).then(|| rhos.iter().sum::<f64>() / rhos.len() as f64)
}

/// Spearman's rho of `x` and `y` with its 95% Fisher-transform interval.
pub fn correlation(x: &[f64], y: &[f64]) -> Correlation {
    let (rho, n) = (spearman(x, y), x.len());
    let (lo, hi) = if n > 3 && rho.abs() < 1.0 {
        let (z, se) = (rho.atanh(), (1.06 / (n as f64 - 3.0)).sqrt());
        (Some((z - 1.96 * se).tanh()), Some((z + 1.96 * se).tanh()))
    } else {
        (None, None)
    };
    Correlation { rho, lo, hi, n }
}

/// Spearman's rank correlation: Pearson's of the ranks, ties given their mean rank.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "spearman needs paired values");
    pearson(&ranks(x), &ranks(y))
}

/// 1-based ranks, ties averaged.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let j = (i..order.len()).take_while(|&j| v[order[j]] == v[order[i]]).last().expect("i itself");
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = mean;
        }
        i = j + 1;
    }
    r
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let (vx, vy): (f64, f64) = (x.iter().map(|a| (a - mx).powi(2)).sum(), y.iter().map(|b| (b - my).powi(2)).sum());
    cov / (vx * vy).sqrt()
}

/// The check as Markdown: the joined points, then the two correlations.
pub fn report(c: &Check) -> String {
    let mut t = Table::new(["gamma".to_string(), "phi".into(), "KL [95% CI]".into(), "answer ppl".into(), format!("{} [95% CI]", c.metric), "examples".into()]);
    for j in &c.points {
        let ci = match (j.score_lo, j.score_hi) {
            (Some(lo), Some(hi)) => format!(" [{lo:.1}, {hi:.1}]"),
            _ => String::new(),
        };
        t.row(vec![
            share(j.point.load),
            j.point.compute.map_or("-".into(), share),
            format!("{:.4} [{:.4}, {:.4}]", j.kl, j.kl_lo, j.kl_hi),
            format!("{:.3}", j.answer_ppl),
            format!("{:.1}{ci}", j.score),
            j.examples.to_string(),
        ]);
    }
    let line = |name: &str, r: &Correlation| match (r.lo, r.hi) {
        (Some(lo), Some(hi)) => format!("- Spearman of {name} with the {} loss: {:.2} [{lo:.2}, {hi:.2}] over {} points\n", c.metric, r.rho, r.n),
        _ => format!("- Spearman of {name} with the {} loss: {:.2} over {} points (no interval)\n", c.metric, r.rho, r.n),
    };
    let mut text = format!("{}\n{}{}", t.to_markdown(), line("KL", &c.kl), line("answer perplexity", &c.answer_ppl));
    if let Some(r) = c.score_stability {
        let n = c.points.first().map_or(0, |j| j.examples);
        text += &format!(
            "- The {metric} scores' own rank stability: {r:.2} (the mean Spearman of the points' {metric} on a bootstrap resample of the {n} examples with their {metric} on all of them): about what a measure that ranked the points by their expected {metric} would reach against these scores\n",
            metric = c.metric
        );
    }
    if !c.choices.is_empty() {
        text += &format!("\nThe point tune chooses under each set of limits, scored on the evaluation split:\n\n{}", super::promise::report(&c.choices, c.metric));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_equals_scipys() {
        // scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]).statistic
        assert!((spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5.0, 6.0, 7.0, 8.0, 7.0]) - 0.820_782_681_668_123_3).abs() < 1e-12);
        // scipy.stats.spearmanr([0.1, 0.4, 0.2, 0.9], [3, 1, 2, 0]).statistic
        assert!((spearman(&[0.1, 0.4, 0.2, 0.9], &[3.0, 1.0, 2.0, 0.0]) + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[2.0, 1.0, 2.0, 3.0]), vec![2.5, 1.0, 2.5, 4.0]);
    }

    #[test]
    fn rank_stability_keeps_paired_orders_and_not_noise() {
        // Points apart by a constant on every example keep their order on every
        // resample, however much the examples differ from each other (the resample is
        // the same for every point).
        let base: Vec<f64> = (0..30).map(|i| (i * 37 % 11) as f64 / 20.0).collect();
        let shifted: Vec<PerExample> = (0..4).map(|k| PerExample::Mean(base.iter().map(|b| b + 0.01 * k as f64).collect())).collect();
        assert_eq!(rank_stability(&shifted.iter().collect::<Vec<_>>()), Some(1.0));
        // Points of equal means whose examples disagree: a resample reorders them.
        let noise: Vec<PerExample> = (0..6).map(|k| PerExample::Mean((0..30).map(|i| ((i * (k + 3) * 7919) % 13) as f64 / 13.0).collect())).collect();
        let r = rank_stability(&noise.iter().collect::<Vec<_>>()).unwrap();
        assert!(r > 0.0 && r < 0.8, "{r}");
        // Equal scores everywhere have no ranking to keep; unequal example counts none to compare.
        let flat: Vec<PerExample> = (0..3).map(|_| PerExample::Mean(vec![0.5; 10])).collect();
        assert_eq!(rank_stability(&flat.iter().collect::<Vec<_>>()), None);
        let short = PerExample::Mean(vec![0.5; 9]);
        assert_eq!(rank_stability(&[&shifted[0], &shifted[1], &short]), None);
    }

    #[test]
    fn the_interval_is_fishers_with_fieller_variance() {
        let c = correlation(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[1.0, 3.0, 2.0, 4.0, 5.0, 7.0, 6.0, 8.0]);
        // Two swapped pairs: sum d^2 = 4, rho = 1 - 6 * 4 / (8 * 63); z = atanh(rho), se = sqrt(1.06 / 5).
        assert!((c.rho - (1.0 - 24.0 / 504.0)).abs() < 1e-12);
        let (z, se) = (c.rho.atanh(), (1.06f64 / 5.0).sqrt());
        assert!((c.lo.unwrap() - (z - 1.96 * se).tanh()).abs() < 1e-12 && (c.hi.unwrap() - (z + 1.96 * se).tanh()).abs() < 1e-12);
        assert!(c.lo.unwrap() < c.rho && c.rho < c.hi.unwrap());
    }
}
