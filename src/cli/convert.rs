//! `selectinfer convert MODEL --to TYPE -o OUT`.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::engine::{quantize, TargetType};
use crate::model::ModelInfo;
use crate::output::format_bytes;

/// Arguments of `convert`.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Source GGUF model.
    pub model: PathBuf,
    /// Target weight type. Quantized sources are dequantized and requantized
    /// (llama.cpp's allow_requantize), which is lossy; f16/f32 from a quantized
    /// source gives the exact dequantized weights.
    #[arg(long, value_enum)]
    pub to: TargetType,
    /// Output file; written under a temporary name and renamed when complete.
    #[arg(short, long)]
    pub output: PathBuf,
    /// CPU threads (default: all cores).
    #[arg(short, long)]
    pub threads: Option<i32>,
}

pub fn run(args: ConvertArgs) -> anyhow::Result<()> {
    let src = ModelInfo::read(&args.model).with_context(|| format!("cannot convert {}", args.model.display()))?;
    if crate::fsutil::same_file(&args.model, &args.output) {
        bail!("output {} is the input file; choose another path", args.output.display());
    }
    let quantized_source = src.ffn_types.iter().any(|t| !matches!(t.as_str(), "F32" | "F16" | "BF16"));
    let note = match (quantized_source, matches!(args.to, TargetType::F32 | TargetType::F16 | TargetType::Bf16)) {
        (true, true) => "(dequantizing a quantized source)",
        (true, false) => "(requantizing a quantized source: quantization errors compound)",
        _ => "",
    };
    eprintln!(
        "convert: {} ({}, {}) -> {} {note}",
        args.model.display(),
        src.ffn_types.join("/"),
        format_bytes(src.total_bytes),
        args.to.name(),
    );
    let threads = args.threads.unwrap_or_else(crate::engine::default_threads);
    quantize(&args.model, &args.output, args.to, threads)?;
    let out = ModelInfo::read(&args.output).context("reading the converted file back")?;
    eprintln!("convert: wrote {} ({})", args.output.display(), format_bytes(out.total_bytes));
    Ok(())
}

