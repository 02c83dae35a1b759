//! The text passes that profiling, the fit ([`crate::fit`]) and evaluation share,
//! below all three in the data flow: a task's profiling text, the chunks
//! llama-perplexity cuts a text into, and one pass over them that sums each
//! chunk's negative log-likelihood. Evaluation adds the intervals
//! ([`crate::eval::perplexity`]); the fit's measurements run their observers
//! through the same pass.
//!
//! A chunk is evaluated from an empty cache with its first token replaced by BOS;
//! only its second half is scored: for positions j in [n_ctx/2, n_ctx - 1), the
//! negative log-likelihood of token j+1 under the logits at j.

use std::path::PathBuf;

use anyhow::{ensure, Context};

use crate::engine::{Model, Session, SessionOptions, TensorObserver, Token};
use crate::tasks::{evaluation_text, read_examples, Split, Task};

/// One pass over a text's chunks: the pooled NLL and each chunk's.
#[derive(Debug, Clone)]
pub struct TextNll {
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
    /// Tokens scored in each chunk.
    pub per_chunk: usize,
    /// Each chunk's summed NLL (nats) over its scored tokens.
    pub chunk_nll: Vec<f64>,
}

/// -log softmax(logits)[target], computed in f64.
pub fn nll(logits: &[f32], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&x| (x as f64 - max).exp()).sum();
    -(logits[target] as f64 - max - sum.ln())
}

/// The NLL of `text` in chunks of `n_ctx` tokens (at most `max_chunks`), with an
/// observer on the graph (e.g. a [`crate::fit::mask::NeuronMask`] that slices
/// layers without writing a file, or the fit's recorders); `what` names the pass
/// on the progress lines.
pub fn text_nll(
    what: &str,
    model: &Model,
    text: &str,
    n_ctx: usize,
    max_chunks: Option<usize>,
    threads: i32,
    observer: Option<Box<dyn TensorObserver>>,
) -> anyhow::Result<TextNll> {
    let chunks = text_chunks(model, text, n_ctx, max_chunks)?;
    score_chunks(what, model, &chunks, threads, observer, |_, _| Ok(()))
}

/// The NLL of `chunks` (each `n_ctx` tokens long) through `model`; `also` gets
/// each chunk and the logits of its scored positions (n_ctx/2 .. n_ctx - 1, each
/// predicting the next token), for measures taken in the same pass; `what` names
/// the pass on the progress lines.
pub fn score_chunks(
    what: &str,
    model: &Model,
    chunks: &[Vec<Token>],
    threads: i32,
    observer: Option<Box<dyn TensorObserver>>,
    mut also: impl FnMut(&[Token], &[Vec<f32>]) -> anyhow::Result<()>,
) -> anyhow::Result<TextNll> {
    ensure!(chunks.first().is_some_and(|c| c.len() >= 16), "perplexity needs at least one chunk of 16 or more tokens");
    let (n_chunks, n_ctx) = (chunks.len(), chunks[0].len());
    let mut s = Session::new(model, SessionOptions { n_ctx: n_ctx as u32, n_batch: n_ctx as u32, threads, observer })?;
    let mut chunk_nll = Vec::with_capacity(n_chunks);
    let per_chunk = n_ctx - 1 - n_ctx / 2;
    let bar = crate::output::progress_bar(true, n_chunks as u64, what);
    for chunk in chunks {
        // Logits of the scored half only (the output layer dominates on large vocabularies).
        let logits = s.eval_logits_from(chunk, n_ctx / 2)?;
        chunk_nll.push((n_ctx / 2..n_ctx - 1).map(|j| nll(&logits[j - n_ctx / 2], chunk[j + 1] as usize)).sum::<f64>());
        also(chunk, &logits[..per_chunk])?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let count = per_chunk * n_chunks;
    let mean = chunk_nll.iter().sum::<f64>() / count as f64;
    Ok(TextNll { ppl: mean.exp(), mean_nll: mean, tokens: count, chunks: n_chunks, n_ctx, per_chunk, chunk_nll })
}

/// The chunks perplexity scores: `text`'s tokens in runs of `n_ctx` (at most
/// `max_chunks`, at least one), each beginning with BOS as llama-perplexity's do.
pub fn text_chunks(model: &Model, text: &str, n_ctx: usize, max_chunks: Option<usize>) -> anyhow::Result<Vec<Vec<Token>>> {
    ensure!(n_ctx >= 16, "the chunk length must be at least 16 tokens");
    let tokens = model.tokenize(text, true, false);
    let n_chunks = (tokens.len() / n_ctx).min(max_chunks.unwrap_or(usize::MAX));
    ensure!(n_chunks > 0, "the text has {} tokens, fewer than one chunk of {n_ctx}", tokens.len());
    let bos = model.tokenize("", true, false).first().copied();
    Ok(tokens
        .chunks_exact(n_ctx)
        .take(n_chunks)
        .map(|c| {
            let mut chunk = c.to_vec();
            if let Some(b) = bos {
                chunk[0] = b;
            }
            chunk
        })
        .collect())
}

/// The profiling split of each task file, each example as its prompt and first
/// reference, files joined by a blank line.
pub fn profiling_text(data: &[PathBuf], task: Task) -> anyhow::Result<String> {
    let mut texts = Vec::new();
    for d in data {
        let examples = read_examples(d, task).with_context(|| format!("reading the profiling text of {}", d.display()))?;
        texts.push(evaluation_text(Split::Profile.select(&examples)));
    }
    Ok(texts.join("\n\n"))
}

/// File names of the task files, as measurement files record them.
pub fn data_names(data: &[PathBuf]) -> Vec<String> {
    data.iter().map(|d| d.file_name().map_or_else(|| d.display().to_string(), |n| n.to_string_lossy().into_owned())).collect()
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
