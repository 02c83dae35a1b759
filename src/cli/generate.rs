//! `selectinfer generate -m MODEL -p PROMPT`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, Context};

use crate::engine::{GenerateOptions, LoadOptions, Model, Session, SessionOptions};

/// Arguments of `generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// GGUF model file.
    #[arg(short, long)]
    pub model: PathBuf,
    /// Prompt text.
    #[arg(short, long)]
    pub prompt: String,
    /// Most tokens to generate.
    #[arg(short = 'n', long, default_value_t = 128)]
    pub n_predict: usize,
    /// Sampling temperature; 0 (the default) is greedy decoding.
    #[arg(long, default_value_t = 0.0)]
    pub temp: f32,
    /// Seed of the sampler (matters only with --temp above 0).
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// CPU threads (default: all cores).
    #[arg(short, long)]
    pub threads: Option<i32>,
    /// Context length in tokens.
    #[arg(long, default_value_t = 2048)]
    pub ctx: u32,
    /// Wrap the prompt in the model's own chat template as a user turn.
    #[arg(long)]
    pub chat: bool,
    /// Read the weights into memory instead of memory-mapping the file.
    #[arg(long)]
    pub no_mmap: bool,
    /// Print one JSON object (text and timings) instead of streaming text.
    #[arg(long)]
    pub json: bool,
}

/// One generation's outcome, as `--json` prints it.
#[derive(Debug, serde::Serialize)]
struct GenerateRecord {
    model: String,
    text: String,
    prompt_tokens: usize,
    generated_tokens: usize,
    prefill_tps: f64,
    decode_tps: f64,
    threads: i32,
    /// Tensor bytes of the file.
    weight_bytes: u64,
    /// Whether the weights were memory-mapped.
    mmap: bool,
    /// Resident memory after generation.
    #[serde(flatten)]
    memory: crate::memory::MemorySnapshot,
}

pub fn run(args: GenerateArgs) -> anyhow::Result<()> {
    if args.prompt.is_empty() {
        return Err(anyhow!("the prompt is empty"));
    }
    let model = Model::load(&args.model, &LoadOptions { mmap: !args.no_mmap, ..Default::default() })
        .with_context(|| format!("cannot load {}", args.model.display()))?;
    let threads = args.threads.unwrap_or_else(crate::engine::default_threads);
    let mut session = Session::new(&model, SessionOptions { n_ctx: args.ctx, threads, ..Default::default() })?;
    let tokens = if args.chat {
        let text = model.apply_chat_template(&[("user", &args.prompt)])?;
        model.tokenize(&text, false, true)
    } else {
        model.tokenize(&args.prompt, true, false)
    };
    let opts = GenerateOptions { max_tokens: args.n_predict, temperature: args.temp, seed: args.seed };
    let mut stdout = std::io::stdout().lock();
    let mut text = String::new();
    let mut write_err = None;
    let (_, stats) = session.generate(&tokens, &opts, |piece| {
        text.push_str(piece);
        if args.json {
            return true;
        }
        match stdout.write_all(piece.as_bytes()).and_then(|_| stdout.flush()) {
            Ok(()) => true,
            Err(e) => {
                write_err = Some(e);
                false
            }
        }
    })?;
    if let Some(e) = write_err {
        return Err(e).context("writing to stdout");
    }
    if args.json {
        let rec = GenerateRecord {
            model: args.model.display().to_string(),
            text,
            prompt_tokens: stats.prompt_tokens,
            generated_tokens: stats.generated_tokens,
            prefill_tps: stats.prefill_tps(),
            decode_tps: stats.decode_tps(),
            threads,
            weight_bytes: crate::model::ModelInfo::from_gguf(model.gguf())?.total_bytes,
            mmap: !args.no_mmap,
            memory: crate::memory::MemorySnapshot::now(),
        };
        writeln!(stdout, "{}", serde_json::to_string(&rec)?)?;
    } else {
        writeln!(stdout)?;
        stdout.flush()?;
        eprintln!(
            "prefill: {} tokens, {:.1} tok/s | decode: {} tokens, {:.1} tok/s | {} threads",
            stats.prompt_tokens,
            stats.prefill_tps(),
            stats.generated_tokens,
            stats.decode_tps(),
            threads
        );
    }
    Ok(())
}
