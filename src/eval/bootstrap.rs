//! 95% confidence intervals of task scores, by bootstrap over examples.
//!
//! Sits between the metrics ([`super::metrics`]) and the rows that report them:
//! the harness scores a cell's outputs through [`task_intervals`], and the
//! experiment report pairs two cells' outputs through [`paired`].
//!
//! - A score is computed from per-example statistics ([`PerExample`]): the mean of
//!   per-example scores for SQuAD EM / F1 and ROUGE-1/2/L, and for corpus BLEU and
//!   chrF the corpus statistic of the summed sufficient statistics
//!   ([`BleuStats`], [`ChrfStats`]), as sacrebleu's bootstrap re-scores a resample
//!   from its rows of statistics.
//! - [`RESAMPLES`] = 1000 resamples of the n examples, drawn with replacement by a
//!   [`SplitMix64`] seeded with [`SEED`] (12345, sacrebleu's default
//!   `SACREBLEU_SEED`; the draws themselves differ from numpy's). The index sets
//!   depend only on n and the seed, so every cell with n examples is resampled
//!   alike, and a paired difference uses the same sets for both cells.
//! - The interval is the percentile interval of the resampled scores, with
//!   sacrebleu's `estimate_ci` positions: the values at ranks `R/40` and
//!   `R - R/40 - 1` of the R sorted scores (the 26th smallest and largest of 1000).
//!   sacrebleu prints this interval as mean ± half its width; we keep both ends.
//! - [`paired`]: the difference of a method to a baseline on the same examples, as
//!   sacrebleu's paired bootstrap: both are scored on each resample set and the
//!   interval is taken over the differences. The point is the difference of the
//!   full-sample scores. An interval that excludes 0 means the difference is larger
//!   than resampling the examples explains.

use super::metrics::{
    bleu_from_stats, bleu_segment, check_corpus, chrf_add, chrf_from_stats, chrf_segment, rouge_max, squad_exact_match, squad_f1, BleuStats,
    ChrfStats, MetricError, CHRF_CHAR_ORDER,
};
use crate::util::rng::SplitMix64;
use crate::tasks::Task;

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 1000;
/// Seed of the resample draws (sacrebleu's default `SACREBLEU_SEED`).
pub const SEED: u64 = 12345;

/// A task score, named by its results column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// SQuAD exact match.
    Em,
    /// SQuAD F1.
    F1,
    /// sacrebleu BLEU.
    Bleu,
    /// sacrebleu chrF.
    Chrf,
    /// ROUGE-1 F.
    Rouge1,
    /// ROUGE-2 F.
    Rouge2,
    /// ROUGE-L F.
    RougeL,
}

impl Metric {
    /// The scores of a task, in column order.
    pub fn of_task(task: Task) -> &'static [Metric] {
        match task {
            Task::Qa => &[Metric::Em, Metric::F1],
            Task::Translate => &[Metric::Bleu, Metric::Chrf],
            Task::Summarize => &[Metric::Rouge1, Metric::Rouge2, Metric::RougeL],
        }
    }

    /// The score a task is compared by first (plots, headline tables): qa F1,
    /// translate BLEU, summarize ROUGE-L.
    pub const fn primary(task: Task) -> Metric {
        match task {
            Task::Qa => Metric::F1,
            Task::Translate => Metric::Bleu,
            Task::Summarize => Metric::RougeL,
        }
    }

    /// The name in tables.
    pub const fn label(self) -> &'static str {
        match self {
            Metric::Em => "EM",
            Metric::F1 => "F1",
            Metric::Bleu => "BLEU",
            Metric::Chrf => "chrF",
            Metric::Rouge1 => "ROUGE-1",
            Metric::Rouge2 => "ROUGE-2",
            Metric::RougeL => "ROUGE-L",
        }
    }
}

/// What a score is computed from, one entry per example.
#[derive(Debug, Clone, PartialEq)]
pub enum PerExample {
    /// Per-example scores in 0..1; the score is 100 x their mean.
    Mean(Vec<f64>),
    /// Per-sentence BLEU statistics; the score is corpus BLEU of their sum.
    Bleu(Vec<BleuStats>),
    /// Per-sentence chrF statistics; the score is corpus chrF of their sum.
    Chrf(Vec<ChrfStats>),
}

impl PerExample {
    /// Number of examples.
    pub fn len(&self) -> usize {
        match self {
            PerExample::Mean(v) => v.len(),
            PerExample::Bleu(v) => v.len(),
            PerExample::Chrf(v) => v.len(),
        }
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The score of the examples at `idx` (repeats count again), 0..100.
    pub fn score_of(&self, idx: &[usize]) -> f64 {
        match self {
            PerExample::Mean(v) => 100.0 * idx.iter().map(|&i| v[i]).sum::<f64>() / idx.len() as f64,
            PerExample::Bleu(v) => {
                let mut sum = BleuStats::default();
                idx.iter().for_each(|&i| sum += &v[i]);
                bleu_from_stats(&sum).score
            }
            PerExample::Chrf(v) => {
                let mut sum = [[0; 3]; CHRF_CHAR_ORDER];
                idx.iter().for_each(|&i| chrf_add(&mut sum, &v[i]));
                chrf_from_stats(&sum)
            }
        }
    }

    /// The score of all examples: the metric itself.
    pub fn score(&self) -> f64 {
        self.score_of(&(0..self.len()).collect::<Vec<_>>())
    }
}

/// The per-example statistics of every score of `task` (in [`Metric::of_task`]
/// order); `references[i]` holds the references of `predictions[i]`.
pub fn per_example<P: AsRef<str>, R: AsRef<[String]>>(task: Task, predictions: &[P], references: &[R]) -> Result<Vec<(Metric, PerExample)>, MetricError> {
    check_corpus(predictions, references)?;
    let pairs = || predictions.iter().map(|p| p.as_ref()).zip(references.iter().map(|r| r.as_ref()));
    Ok(match task {
        Task::Qa => vec![
            (Metric::Em, PerExample::Mean(pairs().map(|(p, r)| squad_exact_match(p, r)).collect())),
            (Metric::F1, PerExample::Mean(pairs().map(|(p, r)| squad_f1(p, r)).collect())),
        ],
        Task::Translate => vec![
            (Metric::Bleu, PerExample::Bleu(pairs().map(|(p, r)| bleu_segment(p, r)).collect())),
            (Metric::Chrf, PerExample::Chrf(pairs().map(|(p, r)| chrf_segment(p, r)).collect())),
        ],
        Task::Summarize => {
            let per: Vec<_> = pairs().map(|(p, r)| rouge_max(p, r)).collect::<Result<_, _>>()?;
            vec![
                (Metric::Rouge1, PerExample::Mean(per.iter().map(|s| s.rouge1.fmeasure).collect())),
                (Metric::Rouge2, PerExample::Mean(per.iter().map(|s| s.rouge2.fmeasure).collect())),
                (Metric::RougeL, PerExample::Mean(per.iter().map(|s| s.rouge_l.fmeasure).collect())),
            ]
        }
    })
}

/// `count` resamples of `n` example indices, drawn with replacement.
pub fn resamples(n: usize, count: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    // Multiply-shift maps 64 random bits to 0..n (bias below n / 2^64).
    (0..count).map(|_| (0..n).map(|_| ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize).collect()).collect()
}

/// A score (or difference) with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The full-sample value.
    pub point: f64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

impl Interval {
    /// Whether 0 lies outside the interval.
    pub fn excludes_zero(&self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }
}

/// The 95% percentile interval of bootstrap values, at sacrebleu's ranks.
fn percentile_interval(point: f64, mut values: Vec<f64>) -> Interval {
    values.sort_by(f64::total_cmp);
    let k = values.len() / 40;
    Interval { point, lo: values[k], hi: values[values.len() - k - 1] }
}

/// The interval of `m`'s score over the resample sets `sets`.
pub fn bootstrap(m: &PerExample, sets: &[Vec<usize>]) -> Interval {
    percentile_interval(m.score(), sets.iter().map(|s| m.score_of(s)).collect())
}

/// The paired interval of `system - baseline` over the resample sets `sets`; both
/// must hold the same examples in the same order.
pub fn paired(system: &PerExample, baseline: &PerExample, sets: &[Vec<usize>]) -> Result<Interval, MetricError> {
    if system.len() != baseline.len() {
        return Err(MetricError::LengthMismatch { predictions: system.len(), references: baseline.len() });
    }
    let deltas = sets.iter().map(|s| system.score_of(s) - baseline.score_of(s)).collect();
    Ok(percentile_interval(system.score() - baseline.score(), deltas))
}

/// Every score of `task` with its 95% interval ([`RESAMPLES`] resamples, [`SEED`]).
pub fn task_intervals<P: AsRef<str>, R: AsRef<[String]>>(task: Task, predictions: &[P], references: &[R]) -> Result<Vec<(Metric, Interval)>, MetricError> {
    let stats = per_example(task, predictions, references)?;
    let sets = resamples(predictions.len(), RESAMPLES, SEED);
    Ok(stats.iter().map(|(m, s)| (*m, bootstrap(s, &sets))).collect())
}

/// Every paired difference `system - baseline` of `task`, on the same examples
/// (`references` shared), with its 95% interval.
pub fn paired_intervals<P: AsRef<str>, R: AsRef<[String]>>(task: Task, system: &[P], baseline: &[P], references: &[R]) -> Result<Vec<(Metric, Interval)>, MetricError> {
    let sys = per_example(task, system, references)?;
    let base = per_example(task, baseline, references)?;
    let sets = resamples(references.len(), RESAMPLES, SEED);
    sys.iter().zip(&base).map(|((m, s), (_, b))| paired(s, b, &sets).map(|iv| (*m, iv))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::metrics::{corpus_bleu, corpus_chrf, rouge_mean, squad_corpus};

    fn refs(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect()
    }

    const HYPS: [&str; 5] = ["The cat sat on the mat.", "A dog barked at night", "", "He went home early today.", "It is raining in Berlin"];

    fn translate_refs() -> Vec<Vec<String>> {
        refs(&[&["The cat sat on the mat."], &["The dog barked all night."], &["Nothing here."], &["He went home early."], &["It rains in Berlin.", "It is raining in Berlin."]])
    }

    #[test]
    fn the_point_estimate_is_the_metric() {
        let qa_refs = refs(&[&["Denver Broncos", "Broncos"], &["Paris"], &["1848"], &["the river Rhine"], &["blue"]]);
        let qa = ["Broncos", "Paris, France", "in 1848", "Rhine", "red"];
        let got = task_intervals(Task::Qa, &qa, &qa_refs).unwrap();
        let want = squad_corpus(&qa, &qa_refs).unwrap();
        assert_eq!((got[0].0, got[0].1.point), (Metric::Em, want.exact_match));
        assert_eq!((got[1].0, got[1].1.point), (Metric::F1, want.f1));

        let tr_refs = translate_refs();
        let got = task_intervals(Task::Translate, &HYPS, &tr_refs).unwrap();
        assert_eq!(got[0].1.point, corpus_bleu(&HYPS, &tr_refs).unwrap().score);
        assert_eq!(got[1].1.point, corpus_chrf(&HYPS, &tr_refs).unwrap());

        let docs = refs(&[&["the cat runs fast"], &["a storm hit the coast"], &["prices rose again"]]);
        let sums = ["The cats were running.", "storm hits coast", "nothing"];
        let got = task_intervals(Task::Summarize, &sums, &docs).unwrap();
        let per: Vec<_> = sums.iter().zip(&docs).map(|(p, r)| rouge_max(p, r).unwrap()).collect();
        let m = rouge_mean(&per).unwrap();
        for ((metric, iv), want) in got.iter().zip([m.rouge1, m.rouge2, m.rouge_l]) {
            assert!((iv.point - 100.0 * want.fmeasure).abs() < 1e-9, "{metric:?}");
            assert!(iv.lo <= iv.point && iv.point <= iv.hi, "{metric:?} {iv:?}");
        }
    }

    /// The interval of a mean against the exact bootstrap distribution, enumerated
    /// over all 5^5 equally likely index tuples.
    #[test]
    fn a_mean_interval_matches_the_enumerated_bootstrap_distribution() {
        let v = [0.0, 0.2, 0.5, 0.7, 1.0];
        let mut exact: Vec<f64> = Vec::new();
        for code in 0..5usize.pow(5) {
            let (mut c, mut sum) = (code, 0.0);
            for _ in 0..5 {
                sum += v[c % 5];
                c /= 5;
            }
            exact.push(100.0 * sum / 5.0);
        }
        exact.sort_by(f64::total_cmp);
        let quantile = |q: f64| exact[((q * exact.len() as f64) as usize).min(exact.len() - 1)];
        let iv = bootstrap(&PerExample::Mean(v.to_vec()), &resamples(5, RESAMPLES, SEED));
        assert!((iv.point - 48.0).abs() < 1e-12);
        // 1000 draws put the 2.5% rank within about 1.5 points of probability.
        assert!(quantile(0.010) <= iv.lo && iv.lo <= quantile(0.040), "lo {} vs exact {}..{}", iv.lo, quantile(0.010), quantile(0.040));
        assert!(quantile(0.960) <= iv.hi && iv.hi <= quantile(0.990), "hi {} vs exact {}..{}", iv.hi, quantile(0.960), quantile(0.990));
        // And the draws are uniform: each index about 1/5 of all draws.
        let sets = resamples(5, RESAMPLES, SEED);
        for i in 0..5 {
            let share = sets.iter().flatten().filter(|&&j| j == i).count() as f64 / 5000.0;
            assert!((share - 0.2).abs() < 0.02, "index {i}: {share}");
        }
    }

    /// Scoring a resample from summed statistics equals scoring the resampled
    /// corpus from scratch (a different code path: tokenizing again per resample).
    #[test]
    fn corpus_scores_of_resamples_equal_the_metric_on_the_resampled_corpus() {
        let tr_refs = translate_refs();
        let stats = per_example(Task::Translate, &HYPS, &tr_refs).unwrap();
        for set in resamples(HYPS.len(), 40, 7) {
            let hyps: Vec<&str> = set.iter().map(|&i| HYPS[i]).collect();
            let rs: Vec<Vec<String>> = set.iter().map(|&i| tr_refs[i].clone()).collect();
            assert_eq!(stats[0].1.score_of(&set), corpus_bleu(&hyps, &rs).unwrap().score, "{set:?}");
            assert_eq!(stats[1].1.score_of(&set), corpus_chrf(&hyps, &rs).unwrap(), "{set:?}");
        }
    }

    #[test]
    fn paired_differences_use_the_same_examples() {
        let sys = PerExample::Mean(vec![1.0, 0.5, 0.0, 1.0, 0.8, 0.3]);
        let base = PerExample::Mean(vec![0.5, 0.5, 0.2, 0.0, 0.9, 0.3]);
        let sets = resamples(6, RESAMPLES, SEED);
        let d = paired(&sys, &base, &sets).unwrap();
        // For a mean, the paired difference is the bootstrap of per-example differences.
        let diffs = PerExample::Mean(vec![0.5, 0.0, -0.2, 1.0, -0.1, 0.0]);
        let want = bootstrap(&diffs, &sets);
        for (a, b) in [(d.point, want.point), (d.lo, want.lo), (d.hi, want.hi)] {
            assert!((a - b).abs() < 1e-9, "{d:?} vs {want:?}");
        }
        let same = paired(&sys, &sys, &sets).unwrap();
        assert_eq!((same.point, same.lo, same.hi), (0.0, 0.0, 0.0));
        assert!(!same.excludes_zero());
        assert!(paired(&sys, &PerExample::Mean(vec![0.0]), &sets).is_err());

        // A system that beats the baseline on every sentence: the interval excludes 0.
        let tr_refs = translate_refs();
        let refs_only: Vec<&str> = tr_refs.iter().map(|r| r[0].as_str()).collect();
        let got = paired_intervals(Task::Translate, &refs_only, &HYPS, &tr_refs).unwrap();
        assert!(got.iter().all(|(_, iv)| iv.point > 0.0 && iv.excludes_zero()), "{got:?}");
    }

    #[test]
    fn resamples_are_seeded() {
        assert_eq!(resamples(9, 3, SEED), resamples(9, 3, SEED));
        assert_ne!(resamples(9, 3, SEED), resamples(9, 3, SEED + 1));
        assert!(resamples(9, 50, SEED).iter().flatten().all(|&i| i < 9));
    }
}
