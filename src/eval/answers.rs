//! Answer perplexity: how likely the model finds each evaluation example's
//! reference answer after its prompt, with selective computation.
//!
//! Plain perplexity ([`super::perplexity`]) scores every token as a prefill token,
//! so it measures loading only. Here each example's prompt (with its k-shot
//! examples) is prefilled as a decode prompt is, the dynamic neurons are chosen from
//! its votes ([`crate::compute`]), and the reference answer is then fed one token at
//! a time through the decode path (teacher forcing): the NLL of every answer token
//! is that of the compacted FFN that generation would use. Cheap next to task scores
//! (no generation, no metric), and sensitive to the vote and alpha.
//! The interval is a 95% bootstrap over examples (the same 1000 resamples, seed
//! 12345, as task scores), of exp(sum NLL / sum tokens).

use anyhow::ensure;

use super::bootstrap::{percentile_interval, resamples, Interval};
use super::harness::prompt_with_shots;
use super::perplexity::nll;
use crate::compute::SelectiveSession;
use crate::tasks::Example;

/// One example's answer tokens and their summed NLL.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct AnswerNll {
    /// Answer tokens scored.
    pub tokens: usize,
    /// Their summed negative log-likelihood (nats).
    pub nll: f64,
}

/// Per-example answer NLLs: prompt (with `shots`) prefilled and selected, then
/// `" " + first reference` teacher-forced through decode.
pub fn answer_nlls(s: &mut SelectiveSession<'_>, examples: &[Example], shots: &[Example]) -> anyhow::Result<Vec<AnswerNll>> {
    let mut out = Vec::with_capacity(examples.len());
    for ex in examples {
        let model = s.session().model();
        let prompt = model.tokenize(&prompt_with_shots(ex, shots), true, false);
        let answer = model.tokenize(&format!(" {}", ex.references.first().map_or("", String::as_str)), false, false);
        ensure!(!answer.is_empty(), "example {} has an empty reference", ex.id);
        s.clear();
        s.prefill_and_select(&prompt)?;
        let mut sum = nll(s.session().logits(-1), answer[0] as usize);
        for w in answer.windows(2) {
            s.session().decode(&[w[0]], false)?;
            sum += nll(s.session().logits(-1), w[1] as usize);
        }
        out.push(AnswerNll { tokens: answer.len(), nll: sum });
    }
    Ok(out)
}

/// exp(sum NLL / sum tokens) of the examples at `idx`.
pub fn perplexity_of(v: &[AnswerNll], idx: &[usize]) -> f64 {
    let (t, n) = idx.iter().fold((0usize, 0f64), |(t, n), &i| (t + v[i].tokens, n + v[i].nll));
    (n / t.max(1) as f64).exp()
}

/// The answer perplexity with its 95% bootstrap interval over examples.
pub fn answer_perplexity(v: &[AnswerNll]) -> Interval {
    let sets = resamples(v.len(), 1000, 12345);
    percentile_interval(perplexity_of(v, &(0..v.len()).collect::<Vec<_>>()), sets.iter().map(|s| perplexity_of(v, s)).collect())
}

/// The paired interval of `system`'s answer perplexity minus `baseline`'s over the
/// same examples (the same resamples for both).
pub fn paired_difference(system: &[AnswerNll], baseline: &[AnswerNll]) -> anyhow::Result<Interval> {
    ensure!(system.len() == baseline.len(), "{} examples against {}", system.len(), baseline.len());
    let all: Vec<usize> = (0..system.len()).collect();
    let sets = resamples(system.len(), 1000, 12345);
    let diff = |idx: &[usize]| perplexity_of(system, idx) - perplexity_of(baseline, idx);
    Ok(percentile_interval(diff(&all), sets.iter().map(|s| diff(s)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_perplexity_and_intervals() {
        let v = [AnswerNll { tokens: 2, nll: 2.0 }, AnswerNll { tokens: 3, nll: 6.0 }];
        assert!((perplexity_of(&v, &[0, 1]) - (8.0f64 / 5.0).exp()).abs() < 1e-12);
        assert!((perplexity_of(&v, &[0, 0]) - 1f64.exp()).abs() < 1e-12);
        let iv = answer_perplexity(&v);
        assert!(iv.lo <= iv.point && iv.point <= iv.hi && iv.lo >= 1f64.exp() - 1e-9 && iv.hi <= 2f64.exp() + 1e-9, "{iv:?}");
        let d = paired_difference(&v, &v).unwrap();
        assert_eq!((d.point, d.lo, d.hi), (0.0, 0.0, 0.0));
    }
}
