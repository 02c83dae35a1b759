//! Task metrics, each a line-by-line port of the implementation the literature
//! reports, so that numbers from this crate can be put next to published ones.
//!
//! Sits at the end of the data flow: the evaluation harness hands every generated
//! output and the example's references ([`crate::tasks::Example::references`]) to
//! the metric of its task.
//!
//! | task        | metric          | reference implementation                                | scale                 |
//! |-------------|-----------------|---------------------------------------------------------|-----------------------|
//! | `qa`        | exact match, F1 | SQuAD v1.1 `evaluate-v1.1.py`                           | 0..1 (corpus: 0..100) |
//! | `translate` | BLEU            | sacrebleu 2.x `BLEU()` (13a, exp smoothing, mixed case) | 0..100                |
//! | `translate` | chrF            | sacrebleu 2.x `CHRF()` (chrF2, char order 6, no spaces) | 0..100                |
//! | `summarize` | ROUGE-1/2/L     | rouge-score `RougeScorer([...], use_stemmer=True)`      | 0..1                  |
//!
//! Every scale is the one its reference prints. The ports keep the reference's
//! quirks (sacrebleu's 13a regexes applied left to right, NLTK's Porter stemmer
//! extensions, Python's notion of whitespace, the order of floating-point
//! operations), and `tests/metrics.rs` checks them against scores computed by the
//! reference packages (`tests/fixtures/metrics/make_fixtures.py`).
//!
//! One known gap: SQuAD's article removal uses Python's `\b`, whose word characters
//! are Unicode letters and numbers; [`char::is_alphanumeric`] also counts the few
//! combining marks and symbols with the `Other_Alphabetic` property (for example
//! Devanagari vowel signs, circled letters), so an `a`, `an` or `the` glued to one of
//! those is treated differently. No SQuAD or XQuAD English answer contains one.

//!
//! One file per metric: [`squad`], [`bleu`], [`chrf`], [`rouge`] (with the
//! [`porter`] stemmer it needs). This file holds what they share: the error type,
//! Python's notion of whitespace and `collections.Counter` n-gram counts.

mod bleu;
mod chrf;
mod porter;
mod rouge;
mod squad;

pub use bleu::*;
pub use chrf::*;
pub use porter::porter_stem;
pub use rouge::*;
pub use squad::*;

use std::collections::HashMap;
use std::hash::Hash;

/// Errors from corpus-level metrics (per-example metrics cannot fail).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    /// Predictions and reference sets differ in number.
    #[error("{predictions} predictions but {references} reference sets")]
    LengthMismatch {
        /// Number of predictions (hypotheses).
        predictions: usize,
        /// Number of reference sets.
        references: usize,
    },
    /// An example has an empty reference set.
    #[error("example {index} has no reference")]
    NoReference {
        /// 0-based index of the example.
        index: usize,
    },
    /// There is nothing to score.
    #[error("no examples to score")]
    Empty,
}

// ---------------------------------------------------------------------------
// Python string helpers
// ---------------------------------------------------------------------------

/// Python's `str.isspace()`: Rust's Unicode `White_Space` plus the ASCII
/// information separators U+001C..U+001F, which Python also splits on.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `s.split()`: runs of whitespace separate, no empty pieces.
fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|t| !t.is_empty())
}

/// Python's `' '.join(s.split())`.
fn py_collapse_whitespace(s: &str) -> String {
    py_split(s).collect::<Vec<_>>().join(" ")
}

/// Python's `collections.Counter` over the windows of `items` of length `n`.
fn count_ngrams<T: Eq + Hash>(items: &[T], n: usize) -> HashMap<&[T], u64> {
    let mut counts = HashMap::new();
    if n > 0 && items.len() >= n {
        for w in items.windows(n) {
            *counts.entry(w).or_insert(0) += 1;
        }
    }
    counts
}

/// `sum((a & b).values())` for two counters: the clipped overlap.
fn clipped_overlap<K: Eq + Hash>(a: &HashMap<K, u64>, b: &HashMap<K, u64>) -> u64 {
    a.iter().map(|(k, &ca)| b.get(k).map_or(0, |&cb| ca.min(cb))).sum()
}

/// Checks the corpus-level argument shape shared by BLEU, chrF and SQuAD.
pub(crate) fn check_corpus<P, R: AsRef<[S]>, S>(predictions: &[P], references: &[R]) -> Result<(), MetricError> {
    if predictions.len() != references.len() {
        return Err(MetricError::LengthMismatch { predictions: predictions.len(), references: references.len() });
    }
    if predictions.is_empty() {
        return Err(MetricError::Empty);
    }
    match references.iter().position(|r| r.as_ref().is_empty()) {
        Some(index) => Err(MetricError::NoReference { index }),
        None => Ok(()),
    }
}
