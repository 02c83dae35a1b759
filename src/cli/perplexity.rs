//! `selectinfer perplexity`: llama-perplexity-style perplexity of a text file.

use std::path::PathBuf;

use anyhow::Context;

use crate::engine::{LoadOptions, Model};
use crate::eval::perplexity::perplexity;

/// Arguments of `perplexity`.
#[derive(Debug, clap::Args)]
pub struct PerplexityArgs {
    /// GGUF model (original, quantized or sliced).
    #[arg(short, long)]
    pub model: PathBuf,
    /// Text file, read as is (default: the bundled wikitext-2 test set).
    #[arg(long, default_value = "data/wikitext2_raw_test.txt")]
    pub data: PathBuf,
    /// Chunk length in tokens (llama-perplexity's -c); the second half of each chunk is scored.
    #[arg(long, default_value_t = 512)]
    pub ctx: usize,
    /// Most chunks to evaluate (default: all).
    #[arg(long)]
    pub chunks: Option<usize>,
    /// CPU threads (default: all cores).
    #[arg(short, long)]
    pub threads: Option<i32>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: PerplexityArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.data).with_context(|| format!("reading {}", a.data.display()))?;
    let model = Model::load(&a.model, &LoadOptions::default()).with_context(|| format!("cannot load {}", a.model.display()))?;
    let threads = a.threads.unwrap_or_else(crate::engine::default_threads);
    let p = perplexity(&model, &text, a.ctx, a.chunks, threads)?;
    if a.json {
        println!("{}", serde_json::to_string(&p)?);
    } else {
        println!(
            "perplexity {:.4} (mean NLL {:.5} nats over {} tokens, {} chunks of {})",
            p.ppl, p.mean_nll, p.tokens, p.chunks, p.n_ctx
        );
    }
    Ok(())
}
