//! sacrebleu 2.x BLEU (13a tokenizer, exp smoothing, mixed case).

use std::collections::HashMap;

use super::{check_corpus, clipped_overlap, count_ngrams, is_py_space, py_collapse_whitespace, py_split, MetricError};

/// Highest n-gram order of BLEU (sacrebleu's `MAX_NGRAM_ORDER`).
pub const BLEU_MAX_ORDER: usize = 4;

/// sacrebleu's `13a` tokenizer (`Tokenizer13a`, equivalent to WMT's
/// `mteval-v13a.pl`): drops `<skipped>`, joins `-\n` line breaks, unescapes
/// `&quot; &amp; &lt; &gt;`, then splits off punctuation and symbols, periods and
/// commas not next to a digit, and dashes after a digit. Returns the tokens joined
/// by single spaces.
///
/// It is BLEU's default tokenizer and part of what makes BLEU scores comparable
/// across papers.
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line.replace("<skipped>", "").replace("-\n", "").replace('\n', " ");
    if line.contains('&') {
        line = line.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
    }
    let chars: Vec<char> = format!(" {line} ").chars().collect();
    py_collapse_whitespace(&tokenize_re(chars).into_iter().collect::<String>())
}

/// sacrebleu's `TokenizerRegexp` substitutions, in order, without the final
/// whitespace collapse.
fn tokenize_re(chars: Vec<char>) -> Vec<char> {
    let is_digit = |c: char| c.is_ascii_digit();
    let is_period_comma = |c: char| c == '.' || c == ',';
    // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> ' \1 '
    let mut out = Vec::with_capacity(chars.len() * 2);
    for c in chars {
        if matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/') {
            out.extend([' ', c, ' ']);
        } else {
            out.push(c);
        }
    }
    // ([^0-9])([\.,]) -> '\1 \2 '
    let out = sub_pairs(&out, |a, b| !is_digit(a) && is_period_comma(b), |a, b| vec![a, ' ', b, ' ']);
    // ([\.,])([^0-9]) -> ' \1 \2'
    let out = sub_pairs(&out, |a, b| is_period_comma(a) && !is_digit(b), |a, b| vec![' ', a, ' ', b]);
    // ([0-9])(-) -> '\1 \2 '
    sub_pairs(&out, |a, b| is_digit(a) && b == '-', |a, b| vec![a, ' ', b, ' '])
}

/// `re.sub` of a two-character pattern: leftmost non-overlapping matches, scanning
/// on after each replacement.
fn sub_pairs(s: &[char], matches: impl Fn(char, char) -> bool, replace: impl Fn(char, char) -> Vec<char>) -> Vec<char> {
    let mut out = Vec::with_capacity(s.len() + s.len() / 2);
    let mut i = 0;
    while i < s.len() {
        if i + 1 < s.len() && matches(s[i], s[i + 1]) {
            out.extend(replace(s[i], s[i + 1]));
            i += 2;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// sacrebleu's `BLEU._preprocess_segment` (no lowercasing): strip trailing
/// whitespace, then [`tokenize_13a`].
fn bleu_preprocess(segment: &str) -> String {
    tokenize_13a(segment.trim_end_matches(is_py_space))
}

/// Corpus BLEU and its sufficient statistics, as sacrebleu's `BLEUScore`.
#[derive(Debug, Clone, PartialEq)]
pub struct BleuScore {
    /// BLEU, 0..100.
    pub score: f64,
    /// Matched (clipped) n-grams of orders 1..=4.
    pub counts: [u64; BLEU_MAX_ORDER],
    /// Hypothesis n-grams of orders 1..=4.
    pub totals: [u64; BLEU_MAX_ORDER],
    /// Smoothed n-gram precisions, 0..100.
    pub precisions: [f64; BLEU_MAX_ORDER],
    /// Brevity penalty.
    pub bp: f64,
    /// Hypothesis tokens.
    pub sys_len: u64,
    /// Reference tokens (per segment, the reference length closest to the hypothesis).
    pub ref_len: u64,
}

/// BLEU's sufficient statistics, `[hyp_len, ref_len, correct.., total..]` in
/// sacrebleu: of one segment ([`bleu_segment`]) or summed over a corpus. Corpus BLEU
/// is [`bleu_from_stats`] of the sum, which is how a bootstrap resample is scored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BleuStats {
    /// Hypothesis tokens.
    pub sys_len: u64,
    /// Closest reference length.
    pub ref_len: u64,
    /// Matched (clipped) n-grams of orders 1..=4.
    pub correct: [u64; BLEU_MAX_ORDER],
    /// Hypothesis n-grams of orders 1..=4.
    pub total: [u64; BLEU_MAX_ORDER],
}

impl std::ops::AddAssign<&BleuStats> for BleuStats {
    fn add_assign(&mut self, s: &BleuStats) {
        self.sys_len += s.sys_len;
        self.ref_len += s.ref_len;
        for n in 0..BLEU_MAX_ORDER {
            self.correct[n] += s.correct[n];
            self.total[n] += s.total[n];
        }
    }
}

/// The BLEU statistics of one hypothesis against its references, preprocessed as
/// [`corpus_bleu`] does (13a tokenization, mixed case).
pub fn bleu_segment<S: AsRef<str>>(hypothesis: &str, references: &[S]) -> BleuStats {
    let refs: Vec<String> = references.iter().map(|x| bleu_preprocess(x.as_ref())).collect();
    bleu_segment_stats(&bleu_preprocess(hypothesis), &refs)
}

/// sacrebleu's `_extract_reference_info` + `_compute_segment_statistics` for one
/// tokenized hypothesis and its tokenized references.
fn bleu_segment_stats(hyp: &str, refs: &[String]) -> BleuStats {
    let hyp_tokens: Vec<&str> = py_split(hyp).collect();
    let ref_tokens: Vec<Vec<&str>> = refs.iter().map(|r| py_split(r).collect()).collect();
    let ref_len = closest_ref_len(hyp_tokens.len(), ref_tokens.iter().map(Vec::len));
    let mut stats = BleuStats { sys_len: hyp_tokens.len() as u64, ref_len: ref_len as u64, ..Default::default() };
    for n in 1..=BLEU_MAX_ORDER {
        // Reference n-gram counts: the maximum over references.
        let mut ref_counts: HashMap<&[&str], u64> = HashMap::new();
        for r in &ref_tokens {
            for (g, c) in count_ngrams(r, n) {
                let e = ref_counts.entry(g).or_insert(0);
                *e = (*e).max(c);
            }
        }
        let hyp_counts = count_ngrams(&hyp_tokens, n);
        stats.total[n - 1] = hyp_counts.values().sum();
        stats.correct[n - 1] = clipped_overlap(&hyp_counts, &ref_counts);
    }
    stats
}

/// sacrebleu's `_get_closest_ref_len`: the reference length closest to the
/// hypothesis length, the shorter one on ties.
fn closest_ref_len(hyp_len: usize, ref_lens: impl Iterator<Item = usize>) -> usize {
    ref_lens.min_by_key(|&r| (r.abs_diff(hyp_len), r)).unwrap_or(0)
}

/// sacrebleu's `my_log`: `ln`, floored at -9999999999 for 0.
fn my_log(x: f64) -> f64 {
    if x == 0.0 {
        -9_999_999_999.0
    } else {
        x.ln()
    }
}

/// sacrebleu's `BLEU.compute_bleu` with `smooth_method='exp'`,
/// `effective_order=False`, on (summed) statistics.
pub fn bleu_from_stats(s: &BleuStats) -> BleuScore {
    let mut bp = 1.0;
    if s.sys_len < s.ref_len {
        bp = if s.sys_len > 0 { (1.0 - s.ref_len as f64 / s.sys_len as f64).exp() } else { 0.0 };
    }
    let mut precisions = [0.0; BLEU_MAX_ORDER];
    let mut out = BleuScore {
        score: 0.0,
        counts: s.correct,
        totals: s.total,
        precisions,
        bp,
        sys_len: s.sys_len,
        ref_len: s.ref_len,
    };
    if s.correct.iter().all(|&c| c == 0) {
        return out;
    }
    let mut smooth_mteval = 1.0;
    for n in 0..BLEU_MAX_ORDER {
        if s.total[n] == 0 {
            break;
        }
        precisions[n] = if s.correct[n] == 0 {
            smooth_mteval *= 2.0;
            100.0 / (smooth_mteval * s.total[n] as f64)
        } else {
            100.0 * s.correct[n] as f64 / s.total[n] as f64
        };
    }
    let log_sum = precisions.iter().fold(0.0, |acc, &p| acc + my_log(p));
    out.score = bp * (log_sum / BLEU_MAX_ORDER as f64).exp();
    out.precisions = precisions;
    out
}

/// Corpus BLEU exactly as sacrebleu's default `BLEU().corpus_score(hypotheses,
/// references)` (sacrebleu 2.x; signature
/// `nrefs:N|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x`): mixed case,
/// [`tokenize_13a`], n-grams up to 4, NIST "exp" smoothing, no effective order.
///
/// `references[i]` holds the references of `hypotheses[i]` (sacrebleu takes
/// reference *streams*; this is the transpose). BLEU is the standard WMT
/// translation metric, and only this exact configuration gives numbers that can be
/// compared with published ones.
pub fn corpus_bleu<H, R, S>(hypotheses: &[H], references: &[R]) -> Result<BleuScore, MetricError>
where
    H: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    check_corpus(hypotheses, references)?;
    let mut sum = BleuStats::default();
    for (h, r) in hypotheses.iter().zip(references) {
        sum += &bleu_segment(h.as_ref(), r.as_ref());
    }
    Ok(bleu_from_stats(&sum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_13a_by_hand() {
        assert_eq!(
            tokenize_13a("Hello, world! It costs $1,000.50 (approx.)."),
            "Hello , world ! It costs $ 1,000.50 ( approx . ) ."
        );
        assert_eq!(tokenize_13a("a &amp; b &lt;c&gt; 3-4 e-mail"), "a & b < c > 3 - 4 e-mail");
        assert_eq!(tokenize_13a("it's\tdone<skipped>"), "it's done");
    }

    #[test]
    fn bleu_by_hand() {
        // Identical: all precisions 100, BP 1.
        let s = corpus_bleu(&["the cat sat on the mat"], &[["the cat sat on the mat"]]).unwrap();
        assert!((s.score - 100.0).abs() < 1e-9);
        assert_eq!((s.sys_len, s.ref_len, s.counts, s.totals), (6, 6, [6, 5, 4, 3], [6, 5, 4, 3]));
        // No 4-gram match: exp smoothing gives p4 = 100 / (2 * 1).
        let s = corpus_bleu(&["a b c d"], &[["a b c e"]]).unwrap();
        assert_eq!(s.precisions, [75.0, 100.0 * 2.0 / 3.0, 50.0, 50.0]);
        let expected = (0.75f64 * (2.0 / 3.0) * 0.5 * 0.5).powf(0.25) * 100.0;
        assert!((s.score - expected).abs() < 1e-9);
        // Shorter hypothesis: brevity penalty exp(1 - 4/2).
        let s = corpus_bleu(&["a b"], &[["a b c d"]]).unwrap();
        assert!((s.bp - (-1.0f64).exp()).abs() < 1e-12);
        assert_eq!(corpus_bleu(&[""], &[["x"]]).unwrap().score, 0.0);
        assert_eq!(
            corpus_bleu(&["a"], &Vec::<[&str; 1]>::new()),
            Err(MetricError::LengthMismatch { predictions: 1, references: 0 })
        );
    }
}
