//! rouge-score ROUGE-1/2/L F-measures with the Porter stemmer (`use_stemmer=True`).

use super::porter::porter_stem;
use super::{clipped_overlap, count_ngrams, MetricError};

/// Precision, recall and F-measure of one ROUGE variant (rouge-score's `Score`), 0..1.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RougeScore {
    /// Matches over prediction units.
    pub precision: f64,
    /// Matches over reference units.
    pub recall: f64,
    /// Harmonic mean of precision and recall (the number papers report).
    pub fmeasure: f64,
}

/// ROUGE-1, ROUGE-2 and ROUGE-L of one prediction (or their means).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RougeScores {
    /// Unigram overlap.
    pub rouge1: RougeScore,
    /// Bigram overlap.
    pub rouge2: RougeScore,
    /// Longest common subsequence (sentence-level, rouge-score's `rougeL`).
    pub rouge_l: RougeScore,
}

/// rouge-score's default tokenizer with `use_stemmer=True`
/// (`rouge_score.tokenize.tokenize`): lowercase, every run of characters other
/// than `[a-z0-9]` separates tokens, tokens longer than 3 characters go through
/// NLTK's Porter stemmer ([`porter_stem`]).
pub fn rouge_tokenize(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(|t| if t.len() > 3 { porter_stem(t) } else { t.to_string() })
        .filter(|t| !t.is_empty())
        .collect()
}

/// rouge-score's `scoring.fmeasure`.
fn rouge_fmeasure(precision: f64, recall: f64) -> f64 {
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

/// rouge-score's `_score_ngrams` on `_create_ngrams(tokens, n)`.
fn rouge_n(reference: &[String], prediction: &[String], n: usize) -> RougeScore {
    let ref_counts = count_ngrams(reference, n);
    let pred_counts = count_ngrams(prediction, n);
    let overlap = clipped_overlap(&ref_counts, &pred_counts) as f64;
    let precision = overlap / pred_counts.values().sum::<u64>().max(1) as f64;
    let recall = overlap / ref_counts.values().sum::<u64>().max(1) as f64;
    RougeScore { precision, recall, fmeasure: rouge_fmeasure(precision, recall) }
}

/// rouge-score's `_score_lcs`.
fn rouge_lcs(reference: &[String], prediction: &[String]) -> RougeScore {
    if reference.is_empty() || prediction.is_empty() {
        return RougeScore::default();
    }
    let lcs = lcs_len(reference, prediction) as f64;
    let precision = lcs / prediction.len() as f64;
    let recall = lcs / reference.len() as f64;
    RougeScore { precision, recall, fmeasure: rouge_fmeasure(precision, recall) }
}

/// Length of the longest common subsequence (one DP row at a time).
fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// ROUGE-1, ROUGE-2 and ROUGE-L of `prediction` against one `reference`, exactly
/// as rouge-score's
/// `rouge_scorer.RougeScorer(['rouge1', 'rouge2', 'rougeL'], use_stemmer=True).score(target=reference, prediction=prediction)`
/// (tokenizer: [`rouge_tokenize`]). Note the argument order is the reverse of
/// rouge-score's. These are the summarization numbers (XSum) papers report.
pub fn rouge(prediction: &str, reference: &str) -> RougeScores {
    let r = rouge_tokenize(reference);
    let p = rouge_tokenize(prediction);
    RougeScores { rouge1: rouge_n(&r, &p, 1), rouge2: rouge_n(&r, &p, 2), rouge_l: rouge_lcs(&r, &p) }
}

/// ROUGE against several references, as rouge-score's `score_multi(targets,
/// prediction)`: per variant, the score of the reference with the highest
/// F-measure (the first on ties). Equals [`rouge`] for one reference.
pub fn rouge_max<S: AsRef<str>>(prediction: &str, references: &[S]) -> Result<RougeScores, MetricError> {
    let all: Vec<RougeScores> = references.iter().map(|r| rouge(prediction, r.as_ref())).collect();
    let best = |get: fn(&RougeScores) -> RougeScore| -> Option<RougeScore> {
        all.iter().map(get).reduce(|b, s| if s.fmeasure > b.fmeasure { s } else { b })
    };
    match (best(|s| s.rouge1), best(|s| s.rouge2), best(|s| s.rouge_l)) {
        (Some(rouge1), Some(rouge2), Some(rouge_l)) => Ok(RougeScores { rouge1, rouge2, rouge_l }),
        _ => Err(MetricError::NoReference { index: 0 }),
    }
}

/// Arithmetic mean of per-example ROUGE scores, field by field (summed in order).
/// This is the usual corpus ROUGE; rouge-score's `BootstrapAggregator` reports a
/// resampled estimate of the same mean (its `mid`), which is not reproduced here.
pub fn rouge_mean(scores: &[RougeScores]) -> Result<RougeScores, MetricError> {
    if scores.is_empty() {
        return Err(MetricError::Empty);
    }
    let n = scores.len() as f64;
    let mean = |get: fn(&RougeScores) -> RougeScore| {
        let sum =
            scores.iter().map(get).fold([0.0; 3], |a, s| [a[0] + s.precision, a[1] + s.recall, a[2] + s.fmeasure]);
        RougeScore { precision: sum[0] / n, recall: sum[1] / n, fmeasure: sum[2] / n }
    };
    Ok(RougeScores { rouge1: mean(|s| s.rouge1), rouge2: mean(|s| s.rouge2), rouge_l: mean(|s| s.rouge_l) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rouge_by_hand() {
        let s = rouge("The cats were running.", "the cat runs");
        // Tokens: [the, cat, were, run] vs [the, cat, run].
        assert!((s.rouge1.precision - 0.75).abs() < 1e-12);
        assert!((s.rouge1.recall - 1.0).abs() < 1e-12);
        assert!((s.rouge2.precision - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.rouge_l.fmeasure - 2.0 * 0.75 / 1.75).abs() < 1e-12);
        assert_eq!(rouge("", "x"), RougeScores::default());
        let m = rouge_max("a b", &["c", "a b"]).unwrap();
        assert_eq!(m.rouge1.fmeasure, 1.0);
        let mean = rouge_mean(&[rouge("a", "a"), rouge("a", "b")]).unwrap();
        assert_eq!(mean.rouge1.fmeasure, 0.5);
    }
}
