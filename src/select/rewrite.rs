//! The GGUF rewriter behind `selectinfer slice`.
//!
//! Weight handling per type:
//! - `ffn_gate`/`ffn_up` (`[n_embd, n_ff]`, one row per neuron): kept rows are copied
//!   byte for byte, whatever the type (a row is whole blocks).
//! - `ffn_down` (`[n_ff, n_embd]`, one column per neuron): F32/F16/BF16 columns are
//!   gathered exactly. For quantized types a kept column set cuts through
//!   quantization blocks, so the rows are dequantized with ggml's own `to_float`,
//!   gathered and stored as F16 (exact up to F16 rounding of the dequantized values;
//!   no second quantization error). This costs memory on quantized sources; the
//!   paper's setting (and ours) slices the F16 original.
//! - with `--down-layout neurons` every layer's `ffn_down` is stored transposed,
//!   `[n_embd, n_ff]` (one row per neuron, patch 0006): F32/F16 exactly (BF16 refused), quantized
//!   types requantized once, K-quants in llama.cpp's fallback type for rows that are
//!   not whole K-quant blocks ([`neuron_major_type`]). Every neuron
//!   is then a row of all three matrices, so selective computation reorders and
//!   views them in place for every type ([`crate::engine`]).
//! - biases of gate/up are gathered; every other tensor is copied byte for byte.
//! - a layer that keeps all its neurons is copied unchanged (bit-identical output).

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};

use super::meta::{SliceMeta, META_PREFIX};
use super::variant::SliceVariant;
use crate::engine::{encode_columns, encode_transposed, gather_columns, gather_rows, requantize_columns, transpose_columns, LoadOptions, Model};
use crate::fit::chain::{Chain, FitText};
use crate::fit::Compensated;
use crate::gguf::{GgmlType, GgufFile, GgufWriter, TensorInfo, TensorSpec, Value};
use crate::model::{ffn_down_neuron_major, split_block_name, ModelInfo};
use crate::profile::keep::{keep_from_profile, keep_random, LayerKeep};
use crate::profile::packed::content_sha256;
use crate::profile::ranking::{model_ranking_path, task_ranking_path};
use crate::profile::{file_sha256, fingerprint_with_sha256};
use crate::util::floats::encode_floats;
use crate::util::rng::SplitMix64;
use crate::tasks::Task;

/// How a slice stores `ffn_down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DownLayout {
    /// `[n_ff, n_embd]`, one column per neuron, as llama.cpp writes it: the file also
    /// loads in stock llama.cpp (when every layer keeps the same width). Selective
    /// computation on a quantized `ffn_down` then needs a copy of the computed neurons.
    #[default]
    Columns,
    /// `[n_embd, n_ff]`, one row per neuron (patch 0006, our engine only): selective
    /// computation reorders the loaded weights in place, with no copy, for every type.
    Neurons,
}

impl DownLayout {
    /// The layout a file stores.
    pub fn of(g: &GgufFile) -> DownLayout {
        if ffn_down_neuron_major(g) {
            DownLayout::Neurons
        } else {
            DownLayout::Columns
        }
    }

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            DownLayout::Columns => "columns",
            DownLayout::Neurons => "neurons",
        }
    }
}

/// The quantization a file was made with by `convert` (`general.file_type`), as
/// `convert --to` names it; None for F16/F32 files and types `convert` does not write.
pub fn quantized_base(g: &GgufFile) -> Option<&'static str> {
    // llama_ftype values (llama.h): MOSTLY_Q4_0 = 2, MOSTLY_Q8_0 = 7, MOSTLY_Q4_K_M = 15.
    match g.get_u64("general.file_type")? {
        2 => Some("q4_0"),
        7 => Some("q8_0"),
        15 => Some("q4_k_m"),
        _ => None,
    }
}

/// How results label a slice's source beyond the paper's F16 columns, as parts of
/// their `variant` (`base=q4_k_m`, `down=neurons`): one function for the rows eval
/// writes (read from the file) and the keys an experiment matches them with.
pub fn source_labels(base: Option<&str>, down: DownLayout) -> Vec<String> {
    let mut parts: Vec<String> = base.map(|q| format!("base={q}")).into_iter().collect();
    if down == DownLayout::Neurons {
        parts.push(format!("down={}", down.name()));
    }
    parts
}

/// Where the kept neurons come from.
#[derive(Debug, Clone)]
pub enum SliceSource {
    /// A profile directory and the task whose ranking is the base.
    Profile {
        /// Profile directory (task-<task>.json and model.json).
        dir: PathBuf,
        /// Task.
        task: Task,
    },
    /// Uniformly random neurons (the paper's random-loading ablation).
    Random {
        /// Seed.
        seed: u64,
    },
}

/// A slicing job.
#[derive(Debug, Clone)]
pub struct SliceRequest {
    /// Source GGUF.
    pub model: PathBuf,
    /// Output GGUF.
    pub output: PathBuf,
    /// Selection.
    pub source: SliceSource,
    /// gamma: kept share of each sparsified layer.
    pub load: f64,
    /// delta: share taken first from the base ranking (the static neurons).
    pub static_share: f64,
    /// Sparsified layers; `None` = [`super::default_layer_range`].
    pub layers: Option<Range<usize>>,
    /// Load the result with llama.cpp to verify it.
    pub verify: bool,
    /// sha256 of `model` when the caller has already hashed it (`chat` keys its
    /// slice cache by it); `None` hashes the file here.
    pub source_sha256: Option<String>,
    /// How `ffn_down` is stored.
    pub down_layout: DownLayout,
}

/// What a slice did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SliceReport {
    /// Output file.
    pub output: String,
    /// Sparsified layers.
    pub layers: Range<usize>,
    /// FFN width per layer after slicing.
    pub n_ff: Vec<u64>,
    /// Tensor bytes of the source.
    pub source_total_bytes: u64,
    /// FFN bytes of the source.
    pub source_ffn_bytes: u64,
    /// Tensor bytes of the result.
    pub total_bytes: u64,
    /// FFN bytes of the result.
    pub ffn_bytes: u64,
    /// Whether a quantized ffn_down was requantized (same type with kept widths
    /// rounded to the type's block size, or transposed for `neurons`).
    pub down_requantized: bool,
    /// How ffn_down is stored.
    pub down_layout: DownLayout,
}

/// Parses `START..END` (end exclusive).
pub fn parse_layer_range(s: &str) -> Result<Range<usize>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("layer range must look like 4..26, got {s:?}"))?;
    let a: usize = a.trim().parse().map_err(|_| format!("bad range start in {s:?}"))?;
    let b: usize = b.trim().parse().map_err(|_| format!("bad range end in {s:?}"))?;
    if a >= b {
        return Err(format!("layer range {s} is empty"));
    }
    Ok(a..b)
}

/// What a profile slice records as its profile: sha256 over the hashes of the task's
/// base ranking and the model-wide secondary ranking, so a slice can be matched to
/// the exact rankings it came from.
pub fn profile_sha256(dir: &Path, task: Task) -> std::io::Result<String> {
    let mut h = content_sha256(&task_ranking_path(dir, task))?;
    h.push_str(&content_sha256(&model_ranking_path(dir))?);
    Ok(crate::profile::sha256_hex(h.as_bytes()))
}

/// Slices `req.model` into `req.output` (the paper's selection).
pub fn slice_model(req: &SliceRequest) -> anyhow::Result<SliceReport> {
    slice_model_with(req, &SliceVariant::default(), &FitText::default())
}

/// Slices `req.model` into `req.output` with a selection variant; `fit` is the text a
/// chained refit runs (`--compensate refit-chained`; unused otherwise).
pub fn slice_model_with(req: &SliceRequest, variant: &SliceVariant, fit: &FitText) -> anyhow::Result<SliceReport> {
    ensure!(req.load > 0.0 && req.load <= 1.0, "--load (gamma) must be in (0, 1], got {}", req.load);
    ensure!(
        req.static_share >= 0.0 && req.static_share <= req.load,
        "--static (delta) must be in [0, --load = {}], got {}",
        req.load,
        req.static_share
    );
    let src = GgufFile::read(&req.model).with_context(|| format!("cannot slice {}", req.model.display()))?;
    let info = ModelInfo::from_gguf(&src)?;
    info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    if SliceMeta::from_gguf(&src)?.is_some() {
        bail!("{} is already sliced; slice its source model instead (re-slicing is not supported)", req.model.display());
    }
    if crate::fsutil::same_file(&req.model, &req.output) {
        bail!("output {} is the input file; choose another path", req.output.display());
    }
    crate::fsutil::check_output_target(&req.output)?;
    let range = req.layers.clone().unwrap_or_else(|| super::default_layer_range(info.n_layer));
    ensure!(
        range.start < range.end && range.end <= info.n_layer,
        "layer range {}..{} is outside the model's {} layers",
        range.start,
        range.end,
        info.n_layer
    );

    let profile = match &req.source {
        SliceSource::Profile { dir, task } => Some((dir.as_path(), *task)),
        SliceSource::Random { .. } => None,
    };
    let source_sha = match &req.source_sha256 {
        Some(sha) => sha.clone(),
        None => file_sha256(&req.model).with_context(|| format!("hashing {}", req.model.display()))?,
    };
    let (range, base_loads) = variant.layer_loads(&src, &info, range, req.load, profile, &source_sha, &crate::profile::ranking::lineage(&src))?;
    // Per layer: the load share after rounding the kept width to whole blocks of
    // a quantized ffn_down (its columns are requantized in their own type).
    let loads: Vec<f64> = (0..info.n_layer)
        .map(|l| {
            let name = format!("blk.{l}.ffn_down.weight");
            let down = src.tensor(&name).with_context(|| format!("{} has no {name}", req.model.display()))?;
            if !down.ty.is_quantized() || !range.contains(&l) || req.down_layout == DownLayout::Neurons {
                return Ok(base_loads[l]);
            }
            ensure!(
                crate::engine::can_quantize(down.ty.0),
                "{name} of {} is {}: slicing its columns needs requantization in that type, which is not supported \
                 (supported: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K); slice the F16 original or a q8_0/q4_0/q4_k_m conversion",
                req.model.display(),
                down.ty
            );
            let block = down.ty.layout().map_or(1, |b| b.block_elems as usize);
            Ok(block_rounded_load(base_loads[l], info.n_ff[l] as usize, block))
        })
        .collect::<anyhow::Result<_>>()?;
    let fp = fingerprint_with_sha256(&req.model, &info, source_sha.clone());
    let (keeps, task, seed, profile_sha) = match &req.source {
        SliceSource::Profile { dir, task } => {
            let (base, secondary) = variant.slice_rankings(dir, *task, &fp, &crate::profile::ranking::lineage(&src))?;
            let keeps: Vec<Option<LayerKeep>> = (0..info.n_layer)
                .map(|l| range.contains(&l).then(|| keep_from_profile(&base.layers[l], &secondary.layers[l], loads[l], req.static_share.min(loads[l]))))
                .collect();
            if variant.compensation == crate::fit::Compensation::Refit {
                // Refused before minutes of measuring where the bias would not be read.
                if let Some(why) = crate::fit::down_bias_unread(&info) {
                    bail!("--compensate refit writes {why}");
                }
                crate::fit::moments::measure_on_first_use(dir, &req.model, *task, fit.threads, &fp.sha256, &crate::profile::ranking::lineage(&src))?;
            }
            (keeps, Some(task.name().to_string()), None, Some(variant.selection_sha256(dir, *task, &fp.sha256, &crate::profile::ranking::lineage(&src))?))
        }
        SliceSource::Random { seed } => {
            let mut rng = SplitMix64::new(*seed);
            let keeps = (0..info.n_layer)
                .map(|l| range.contains(&l).then(|| keep_random(info.n_ff[l] as usize, loads[l], req.static_share.min(loads[l]), &mut rng)))
                .collect();
            (keeps, None, Some(*seed), None)
        }
    };

    let meta = SliceMeta {
        variant: *variant,
        load: req.load,
        static_share: req.static_share,
        selection: if task.is_some() { "profile" } else { "random" }.into(),
        task,
        random_seed: seed,
        layer_start: range.start,
        layer_end: range.end,
        profile_sha256: profile_sha,
        source_sha256: source_sha,
        source_n_ff: info.n_ff.clone(),
        source_ffn_bytes: info.ffn_bytes,
        kept: keeps.iter().map(|k| k.as_ref().map(|k| k.kept.clone())).collect(),
        static_set: keeps.iter().map(|k| k.as_ref().map(|k| k.static_set.clone())).collect(),
        down_layout: req.down_layout,
    };
    if req.down_layout == DownLayout::Neurons {
        ensure!(
            matches!(info.architecture.as_str(), "llama" | "qwen2" | "qwen3" | "gemma3"),
            "--down-layout neurons is supported for llama, qwen2, qwen3 and gemma3 models, not {}",
            info.architecture
        );
        for l in 0..info.n_layer {
            let width = keeps[l].as_ref().map_or(info.n_ff[l], |k| k.kept.len() as u64);
            ensure!(
                width != info.n_embd,
                "layer {l} would keep {width} neurons, equal to the hidden size: a neuron-major ffn_down of that shape \
                 cannot be told from a plain one; choose another --load"
            );
        }
    }
    // A chained refit runs the slice cut so far: its layers before `upto`, the
    // others whole, with the compensation fitted so far.
    let write_prefix = |upto: usize, fitted: &Compensated, path: &Path| -> anyhow::Result<()> {
        let prefix = |v: &[Option<Vec<u32>>]| v.iter().enumerate().map(|(l, x)| x.clone().filter(|_| l < upto)).collect();
        let keeps: Vec<Option<LayerKeep>> = keeps.iter().enumerate().map(|(l, k)| k.clone().filter(|_| l < upto)).collect();
        let meta = SliceMeta { layer_end: upto.min(meta.layer_end), kept: prefix(&meta.kept), static_set: prefix(&meta.static_set), ..meta.clone() };
        write_sliced(&src, &info, &keeps, &meta, fitted, path).map(|_| ())
    };
    let compensated = crate::fit::compensate(
        variant.compensation,
        variant.computed_fit,
        &src,
        &info,
        &keeps,
        profile,
        &fp,
        &crate::profile::ranking::lineage(&src),
        Chain { text: fit, write_prefix: &write_prefix, staging: &req.output },
    )?;
    // Written and verified under a temporary name; only a file that loads takes the final one.
    let staged = crate::fsutil::TempPath::beside(&req.output);
    let down_requantized = write_sliced(&src, &info, &keeps, &meta, &compensated, staged.path())?;
    let out = ModelInfo::read(staged.path())?;
    if req.verify {
        Model::load(staged.path(), &LoadOptions::default())
            .map_err(|e| anyhow::Error::new(e).context(format!("the sliced file for {} does not load; nothing written", req.output.display())))?;
    }
    staged.persist(&req.output).with_context(|| format!("cannot write {}", req.output.display()))?;
    Ok(SliceReport {
        output: req.output.display().to_string(),
        layers: range,
        n_ff: out.n_ff.clone(),
        source_total_bytes: info.total_bytes,
        source_ffn_bytes: info.ffn_bytes,
        total_bytes: out.total_bytes,
        ffn_bytes: out.ffn_bytes,
        down_requantized,
        down_layout: req.down_layout,
    })
}


/// How one tensor is transformed.
enum Op<'k> {
    Copy,
    Rows(&'k [u32]),
    Columns(&'k [u32]),
    /// The kept columns (all when `None`) as rows, in the given type.
    Transpose(Option<&'k [u32]>, GgmlType),
}

fn op_for<'k>(t: &TensorInfo, keeps: &'k [Option<LayerKeep>], n_ff: &[u64], layout: DownLayout) -> anyhow::Result<Op<'k>> {
    let Some((layer, rest)) = split_block_name(&t.name) else { return Ok(Op::Copy) };
    let keep = keeps.get(layer).and_then(Option::as_ref).filter(|k| !k.is_whole(n_ff[layer] as usize));
    if rest == "ffn_down.weight" && layout == DownLayout::Neurons {
        ensure!(t.dims.len() == 2, "{} is not a matrix", t.name);
        return Ok(Op::Transpose(keep.map(|k| &k.kept[..]), neuron_major_type(t.ty, t.dims[1] as usize).with_context(|| t.name.clone())?));
    }
    let Some(keep) = keep else { return Ok(Op::Copy) };
    Ok(op_for_kept(rest, keep))
}

fn op_for_kept<'k>(rest: &str, keep: &'k LayerKeep) -> Op<'k> {
    match rest {
        "ffn_gate.weight" | "ffn_up.weight" | "ffn_gate.bias" | "ffn_up.bias" => Op::Rows(&keep.kept),
        "ffn_down.weight" => Op::Columns(&keep.kept),
        _ => Op::Copy,
    }
}

/// The type of a neuron-major `ffn_down` whose rows are `n_embd` long, from a source
/// of type `ty`. F32/F16 and the 32-element block types keep their type. K-quants
/// take llama.cpp's own fallback for rows that are not whole K-quant blocks
/// (`llama-quant.cpp`: Q4_K -> Q5_0, Q6_K -> Q8_0), whatever `n_embd`: a neuron-major
/// down projection runs patch 0005's fused one-token kernel, which has F16, Q8_0,
/// Q4_0 and Q5_0 paths, and K-quant rows through the generic path decoded 2.5x
/// slower on the Llama-3.2-1B shape (docs/neuron-major.md). A fused Q4_K kernel was
/// measured too: 6% faster per weight than Q5_0 (compute-bound, like Q5_0), within
/// the noise of a decode run, for one more rounding of the weights, so Q4_K rows are
/// not kept. Nor are Q6_K rows: with fused AVX2/AVX-512 Q6_K loops they read 3.5%
/// fewer bytes per token on the Llama-3.2-3B shape but decoded no faster than Q8_0
/// rows, which stream at memory speed (results/bench/synth-llama-3.2-3b-q6_k-down.md).
/// Q5_K -> Q5_0 (the same bits; llama.cpp's Q5_1 has no fused path), Q2_K
/// and Q3_K -> Q4_0. BF16 is refused: llama.cpp's CPU backend has no `out_prod` for it.
pub fn neuron_major_type(ty: GgmlType, n_embd: usize) -> anyhow::Result<GgmlType> {
    ensure!(
        ty != GgmlType::BF16,
        "a neuron-major ffn_down of BF16 is not supported (llama.cpp's CPU backend has no out_prod for BF16): \
         convert the model to F16 or F32 first, or slice with --down-layout columns"
    );
    if !ty.is_quantized() {
        return Ok(ty);
    }
    let chosen = match ty {
        GgmlType::Q4_K | GgmlType::Q5_K => GgmlType::Q5_0,
        GgmlType::Q6_K => GgmlType::Q8_0,
        GgmlType::Q2_K | GgmlType::Q3_K => GgmlType::Q4_0,
        t => t,
    };
    ensure!(
        crate::engine::can_quantize(chosen.0) && n_embd % chosen.layout().map_or(1, |b| b.block_elems as usize) == 0,
        "a neuron-major ffn_down of {ty} needs rows of {n_embd} in {chosen}, which cannot be made \
         (supported: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, with rows of whole blocks)"
    );
    Ok(chosen)
}

/// Writes the sliced file; returns whether a quantized ffn_down was requantized.
fn write_sliced(
    src: &GgufFile,
    info: &ModelInfo,
    keeps: &[Option<LayerKeep>],
    meta: &SliceMeta,
    compensated: &Compensated,
    out: &Path,
) -> anyhow::Result<bool> {
    let biases = &compensated.biases;
    let arch = &info.architecture;
    let new_ff: Vec<u64> = (0..info.n_layer)
        .map(|l| match &keeps[l] {
            Some(k) => k.kept.len() as u64,
            None => info.n_ff[l],
        })
        .collect();
    let ff_key = format!("{arch}.feed_forward_length");
    let ff_value = if new_ff.iter().all(|&n| n == new_ff[0]) { Value::U32(new_ff[0] as u32) } else { Value::u32s(new_ff.iter().map(|&n| n as u32)) };
    let mut metadata: Vec<(String, Value)> = src
        .metadata
        .iter()
        .filter(|(k, _)| !k.starts_with(META_PREFIX) || k == crate::profile::ranking::LINEAGE_KEY)
        .map(|(k, v)| if *k == ff_key { (k.clone(), ff_value.clone()) } else { (k.clone(), v.clone()) })
        .collect();
    metadata.extend(meta.to_metadata());

    let mut down_requantized = false;
    let specs: Vec<TensorSpec> = src
        .tensors
        .iter()
        .map(|t| {
            let mut s = TensorSpec::from(t);
            match op_for(t, keeps, &info.n_ff, meta.down_layout)? {
                Op::Copy => {}
                Op::Rows(kept) => *s.dims.last_mut().expect("dims") = kept.len() as u64,
                Op::Columns(kept) => {
                    s.dims[0] = kept.len() as u64;
                    down_requantized |= t.ty.is_quantized();
                }
                Op::Transpose(kept, ty) => {
                    s.dims = vec![t.dims[1], kept.map_or(t.dims[0], |k| k.len() as u64)];
                    s.ty = ty;
                    down_requantized |= t.ty.is_quantized();
                }
            }
            Ok(s)
        })
        .collect::<anyhow::Result<_>>()?;
    let order = write_order(&specs, meta.down_layout);
    let specs: Vec<TensorSpec> = order
        .iter()
        .map(|&i| specs[i].clone())
        .chain(biases.iter().map(|(name, b)| TensorSpec { name: name.clone(), dims: vec![b.len() as u64], ty: GgmlType::F32 }))
        .collect();

    let mut w = GgufWriter::create(out, &metadata, specs)?;
    for t in order.iter().map(|&i| &src.tensors[i]) {
        let data = src.read_tensor_data(t)?;
        let refit = split_block_name(&t.name).filter(|(_, rest)| *rest == "ffn_down.weight").and_then(|(l, _)| compensated.columns.get(l)?.as_ref());
        let new = match op_for(t, keeps, &info.n_ff, meta.down_layout)? {
            Op::Columns(kept) if refit.is_some() => encode_columns(refit.expect("checked"), t, kept.len())?,
            Op::Transpose(Some(kept), ty) if refit.is_some() => encode_transposed(refit.expect("checked"), t, kept.len(), ty)?,
            Op::Copy => data,
            Op::Rows(kept) => gather_rows(&data, t, kept)?,
            Op::Columns(kept) if t.ty.is_quantized() => requantize_columns(&data, t, kept)?,
            Op::Columns(kept) => gather_columns(&data, t, kept)?.1,
            Op::Transpose(kept, ty) => {
                let all: Vec<u32>;
                let kept = match kept {
                    Some(k) => k,
                    None => {
                        all = (0..t.dims[0] as u32).collect();
                        &all
                    }
                };
                transpose_columns(&data, t, kept, ty)?
            }
        };
        w.write_tensor(&new)?;
    }
    for (_, b) in biases {
        w.write_tensor(&encode_floats(b, GgmlType::F32).expect("F32 encodes"))?;
    }
    w.finish()?;
    Ok(down_requantized)
}

/// The order a slice's tensors are written in (indices into `specs`): first the
/// weights llama.cpp's CPU backend repacks into its own buffer on load (2-D
/// `blk.*.weight` of a type it has repacked kernels for, [`crate::engine::repackable`],
/// but never a neuron-major `ffn_down`, which selective computation keeps in the
/// file's layout), then the rest in the source's order. The repacked tensors' file
/// pages are read once at load and released (patch 0013); written apart, they share
/// no 2 MiB page-cache folio with the tensors every token reads from the mapping,
/// which would otherwise keep them resident (docs/qwen2.5-1.5b.md).
fn write_order(specs: &[TensorSpec], layout: DownLayout) -> Vec<usize> {
    let repacked = |s: &TensorSpec| {
        s.dims.len() == 2
            && s.name.starts_with("blk.")
            && s.name.ends_with(".weight")
            && crate::engine::repackable(s.ty)
            && !(layout == DownLayout::Neurons && s.name.ends_with(".ffn_down.weight"))
    };
    let (mut first, rest): (Vec<usize>, Vec<usize>) = (0..specs.len()).partition(|&i| repacked(&specs[i]));
    first.extend(rest);
    first
}

/// The load share that keeps, in a layer of `n` neurons whose `ffn_down` has
/// blocks of `block` elements along the neurons, the multiple of `block` nearest
/// to `gamma * n` (at least one block, at most `n`), so its columns stay whole
/// blocks of the source's type. `gamma` itself for unblocked types.
pub fn block_rounded_load(gamma: f64, n: usize, block: usize) -> f64 {
    if block <= 1 || n == 0 {
        return gamma;
    }
    let k = crate::profile::keep::count(gamma, n);
    let rounded = ((k + block / 2) / block * block).clamp(block.min(n), n);
    rounded as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repacked_weights_are_written_first_and_a_neuron_major_down_stays_with_the_rest() {
        let spec = |name: &str, ty: GgmlType, dims: &[u64]| TensorSpec { name: name.into(), dims: dims.to_vec(), ty };
        let specs = [
            spec("token_embd.weight", GgmlType::Q4_K, &[256, 8]),
            spec("blk.0.attn_norm.weight", GgmlType::F32, &[256]),
            spec("blk.0.attn_q.weight", GgmlType::Q4_K, &[256, 256]),
            spec("blk.0.attn_v.weight", GgmlType::Q6_K, &[256, 256]),
            spec("blk.0.ffn_gate.weight", GgmlType::Q4_K, &[256, 512]),
            spec("blk.0.ffn_down.weight", GgmlType::Q4_0, &[256, 512]),
            spec("blk.0.ffn_up.weight", GgmlType::IQ4_NL, &[256, 512]),
            spec("output_norm.weight", GgmlType::F32, &[256]),
        ];
        assert_eq!(write_order(&specs, DownLayout::Neurons), [2, 4, 6, 0, 1, 3, 5, 7]);
        assert_eq!(write_order(&specs, DownLayout::Columns), [2, 4, 5, 6, 0, 1, 3, 7]);
    }

    #[test]
    fn block_rounding_keeps_whole_blocks_nearest_to_gamma_n() {
        assert_eq!(block_rounded_load(0.7, 1536, 1), 0.7);
        // round(0.7 * 1536) = 1075 -> 1024 (4 blocks of 256); 0.7 * 192 = 134 -> 128.
        assert_eq!(block_rounded_load(0.7, 1536, 256) * 1536.0, 1024.0);
        assert_eq!(block_rounded_load(0.7, 192, 32) * 192.0, 128.0);
        // 0.7 * 2048 = 1434 -> 1536; never below one block, never above N.
        assert_eq!(block_rounded_load(0.7, 2048, 256) * 2048.0, 1536.0);
        assert_eq!(block_rounded_load(0.01, 1536, 256) * 1536.0, 256.0);
        assert_eq!(block_rounded_load(0.99, 1536, 256), 1.0);
    }

    #[test]
    fn quantize_rows_refuses_what_ggml_cannot_make_without_an_importance_matrix() {
        let data = vec![0.5f32; 256];
        assert!(crate::engine::quantize_rows(8, &data, 256).is_some(), "Q8_0");
        assert!(crate::engine::quantize_rows(14, &data, 256).is_some(), "Q6_K");
        assert!(crate::engine::quantize_rows(16, &data, 256).is_none(), "IQ2_XXS needs an importance matrix");
        assert!(crate::engine::quantize_rows(12, &data[..64], 64).is_none(), "Q4_K rows are 256 long");
        // Round trip through ggml's own dequantizer, within Q8_0's step (scale/127,
        // the scale stored as F16).
        let q = crate::engine::quantize_rows(8, &data, 256).unwrap();
        let back = crate::engine::dequantize(8, &q, 256).unwrap();
        assert!(back.iter().all(|x| (x - 0.5).abs() < 0.5 / 127.0), "{:?}", &back[..4]);
    }
}
