//! SQuAD v1.1 exact match and F1 (the official `evaluate-v1.1.py`).

use super::{check_corpus, clipped_overlap, count_ngrams, py_collapse_whitespace, py_split, MetricError};

/// SQuAD v1.1 answer normalization, as `normalize_answer` in the official
/// `evaluate-v1.1.py`: lowercase, drop ASCII punctuation (`string.punctuation`),
/// replace the words `a`, `an`, `the` by a space, collapse whitespace.
///
/// Every published SQuAD/XQuAD number is computed on these normalized strings, so
/// an answer that differs only in case, punctuation or articles counts as exact.
pub fn squad_normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    let no_punct: String = lower.chars().filter(|c| !c.is_ascii_punctuation()).collect();
    py_collapse_whitespace(&remove_articles(&no_punct))
}

/// `re.sub(r'\b(a|an|the)\b', ' ', text)`: a match is a maximal run of word
/// characters that is exactly one of the articles.
fn remove_articles(text: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_word) {
        out.push_str(&rest[..start]);
        let run = &rest[start..];
        let end = run.find(|c: char| !is_word(c)).unwrap_or(run.len());
        let word = &run[..end];
        out.push_str(if matches!(word, "a" | "an" | "the") { " " } else { word });
        rest = &run[end..];
    }
    out.push_str(rest);
    out
}

/// `exact_match_score` of `evaluate-v1.1.py` for one reference.
fn squad_em_one(prediction: &str, reference: &str) -> f64 {
    if squad_normalize_answer(prediction) == squad_normalize_answer(reference) {
        1.0
    } else {
        0.0
    }
}

/// `f1_score` of `evaluate-v1.1.py` for one reference: token F1 of the
/// normalized strings (0 when no token is shared, also when both are empty).
fn squad_f1_one(prediction: &str, reference: &str) -> f64 {
    let pred_norm = squad_normalize_answer(prediction);
    let ref_norm = squad_normalize_answer(reference);
    let pred: Vec<&str> = py_split(&pred_norm).collect();
    let gold: Vec<&str> = py_split(&ref_norm).collect();
    let num_same = clipped_overlap(&count_ngrams(&pred, 1), &count_ngrams(&gold, 1));
    if num_same == 0 {
        return 0.0;
    }
    let precision = num_same as f64 / pred.len() as f64;
    let recall = num_same as f64 / gold.len() as f64;
    (2.0 * precision * recall) / (precision + recall)
}

/// `metric_max_over_ground_truths`; 0 for an empty reference list (where the
/// official script would raise).
fn max_over_references<S: AsRef<str>>(references: &[S], metric: impl Fn(&str) -> f64) -> f64 {
    references
        .iter()
        .map(|r| metric(r.as_ref()))
        .fold(None, |best: Option<f64>, s| Some(best.map_or(s, |b| b.max(s))))
        .unwrap_or(0.0)
}

/// SQuAD v1.1 exact match of one prediction, 0 or 1: whether its normalized form
/// ([`squad_normalize_answer`]) equals that of any reference answer. Matches
/// `metric_max_over_ground_truths(exact_match_score, ...)` of `evaluate-v1.1.py`.
pub fn squad_exact_match<S: AsRef<str>>(prediction: &str, references: &[S]) -> f64 {
    max_over_references(references, |r| squad_em_one(prediction, r))
}

/// SQuAD v1.1 F1 of one prediction, 0..1: the best bag-of-tokens F1 between the
/// normalized prediction and a normalized reference answer. Matches
/// `metric_max_over_ground_truths(f1_score, ...)` of `evaluate-v1.1.py`; gives
/// partial credit to answers with the right span boundaries slightly off.
pub fn squad_f1<S: AsRef<str>>(prediction: &str, references: &[S]) -> f64 {
    max_over_references(references, |r| squad_f1_one(prediction, r))
}

/// Corpus-level SQuAD scores, on the 0..100 scale `evaluate-v1.1.py` prints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SquadScores {
    /// Mean exact match times 100.
    pub exact_match: f64,
    /// Mean F1 times 100.
    pub f1: f64,
    /// Number of examples.
    pub count: usize,
}

/// SQuAD v1.1 exact match and F1 over a corpus, computed as `evaluate-v1.1.py`'s
/// `evaluate` does (`100.0 * sum / total`, summed in example order); `references[i]`
/// holds the answers accepted for `predictions[i]`.
pub fn squad_corpus<P, R, S>(predictions: &[P], references: &[R]) -> Result<SquadScores, MetricError>
where
    P: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    check_corpus(predictions, references)?;
    let (mut em, mut f1) = (0.0, 0.0);
    for (p, r) in predictions.iter().zip(references) {
        em += squad_exact_match(p.as_ref(), r.as_ref());
        f1 += squad_f1(p.as_ref(), r.as_ref());
    }
    let total = predictions.len() as f64;
    Ok(SquadScores { exact_match: 100.0 * em / total, f1: 100.0 * f1 / total, count: predictions.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squad_normalization_drops_case_punctuation_articles() {
        assert_eq!(squad_normalize_answer("  The Eiffel-Tower, in Paris! "), "eiffeltower in paris");
        assert_eq!(squad_normalize_answer("an apple a day"), "apple day");
        // Articles only as whole words.
        assert_eq!(squad_normalize_answer("Theatre and Ana"), "theatre and ana");
    }

    #[test]
    fn squad_f1_by_hand() {
        // pred {denver, broncos}, gold {broncos}: P = 1/2, R = 1, F1 = 2/3.
        assert!((squad_f1("Denver Broncos", &["the Broncos"]) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(squad_exact_match("Denver Broncos", &["the Broncos"]), 0.0);
        assert_eq!(squad_exact_match("the Broncos.", &["Denver", "broncos"]), 1.0);
        assert_eq!(squad_f1("x", &["y"]), 0.0);
        assert_eq!(squad_f1("", &[""]), 0.0);
        assert_eq!(squad_exact_match("", &[""]), 1.0);
        let c = squad_corpus(&["a b", "c"], &[vec!["a b"], vec!["d"]]).unwrap();
        assert_eq!((c.exact_match, c.f1, c.count), (50.0, 50.0, 2));
        assert_eq!(squad_corpus(&["a"], &[Vec::<&str>::new()]), Err(MetricError::NoReference { index: 0 }));
    }
}
