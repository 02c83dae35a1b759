//! Perplexity on a text, chunked as llama.cpp's `llama-perplexity` does.
//!
//! The text is tokenized whole (with BOS), cut into `n_ctx`-token chunks (the tail
//! that does not fill a chunk is dropped), and each chunk is evaluated from an empty
//! cache with its first token replaced by BOS. Only the second half of each chunk is
//! scored: for positions j in [n_ctx/2, n_ctx - 1), the negative log-likelihood of
//! token j+1 under the logits at j. Perplexity is exp(mean NLL) over all scored
//! tokens. Used for loading-only methods (every token here is a prefill token, so
//! selective computation does not apply).
//!
//! Besides plain text files (wikitext-2), a task's own evaluation text can be
//! scored ([`evaluation_text`]): each evaluation example's prompt followed by its
//! reference answer, the text a task-specific slice must still model. Experiments
//! keep one [`PerplexityRow`] per (file, text) in `perplexity.csv`.

use std::path::PathBuf;

use anyhow::{ensure, Context};

use crate::engine::{Model, Session, SessionOptions, TensorObserver, Token};
use crate::tasks::{read_examples, Example, Split, Task};

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

/// One CSV row of `selectinfer perplexity --out`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PerplexityRow {
    /// UTC time the row was written.
    pub timestamp: String,
    /// selectinfer's git commit (or "unknown").
    pub git_commit: String,
    /// CPU model and cores.
    pub machine: String,
    /// Model file name.
    pub model: String,
    /// The task whose evaluation text was scored (empty: a plain text file).
    pub task: Option<String>,
    /// Text or dataset file name.
    pub data: String,
    /// Chunk length.
    pub ctx: usize,
    /// Most chunks asked for (empty: all).
    pub max_chunks: Option<usize>,
    /// Chunks evaluated.
    pub chunks: usize,
    /// Tokens scored.
    pub tokens: usize,
    /// Perplexity.
    pub ppl: f64,
    /// Mean negative log-likelihood (nats).
    pub mean_nll: f64,
    /// Tensor bytes of the file.
    pub weight_bytes: u64,
    /// Wall seconds (load and evaluation).
    pub wall_s: f64,
    /// CPU threads.
    pub threads: i32,
}

/// A task's evaluation text: every example solved (its prompt, a space, its first
/// reference; [`crate::eval::harness::solved_example`], as k-shot examples are
/// written), separated by blank lines.
pub fn evaluation_text(examples: &[Example]) -> String {
    examples.iter().map(crate::eval::harness::solved_example).collect::<Vec<_>>().join("\n\n")
}

/// -log softmax(logits)[target], computed in f64.
pub fn nll(logits: &[f32], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&x| (x as f64 - max).exp()).sum();
    -(logits[target] as f64 - max - sum.ln())
}

/// Perplexity of `text` in chunks of `n_ctx` tokens (at most `max_chunks`).
pub fn perplexity(model: &Model, text: &str, n_ctx: usize, max_chunks: Option<usize>, threads: i32) -> anyhow::Result<Perplexity> {
    perplexity_observed(model, text, n_ctx, max_chunks, threads, None)
}

/// [`perplexity`] with an observer on the graph (e.g. a
/// [`crate::select::NeuronMask`] that slices layers without writing a file).
pub fn perplexity_observed(
    model: &Model,
    text: &str,
    n_ctx: usize,
    max_chunks: Option<usize>,
    threads: i32,
    observer: Option<Box<dyn TensorObserver>>,
) -> anyhow::Result<Perplexity> {
    let chunks = text_chunks(model, text, n_ctx, max_chunks)?;
    let n_chunks = chunks.len();
    let mut s = Session::new(model, SessionOptions { n_ctx: n_ctx as u32, n_batch: n_ctx as u32, threads, observer })?;
    let (mut sum, mut count) = (0f64, 0usize);
    let bar = crate::output::progress_bar(true, n_chunks as u64, "perplexity");
    for chunk in &chunks {
        // Logits of the scored half only (the output layer dominates on large vocabularies).
        let logits = s.eval_logits_from(chunk, n_ctx / 2)?;
        for j in n_ctx / 2..n_ctx - 1 {
            sum += nll(&logits[j - n_ctx / 2], chunk[j + 1] as usize);
            count += 1;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mean = sum / count as f64;
    Ok(Perplexity { ppl: mean.exp(), mean_nll: mean, tokens: count, chunks: n_chunks, n_ctx })
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
    use super::*;
    use crate::tasks::{read_examples, Task};

    #[test]
    fn the_evaluation_text_is_each_prompt_followed_by_its_reference() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let line = |id: &str, src: &str, r: &str| format!("{{\"id\": \"{id}\", \"src\": \"{src}\", \"ref\": \"{r}\", \"src_lang\": \"de\", \"tgt_lang\": \"en\"}}\n");
        std::fs::write(&path, line("a", "Hallo Welt", "Hello world") + &line("b", "Danke", "Thanks") + &line("c", "Ja", "Yes")).unwrap();
        let ex = read_examples(&path, Task::Translate).unwrap();
        let text = evaluation_text(&ex[..2]);
        assert_eq!(text, "German phrase: Hallo Welt\nEnglish phrase: Hello world\n\nGerman phrase: Danke\nEnglish phrase: Thanks");
        // The same solved form as the k-shot examples of a prompt.
        let prompt = crate::eval::harness::prompt_with_shots(&ex[2], &ex[..2]);
        assert_eq!(prompt, format!("{text}\n\nGerman phrase: Ja\nEnglish phrase:"));
    }

    #[test]
    fn nll_is_minus_log_softmax() {
        // Uniform logits: -log(1/4).
        assert!((nll(&[1.0; 4], 2) - 4f64.ln()).abs() < 1e-12);
        // softmax([0, ln 3]) = [1/4, 3/4].
        assert!((nll(&[0.0, 3f32.ln()], 1) - (4.0f64 / 3.0).ln()).abs() < 1e-7);
    }
}
