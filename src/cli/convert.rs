//! `selectinfer convert MODEL --to TYPE -o OUT`.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::engine::{quantize, TargetType};
use crate::gguf::{copy_with_metadata, GgufFile, Value};
use crate::profile::ranking;
use crate::util::hash::file_sha256;
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
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
}

pub fn run(args: ConvertArgs) -> anyhow::Result<()> {
    let src = ModelInfo::read(&args.model).with_context(|| format!("cannot convert {}", args.model.display()))?;
    if crate::fsutil::same_file(&args.model, &args.output) {
        bail!("output {} is the input file; choose another path", args.output.display());
    }
    // llama.cpp's quantizer reports a missing or read-only folder only as an iostream error.
    crate::fsutil::check_output_target(&args.output)?;
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
    let threads = args.threads.get();
    // To a quantized type, llama.cpp's quantizer writes a temporary file and the
    // final file is that one plus the lineage (sha256 of the source, then the
    // source's own lineage), so that a profile of the source (the F16 original)
    // applies to the conversion (slice checks it). Float targets are llama.cpp's
    // output as it is, so the F16 originals that committed profiles fingerprint
    // stay byte for byte what they were.
    if matches!(args.to, TargetType::F32 | TargetType::F16 | TargetType::Bf16) {
        quantize(&args.model, &args.output, args.to, threads)?;
        let out = ModelInfo::read(&args.output).context("reading the converted file back")?;
        eprintln!("convert: wrote {} ({})", args.output.display(), format_bytes(out.total_bytes));
        return Ok(());
    }
    let tmp = crate::fsutil::TempPath::beside(&args.output);
    quantize(&args.model, tmp.path(), args.to, threads)?;
    let source = GgufFile::read(&args.model)?;
    let mut lineage = vec![file_sha256(&args.model).with_context(|| format!("hashing {}", args.model.display()))?];
    lineage.extend(ranking::lineage(&source));
    let quantized = GgufFile::read(tmp.path()).context("reading the quantizer's output")?;
    copy_with_metadata(&quantized, &args.output, &[(ranking::LINEAGE_KEY.to_string(), Value::strings(lineage))])
        .with_context(|| format!("writing {}", args.output.display()))?;
    drop(tmp);
    let out = ModelInfo::read(&args.output).context("reading the converted file back")?;
    eprintln!("convert: wrote {} ({})", args.output.display(), format_bytes(out.total_bytes));
    Ok(())
}

