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
//! scored ([`crate::tasks::evaluation_text`]): each evaluation example's prompt followed by its
//! reference answer, the text a task-specific slice must still model. Experiments
//! keep one [`PerplexityRow`] per (file, text) in `perplexity.csv`.
//!
//! Intervals: the chunks are the units resampled (a chunk's tokens are not
//! independent of each other; chunks of a long text nearly are). The 95% interval
//! is a bootstrap over chunks (1000 resamples, seed 12345, as task scores) of
//! exp(sum NLL / sum tokens), and two files scored on the same chunks are paired
//! chunk by chunk ([`paired_difference`]); every row keeps its chunks' NLL sums so
//! that a report can pair it later. [`NllSpan`] serves answer perplexity too
//! ([`super::answers`]), where the units are examples.

use anyhow::ensure;

use super::bootstrap::{percentile_interval, resamples, Interval, RESAMPLES, SEED};
use crate::engine::Model;
use crate::profile::text::{text_nll, TextNll};

/// The outcome of [`perplexity`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Perplexity {
    /// exp(mean NLL).
    pub ppl: f64,
    /// Lower end of its 95% bootstrap interval over chunks (None for one chunk,
    /// which has no spread to resample).
    pub ppl_lo: Option<f64>,
    /// Upper end.
    pub ppl_hi: Option<f64>,
    /// Mean negative log-likelihood (nats).
    pub mean_nll: f64,
    /// Tokens scored.
    pub tokens: usize,
    /// Chunks evaluated.
    pub chunks: usize,
    /// Chunk length.
    pub n_ctx: usize,
    /// Each chunk's summed NLL (nats) over its scored tokens.
    pub chunk_nll: Vec<f64>,
}

/// A scored stretch of text (a perplexity chunk, an example's answer): its tokens
/// and their summed negative log-likelihood.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct NllSpan {
    /// Tokens scored.
    pub tokens: usize,
    /// Their summed negative log-likelihood (nats).
    pub nll: f64,
}

/// exp(sum NLL / sum tokens) of the spans at `idx`.
pub fn perplexity_of(v: &[NllSpan], idx: &[usize]) -> f64 {
    let (t, n) = idx.iter().fold((0usize, 0f64), |(t, n), &i| (t + v[i].tokens, n + v[i].nll));
    (n / t.max(1) as f64).exp()
}

/// The pooled perplexity of `v` with its 95% bootstrap interval over the spans.
pub fn perplexity_interval(v: &[NllSpan]) -> Interval {
    let sets = resamples(v.len(), RESAMPLES, SEED);
    percentile_interval(perplexity_of(v, &(0..v.len()).collect::<Vec<_>>()), sets.iter().map(|s| perplexity_of(v, s)).collect())
}

/// The paired interval of `system`'s perplexity minus `baseline`'s over the same
/// spans (the same resamples for both).
pub fn paired_difference(system: &[NllSpan], baseline: &[NllSpan]) -> anyhow::Result<Interval> {
    ensure!(system.len() == baseline.len(), "{} spans against {}", system.len(), baseline.len());
    let all: Vec<usize> = (0..system.len()).collect();
    let sets = resamples(system.len(), RESAMPLES, SEED);
    let diff = |idx: &[usize]| perplexity_of(system, idx) - perplexity_of(baseline, idx);
    Ok(percentile_interval(diff(&all), sets.iter().map(|s| diff(s)).collect()))
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
    /// Lower end of its 95% bootstrap interval over chunks (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub ppl_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub ppl_hi: Option<f64>,
    /// Mean negative log-likelihood (nats).
    pub mean_nll: f64,
    /// Tensor bytes of the file.
    pub weight_bytes: u64,
    /// Wall seconds (load and evaluation).
    pub wall_s: f64,
    /// CPU threads.
    pub threads: i32,
    /// Each chunk's summed NLL, `;`-separated, for paired intervals (empty in rows
    /// written before intervals existed).
    #[serde(default)]
    pub chunk_nll: String,
    /// With `--kl-reference`: that file's name (empty otherwise).
    #[serde(default)]
    pub kl_reference: Option<String>,
    /// Mean KL divergence (nats per token) of this file's next-token distributions
    /// from the reference's, over the same scored tokens.
    #[serde(default)]
    pub kl: Option<f64>,
    /// Its 95% bootstrap interval over chunks.
    #[serde(default)]
    pub kl_lo: Option<f64>,
    #[serde(default)]
    pub kl_hi: Option<f64>,
    /// Share of scored positions whose most likely next token is the reference's.
    #[serde(default)]
    pub same_top: Option<f64>,
}

impl PerplexityRow {
    /// The row's chunks as spans (each scores `tokens / chunks` tokens); None when
    /// the row has no chunk sums, they do not match its chunk count, or there is
    /// one chunk only (nothing to resample).
    pub fn chunk_spans(&self) -> Option<Vec<NllSpan>> {
        let nll: Vec<f64> = self.chunk_nll.split(';').map(str::parse).collect::<Result<_, _>>().ok()?;
        (self.chunks > 1 && nll.len() == self.chunks && self.tokens % self.chunks == 0).then(|| chunk_spans(&nll, self.tokens / self.chunks))
    }

    /// The paired difference of this row's perplexity to `baseline`'s, when both
    /// scored the same text in the same chunks.
    pub fn paired_with(&self, baseline: &PerplexityRow) -> Option<Interval> {
        let same_text = (&self.task, &self.data, self.ctx, self.chunks, self.tokens) == (&baseline.task, &baseline.data, baseline.ctx, baseline.chunks, baseline.tokens);
        paired_difference(&self.chunk_spans()?, &baseline.chunk_spans().filter(|_| same_text)?).ok()
    }
}

/// Chunk NLL sums as spans of `tokens_per_chunk` tokens each.
pub fn chunk_spans(chunk_nll: &[f64], tokens_per_chunk: usize) -> Vec<NllSpan> {
    chunk_nll.iter().map(|&nll| NllSpan { tokens: tokens_per_chunk, nll }).collect()
}

/// `;`-separated chunk sums, each written so that it reads back to the same f64.
pub fn format_chunk_nll(chunk_nll: &[f64]) -> String {
    chunk_nll.iter().map(f64::to_string).collect::<Vec<_>>().join(";")
}

/// Perplexity of `text` in chunks of `n_ctx` tokens (at most `max_chunks`).
pub fn perplexity(model: &Model, text: &str, n_ctx: usize, max_chunks: Option<usize>, threads: i32) -> anyhow::Result<Perplexity> {
    Ok(with_interval(text_nll("perplexity", model, text, n_ctx, max_chunks, threads, None)?))
}

/// The perplexity of a pass over chunks ([`crate::profile::text`]) with its
/// interval over the chunks (none for one chunk).
pub fn with_interval(t: TextNll) -> Perplexity {
    let iv = (t.chunks > 1).then(|| perplexity_interval(&chunk_spans(&t.chunk_nll, t.per_chunk)));
    Perplexity { ppl: t.ppl, ppl_lo: iv.map(|iv| iv.lo), ppl_hi: iv.map(|iv| iv.hi), mean_nll: t.mean_nll, tokens: t.tokens, chunks: t.chunks, n_ctx: t.n_ctx, chunk_nll: t.chunk_nll }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{evaluation_text, read_examples, Task};

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
    fn pooled_perplexity_and_intervals() {
        let v = [NllSpan { tokens: 2, nll: 2.0 }, NllSpan { tokens: 3, nll: 6.0 }];
        assert!((perplexity_of(&v, &[0, 1]) - (8.0f64 / 5.0).exp()).abs() < 1e-12);
        assert!((perplexity_of(&v, &[0, 0]) - 1f64.exp()).abs() < 1e-12);
        let iv = perplexity_interval(&v);
        assert!(iv.lo <= iv.point && iv.point <= iv.hi && iv.lo >= 1f64.exp() - 1e-9 && iv.hi <= 2f64.exp() + 1e-9, "{iv:?}");
        let d = paired_difference(&v, &v).unwrap();
        assert_eq!((d.point, d.lo, d.hi), (0.0, 0.0, 0.0));
        assert!(paired_difference(&v, &v[..1]).is_err());
    }

    #[test]
    fn a_row_pairs_with_another_over_the_same_chunks() {
        let sums = [10.5f64, 12.0, 0.1 + 0.2, 11.0];
        let row = |model: &str, sums: &[f64]| PerplexityRow {
            timestamp: String::new(),
            git_commit: String::new(),
            machine: String::new(),
            model: model.into(),
            task: None,
            data: "w.txt".into(),
            ctx: 16,
            max_chunks: Some(4),
            chunks: 4,
            tokens: 28,
            ppl: 1.0,
            ppl_lo: None,
            ppl_hi: None,
            mean_nll: 0.0,
            weight_bytes: 1,
            wall_s: 1.0,
            threads: 2,
            chunk_nll: format_chunk_nll(sums),
            kl_reference: None,
            kl: None,
            kl_lo: None,
            kl_hi: None,
            same_top: None,
        };
        let (a, b) = (row("a", &sums), row("b", &[9.0, 12.5, 1.0, 10.0]));
        // The text round trip keeps every bit (0.1 + 0.2 is not 0.3).
        assert_eq!(a.chunk_spans().unwrap().iter().map(|s| (s.tokens, s.nll)).collect::<Vec<_>>(), sums.iter().map(|&n| (7, n)).collect::<Vec<_>>());
        let d = a.paired_with(&b).unwrap();
        let expect = perplexity_of(&chunk_spans(&sums, 7), &[0, 1, 2, 3]) - (32.5f64 / 28.0).exp();
        assert!((d.point - expect).abs() < 1e-12 && d.lo <= d.point && d.point <= d.hi, "{d:?}");
        // Another text, another chunk count, or no sums: not paired.
        assert!(a.paired_with(&PerplexityRow { data: "x.txt".into(), ..b.clone() }).is_none());
        assert!(a.paired_with(&PerplexityRow { chunk_nll: String::new(), ..b.clone() }).is_none());
        assert!(PerplexityRow { chunks: 3, ..a.clone() }.chunk_spans().is_none());
        assert!(PerplexityRow { chunks: 1, tokens: 7, chunk_nll: "10.5".into(), ..a.clone() }.chunk_spans().is_none(), "one chunk: no interval");
    }
}
