//! Perplexity on a text, chunked as llama.cpp's `llama-perplexity` does.
//!
//! The text is tokenized whole (with BOS), cut into `n_ctx`-token chunks (the tail
//! that does not fill a chunk is dropped), and each chunk is evaluated from an empty
//! cache with its first token replaced by BOS. Only the second half of each chunk is
//! scored: for positions j in [n_ctx/2, n_ctx - 1), the negative log-likelihood of
//! token j+1 under the logits at j. Perplexity is exp(mean NLL) over all scored
//! tokens. Used for loading-only methods (every token here is a prefill token, so
//! selective computation does not apply).

use anyhow::ensure;

use crate::engine::{Model, Session, SessionOptions};

/// The outcome of [`perplexity`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Perplexity {
    /// exp(mean NLL).
    pub ppl: f64,
    /// Mean negative log-likelihood (nats).
    pub mean_nll: f64,
    /// Tokens scored.
    pub tokens: usize,
    /// Chunks evaluated.
    pub chunks: usize,
    /// Chunk length.
    pub n_ctx: usize,
}

/// -log softmax(logits)[target], computed in f64.
pub fn nll(logits: &[f32], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&x| (x as f64 - max).exp()).sum();
    -(logits[target] as f64 - max - sum.ln())
}

/// Perplexity of `text` in chunks of `n_ctx` tokens (at most `max_chunks`).
pub fn perplexity(model: &Model, text: &str, n_ctx: usize, max_chunks: Option<usize>, threads: i32) -> anyhow::Result<Perplexity> {
    ensure!(n_ctx >= 16, "the chunk length must be at least 16 tokens");
    let tokens = model.tokenize(text, true, false);
    let n_chunks = (tokens.len() / n_ctx).min(max_chunks.unwrap_or(usize::MAX));
    ensure!(n_chunks > 0, "the text has {} tokens, fewer than one chunk of {n_ctx}", tokens.len());
    let bos = model.tokenize("", true, false).first().copied();
    let mut s = Session::new(model, SessionOptions { n_ctx: n_ctx as u32, n_batch: n_ctx as u32, threads, observer: None })?;
    let (mut sum, mut count) = (0f64, 0usize);
    for c in 0..n_chunks {
        let mut chunk = tokens[c * n_ctx..(c + 1) * n_ctx].to_vec();
        if let Some(b) = bos {
            chunk[0] = b;
        }
        let logits = s.eval_all_logits(&chunk)?;
        for j in n_ctx / 2..n_ctx - 1 {
            sum += nll(&logits[j], tokens[c * n_ctx + j + 1] as usize);
            count += 1;
        }
    }
    let mean = sum / count as f64;
    Ok(Perplexity { ppl: mean.exp(), mean_nll: mean, tokens: count, chunks: n_chunks, n_ctx })
}

#[cfg(test)]
mod tests {
    use super::nll;

    #[test]
    fn nll_is_minus_log_softmax() {
        // Uniform logits: -log(1/4).
        assert!((nll(&[1.0; 4], 2) - 4f64.ln()).abs() < 1e-12);
        // softmax([0, ln 3]) = [1/4, 3/4].
        assert!((nll(&[0.0, 3f32.ln()], 1) - (4.0f64 / 3.0).ln()).abs() < 1e-7);
    }
}
