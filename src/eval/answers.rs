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
//! Each example's answer is one [`NllSpan`]; its interval and paired differences
//! are [`super::perplexity::perplexity_interval`] and
//! [`super::perplexity::paired_difference`] over examples.

use anyhow::ensure;

use super::harness::prompt_with_shots;
use super::perplexity::NllSpan;
use crate::compute::SelectiveSession;
use crate::profile::text::nll;
use crate::tasks::Example;

/// Per-example answer NLLs: prompt (with `shots`) prefilled and selected, then
/// `" " + first reference` teacher-forced through decode.
pub fn answer_nlls(s: &mut SelectiveSession<'_>, examples: &[Example], shots: &[Example]) -> anyhow::Result<Vec<NllSpan>> {
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
        out.push(NllSpan { tokens: answer.len(), nll: sum });
    }
    Ok(out)
}
