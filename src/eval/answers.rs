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

use super::bootstrap::{percentile_interval, resamples, Interval, RESAMPLES, SEED};
use super::harness::prompt_with_shots;
use super::perplexity::{perplexity_interval, NllSpan};
use crate::compute::{ComputePlan, SelectiveSession};
use crate::engine::{Model, Session, SessionOptions, Token};
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
        let mut sum = 0.0;
        teacher_force(s.session(), &answer, None, |_, t, logits| sum += nll(logits, t as usize))?;
        out.push(NllSpan { tokens: answer.len(), nll: sum });
    }
    Ok(out)
}

/// Feeds `answer` through decode after a prefilled prompt, one token at a time
/// (teacher forcing): `each(j, answer[j], logits)` gets the next-token logits
/// that predict `answer[j]`: for `j = 0` `after_prompt`, or the session's last
/// row when `None`; then those of each decode.
fn teacher_force(s: &mut Session<'_>, answer: &[Token], after_prompt: Option<&[f32]>, mut each: impl FnMut(usize, Token, &[f32])) -> anyhow::Result<()> {
    for (j, &t) in answer.iter().enumerate() {
        if j > 0 {
            s.decode(&[answer[j - 1]], false)?;
        }
        let logits = match after_prompt {
            Some(l) if j == 0 => l,
            _ => s.logits(-1),
        };
        each(j, t, logits);
    }
    Ok(())
}

/// The anchor's next-token logits at every answer position of each example (its
/// prompt with `shots`, then `" " + first reference`, at most `max_answer` answer
/// tokens), for [`answer_divergence`]. Measured through the decode path that the
/// points are scored on (the prompt in one batch, then the answer a token at a
/// time), so that the anchor itself is at KL 0 exactly ([`Self::own_divergence`])
/// and every point's KL is that of its selection alone, not of batch sizes'
/// rounding (about 0.005 nats on Gemma-3-270M).
pub struct AnswerReference {
    /// Per example: the answer tokens and one row of logits per answer token.
    answers: Vec<(Vec<Token>, Vec<Vec<f32>>)>,
    /// Longest prompt plus answer, tokens.
    longest: usize,
}

impl AnswerReference {
    /// The anchor's answers to `examples` through `model` (dense).
    pub fn measure(model: &Model, examples: &[Example], shots: &[Example], max_answer: usize, threads: i32) -> anyhow::Result<AnswerReference> {
        let tokens: Vec<(Vec<Token>, Vec<Token>)> = examples.iter().map(|ex| prompt_and_answer(model, ex, shots, max_answer)).collect::<anyhow::Result<_>>()?;
        let longest = tokens.iter().map(|(p, a)| p.len() + a.len()).max().unwrap_or(0);
        let n_ctx = n_ctx_for(longest);
        let mut s = Session::new(model, SessionOptions { n_ctx, n_batch: n_ctx, threads, observer: None })?;
        let mut answers = Vec::with_capacity(tokens.len());
        for (prompt, answer) in tokens {
            s.clear();
            s.decode(&prompt, false)?;
            let mut rows = Vec::with_capacity(answer.len());
            teacher_force(&mut s, &answer, None, |_, _, logits| rows.push(logits.to_vec()))?;
            answers.push((answer, rows));
        }
        Ok(AnswerReference { answers, longest })
    }

    /// The anchor's own score: KL 0 and the same top token everywhere, by
    /// construction, and the perplexity of the reference answers.
    pub fn own_divergence(&self) -> AnswerDivergence {
        let mut scores = Scores::default();
        for (answer, rows) in &self.answers {
            let nll_sum = answer.iter().zip(rows).map(|(&t, row)| nll(row, t as usize)).sum();
            scores.spans.push(NllSpan { tokens: answer.len(), nll: nll_sum });
            scores.kls.push(NllSpan { tokens: answer.len(), nll: 0.0 });
            scores.same += answer.len();
        }
        scores.divergence()
    }

    /// A context that holds every example's prompt and answer.
    pub fn n_ctx(&self) -> u32 {
        n_ctx_for(self.longest)
    }
}

fn n_ctx_for(longest: usize) -> u32 {
    (longest + 8).next_multiple_of(256) as u32
}

/// An example's prompt tokens and its first `max_answer` answer tokens.
fn prompt_and_answer(model: &Model, ex: &Example, shots: &[Example], max_answer: usize) -> anyhow::Result<(Vec<Token>, Vec<Token>)> {
    let prompt = model.tokenize(&prompt_with_shots(ex, shots), true, false);
    let mut answer = model.tokenize(&format!(" {}", ex.references.first().map_or("", String::as_str)), false, false);
    ensure!(!answer.is_empty() && !prompt.is_empty(), "example {} has an empty prompt or reference", ex.id);
    answer.truncate(max_answer.max(1));
    Ok((prompt, answer))
}

/// How far a selective session's answers are from the anchor's.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerDivergence {
    /// Mean KL(P_anchor || P) per answer token (nats), 95% interval over examples.
    pub kl: Interval,
    /// Share of answer positions whose most likely token is the anchor's.
    pub same_top: f64,
    /// Perplexity of the reference answers, 95% interval over examples.
    pub ppl: Interval,
    /// Answer tokens scored.
    pub tokens: usize,
}

/// Each example's prompt prefilled and its neurons selected as generation would,
/// then the anchor's answer tokens teacher-forced through decode: the KL of every
/// position's next-token distribution from the anchor's ([`super::kl::position_kl`])
/// and the answer's NLL.
pub fn answer_divergence(s: &mut SelectiveSession<'_>, examples: &[Example], shots: &[Example], reference: &AnswerReference) -> anyhow::Result<AnswerDivergence> {
    let plan = s.plan().clone();
    Ok(answer_divergences(s, &[plan], examples, shots, reference)?.remove(0))
}

/// [`answer_divergence`] of each of `plans` (phis of the session's file, or dense)
/// from one prefill per example: the prompt is prefilled once, counting votes, and
/// each plan then selects from them and decodes the answer
/// ([`SelectiveSession::reselect`]). The prefill runs over every loaded neuron
/// whatever phi is, so each result equals a session of its own plan's.
pub fn answer_divergences(s: &mut SelectiveSession<'_>, plans: &[ComputePlan], examples: &[Example], shots: &[Example], reference: &AnswerReference) -> anyhow::Result<Vec<AnswerDivergence>> {
    ensure!(examples.len() == reference.answers.len() && !examples.is_empty(), "{} examples against a reference of {}", examples.len(), reference.answers.len());
    ensure!(!plans.is_empty(), "no plan to score");
    // Selective plans first: the prefill counts votes under the first of them (and
    // a cache that cannot drop the answer prefills again under each plan).
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| !plans[i].is_selective());
    let first = order[0];
    let mut scores: Vec<Scores> = plans.iter().map(|_| Scores::default()).collect();
    for (ex, (answer, rows)) in examples.iter().zip(&reference.answers) {
        let prompt = s.session().model().tokenize(&prompt_with_shots(ex, shots), true, false);
        s.set_plan(plans[first].clone())?;
        s.clear();
        s.prefill_and_select(&prompt)?;
        let after_prompt = s.session().logits(-1).to_vec();
        for (k, &i) in order.iter().enumerate() {
            if k > 0 {
                s.set_plan(plans[i].clone())?;
                s.reselect(&prompt)?;
            }
            scores[i].add(s, answer, rows, &after_prompt)?;
        }
    }
    Ok(scores.into_iter().map(Scores::divergence).collect())
}

/// One plan's answers so far.
#[derive(Default)]
struct Scores {
    /// Per example: the answer's NLL, and its summed KL.
    spans: Vec<NllSpan>,
    kls: Vec<NllSpan>,
    /// Positions whose most likely token is the anchor's.
    same: usize,
}

impl Scores {
    /// Teacher-forces `answer` after the prompt (whose last logits are
    /// `after_prompt`), scoring each position against the anchor's `rows`.
    fn add(&mut self, s: &mut SelectiveSession<'_>, answer: &[Token], rows: &[Vec<f32>], after_prompt: &[f32]) -> anyhow::Result<()> {
        let (mut nll_sum, mut kl_sum) = (0.0, 0.0);
        // `rows` has one row per answer token (`AnswerReference` is built so).
        teacher_force(s.session(), answer, Some(after_prompt), |j, token, logits| {
            nll_sum += nll(logits, token as usize);
            let (kl, top) = super::kl::position_kl(&rows[j], logits);
            kl_sum += kl;
            self.same += usize::from(top);
        })?;
        self.spans.push(NllSpan { tokens: answer.len(), nll: nll_sum });
        self.kls.push(NllSpan { tokens: answer.len(), nll: kl_sum });
        Ok(())
    }

    fn divergence(self) -> AnswerDivergence {
        let kls = &self.kls;
        let tokens: usize = self.spans.iter().map(|s| s.tokens).sum();
        let mean_kl = |idx: &[usize]| idx.iter().map(|&i| kls[i].nll).sum::<f64>() / idx.iter().map(|&i| kls[i].tokens).sum::<usize>().max(1) as f64;
        let all: Vec<usize> = (0..kls.len()).collect();
        let kl = percentile_interval(mean_kl(&all), resamples(kls.len(), RESAMPLES, SEED).iter().map(|r| mean_kl(r)).collect());
        AnswerDivergence { kl, same_top: self.same as f64 / tokens.max(1) as f64, ppl: perplexity_interval(&self.spans), tokens }
    }
}
