//! KL divergence of a file's next-token distributions from a reference file's over
//! the same text, as llama.cpp's `llama-perplexity --kl-divergence` reports it: a
//! per-token measure of how far a slice (or a quantization) moves the output,
//! with no generation and no metric noise. Measured in the perplexity pass: each
//! chunk goes through both files, and every scored position adds
//! KL(P_ref || P) = sum_v p_ref(v) (log p_ref(v) - log p(v)).

use anyhow::ensure;

use super::bootstrap::{percentile_interval, resamples, RESAMPLES, SEED};
use super::perplexity::{with_interval, Perplexity};
use crate::engine::{Model, Session, SessionOptions};
use crate::profile::text::{score_chunks, text_chunks};

/// Mean KL divergence over a text's scored tokens.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KlDivergence {
    /// Mean KL (nats per token).
    pub mean: f64,
    /// Its 95% bootstrap interval over chunks (None for one chunk).
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Share of positions whose most likely next token agrees with the reference's.
    pub same_top: f64,
    /// Tokens scored.
    pub tokens: usize,
    /// Each chunk's summed KL.
    pub chunk_kl: Vec<f64>,
}

/// KL(P_ref || P) of one position's logits (computed in f64), and whether the two
/// most likely tokens agree (ties to the lower id).
pub fn position_kl(reference: &[f32], logits: &[f32]) -> (f64, bool) {
    let lse = |x: &[f32]| {
        let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        x.iter().map(|&v| (v as f64 - max).exp()).sum::<f64>().ln() + max
    };
    let (lr, lc) = (lse(reference), lse(logits));
    let kl = reference.iter().zip(logits).map(|(&r, &c)| (r as f64 - lr).exp() * ((r as f64 - lr) - (c as f64 - lc))).sum::<f64>();
    (kl.max(0.0), crate::util::argmax(reference) == crate::util::argmax(logits))
}

/// The perplexity of `text` through `model` and, in the same pass, the mean KL of
/// its next-token distributions from `reference`'s over the same chunks.
pub fn perplexity_and_kl(model: &Model, reference: &Model, text: &str, n_ctx: usize, max_chunks: Option<usize>, threads: i32) -> anyhow::Result<(Perplexity, KlDivergence)> {
    ensure!(model.n_vocab() == reference.n_vocab(), "the reference has {} tokens in its vocabulary, the model {}: KL needs the same vocabulary", reference.n_vocab(), model.n_vocab());
    let chunks = text_chunks(model, text, n_ctx, max_chunks)?;
    ensure!(text_chunks(reference, text, n_ctx, max_chunks)? == chunks, "the reference tokenizes the text differently: KL needs the same tokenizer");
    let mut r = Session::new(reference, SessionOptions { n_ctx: n_ctx as u32, n_batch: n_ctx as u32, threads, observer: None })?;
    let (mut chunk_kl, mut same, mut count) = (Vec::with_capacity(chunks.len()), 0usize, 0usize);
    let p = with_interval(score_chunks("perplexity and KL", model, &chunks, threads, None, |chunk, logits| {
        let ref_logits = r.eval_logits_from(chunk, n_ctx / 2)?;
        let mut sum = 0.0;
        for (rl, l) in ref_logits.iter().zip(logits) {
            let (kl, top) = position_kl(rl, l);
            sum += kl;
            same += usize::from(top);
            count += 1;
        }
        chunk_kl.push(sum);
        Ok(())
    })?);
    let per_chunk = count / chunks.len();
    let mean_of = |idx: &[usize]| idx.iter().map(|&i| chunk_kl[i]).sum::<f64>() / (per_chunk * idx.len()).max(1) as f64;
    let all: Vec<usize> = (0..chunk_kl.len()).collect();
    let mean = mean_of(&all);
    let iv = (chunk_kl.len() > 1).then(|| percentile_interval(mean, resamples(chunk_kl.len(), RESAMPLES, SEED).iter().map(|s| mean_of(s)).collect()));
    let kl = KlDivergence { mean, lo: iv.map(|iv| iv.lo), hi: iv.map(|iv| iv.hi), same_top: same as f64 / count.max(1) as f64, tokens: count, chunk_kl };
    Ok((p, kl))
}

#[cfg(test)]
mod tests {
    use super::position_kl;

    #[test]
    fn kl_is_zero_for_equal_logits_and_matches_the_formula() {
        let a = [1.0f32, 2.0, 0.5, -1.0];
        let (kl, top) = position_kl(&a, &a.map(|x| x + 3.0));
        assert!(kl.abs() < 1e-12 && top, "{kl}");
        let b = [0.0f32, 1.0, 3.0, 0.0];
        let softmax = |x: &[f32]| {
            let z: f64 = x.iter().map(|&v| (v as f64).exp()).sum();
            x.iter().map(|&v| (v as f64).exp() / z).collect::<Vec<_>>()
        };
        let (p, q) = (softmax(&a), softmax(&b));
        let want: f64 = p.iter().zip(&q).map(|(p, q)| p * (p / q).ln()).sum();
        let (kl, top) = position_kl(&a, &b);
        assert!((kl - want).abs() < 1e-12, "{kl} vs {want}");
        assert!(!top);
    }
}
