//! sacrebleu 2.x chrF (chrF2, character order 6, whitespace ignored).

use std::collections::HashMap;

use super::{check_corpus, clipped_overlap, count_ngrams, is_py_space, MetricError};

/// Character n-gram order of chrF (sacrebleu's `CHRF.CHAR_ORDER`).
pub const CHRF_CHAR_ORDER: usize = 6;
/// Recall weight of chrF (sacrebleu's `CHRF.BETA`): chrF2.
pub const CHRF_BETA: u32 = 2;

/// chrF's sufficient statistics, per order `[hyp n-grams, ref n-grams, matches]`
/// (sacrebleu's layout): of one segment ([`chrf_segment`]) or summed over a corpus
/// ([`chrf_add`]); corpus chrF is [`chrf_from_stats`] of the sum.
pub type ChrfStats = [[u64; 3]; CHRF_CHAR_ORDER];

/// Adds the statistics `s` into `acc`.
pub fn chrf_add(acc: &mut ChrfStats, s: &ChrfStats) {
    for (a, s) in acc.iter_mut().zip(s) {
        for k in 0..3 {
            a[k] += s[k];
        }
    }
}

/// Character n-gram counts of orders 1..=6 of a segment with all whitespace
/// removed (`extract_all_char_ngrams(line, 6, include_whitespace=False)`).
fn char_ngrams(chars: &[char]) -> Vec<HashMap<&[char], u64>> {
    (1..=CHRF_CHAR_ORDER).map(|n| count_ngrams(chars, n)).collect()
}

/// sacrebleu's `CHRF._get_match_statistics` for every order.
fn chrf_match_stats(hyp: &[HashMap<&[char], u64>], reference: &[HashMap<&[char], u64>]) -> ChrfStats {
    let mut stats = [[0; 3]; CHRF_CHAR_ORDER];
    for (n, (h, r)) in hyp.iter().zip(reference).enumerate() {
        let hyp_count: u64 = h.values().sum();
        stats[n] = [if r.is_empty() { 0 } else { hyp_count }, r.values().sum(), clipped_overlap(h, r)];
    }
    stats
}

/// sacrebleu's `CHRF._compute_f_score` with `eps_smoothing=False`: F-beta of the
/// precision and recall averaged over the orders present in both sides, 0..100.
pub fn chrf_from_stats(stats: &ChrfStats) -> f64 {
    let factor = f64::from(CHRF_BETA * CHRF_BETA);
    let (mut avg_prec, mut avg_rec, mut effective_order) = (0.0, 0.0, 0u32);
    for &[n_hyp, n_ref, n_match] in stats {
        if n_hyp > 0 && n_ref > 0 {
            avg_prec += n_match as f64 / n_hyp as f64;
            avg_rec += n_match as f64 / n_ref as f64;
            effective_order += 1;
        }
    }
    if effective_order == 0 {
        return 0.0;
    }
    avg_prec /= f64::from(effective_order);
    avg_rec /= f64::from(effective_order);
    if avg_prec + avg_rec == 0.0 {
        return 0.0;
    }
    let mut score = (1.0 + factor) * avg_prec * avg_rec;
    score /= (factor * avg_prec) + avg_rec;
    100.0 * score
}

/// Corpus chrF exactly as sacrebleu's default `CHRF().corpus_score(hypotheses,
/// references)` (sacrebleu 2.x; signature
/// `nrefs:N|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.x`): character
/// n-grams of orders 1..=6 with whitespace removed, beta 2, no word n-grams,
/// statistics summed over the corpus before the F-score. With several references a
/// segment uses the one with the best segment-level chrF (the first on ties).
///
/// `references[i]` holds the references of `hypotheses[i]`. chrF is the WMT
/// companion of BLEU that rewards partially correct words (morphology), so it
/// separates weak systems better than BLEU does.
pub fn corpus_chrf<H, R, S>(hypotheses: &[H], references: &[R]) -> Result<f64, MetricError>
where
    H: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    check_corpus(hypotheses, references)?;
    let mut sum: ChrfStats = [[0; 3]; CHRF_CHAR_ORDER];
    for (h, refs) in hypotheses.iter().zip(references) {
        chrf_add(&mut sum, &chrf_segment(h.as_ref(), refs.as_ref()));
    }
    Ok(chrf_from_stats(&sum))
}

/// The chrF statistics of one hypothesis against the reference with the best
/// segment-level chrF (the first on ties), as [`corpus_chrf`] sums them; all zero
/// for an empty reference list.
pub fn chrf_segment<S: AsRef<str>>(hypothesis: &str, references: &[S]) -> ChrfStats {
    let strip = |s: &str| -> Vec<char> { s.chars().filter(|&c| !is_py_space(c)).collect() };
    let hyp_chars = strip(hypothesis);
    let hyp = char_ngrams(&hyp_chars);
    let mut best: Option<(f64, ChrfStats)> = None;
    for r in references {
        let ref_chars = strip(r.as_ref());
        let stats = chrf_match_stats(&hyp, &char_ngrams(&ref_chars));
        let f = chrf_from_stats(&stats);
        if best.as_ref().is_none_or(|(b, _)| f > *b) {
            best = Some((f, stats));
        }
    }
    best.map_or([[0; 3]; CHRF_CHAR_ORDER], |(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chrf_by_hand() {
        assert!((corpus_chrf(&["abc def"], &[["abcdef"]]).unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(corpus_chrf(&["xyz"], &[["abc"]]).unwrap(), 0.0);
        // "ab" vs "ac": order 1 P = R = 1/2, order 2 P = R = 0 -> avg 1/4.
        assert!((corpus_chrf(&["ab"], &[["ac"]]).unwrap() - 25.0).abs() < 1e-9);
    }
}
