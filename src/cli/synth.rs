//! `selectinfer synth`: random-weight GGUFs with real models' dimensions.

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::gguf::GgmlType;
use crate::output::format_bytes;
use crate::synth::{write_model, Shape};

/// Arguments of `synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// Dimensions to copy. The weights are random: use these files for speed and
    /// memory measurements only, never for task scores.
    #[arg(long, value_enum)]
    pub shape: Shape,
    /// Weight type of the matrices: f16, bf16 or f32 (quantize afterwards with `convert`).
    #[arg(long = "type", default_value = "f16")]
    pub ty: String,
    /// Seed of the weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output GGUF; written under a temporary name and renamed when complete.
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(a: SynthArgs) -> anyhow::Result<()> {
    let ty = match a.ty.to_ascii_lowercase().as_str() {
        "f16" => GgmlType::F16,
        "bf16" => GgmlType::BF16,
        "f32" => GgmlType::F32,
        other => bail!("--type must be f16, bf16 or f32, got {other:?} (quantize the result with `selectinfer convert`)"),
    };
    let spec = a.shape.spec(ty, a.seed);
    eprintln!("synth: writing {:?} with random {} weights (SYNTHETIC: speed and memory only) to {}", a.shape, a.ty, a.output.display());
    write_model(&spec, &a.output).with_context(|| format!("cannot write {}", a.output.display()))?;
    let info = crate::model::ModelInfo::read(&a.output)?;
    eprintln!("synth: wrote {} ({} layers, n_embd {}, n_ff {})", format_bytes(info.total_bytes), info.n_layer, info.n_embd, info.n_ff[0]);
    Ok(())
}
