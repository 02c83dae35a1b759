//! Cross-field checks of an experiment, run by every `experiment` invocation
//! (`--dry-run` included) before anything is prepared: what a cell's child
//! `slice` or `eval` would refuse hours later, after conversions and profiling,
//! is refused here with the cell named.
//!
//! Per cell: static (delta) at most load (gamma) for a slice, compute (phi) at
//! most load and at least static (unless the cell computes dynamic neurons
//! only), sparsified layers inside the model's layers (when the model's layer
//! count is known before running: an existing source file or a synthetic
//! shape), at least one example, threads in range, a per-layer budget's floor
//! between static and load, and the decode bias or refit only on a column-major
//! slice with a bias (compensate: mean or refit). Then each cell's child
//! command line (`eval`, `perplexity`) is parsed by the real command definitions,
//! with their value checks and the options that apply only with others
//! ([`crate::cli::applies`]), exactly as the child will parse it ([`ChildParser`]).

use std::path::Path;

use anyhow::bail;

use super::config::{Cell, Experiment, Prep};
use crate::model::ModelInfo;
use crate::select::variant::Compensation;
use crate::select::DownLayout;

/// The command line's own check of a child's arguments (without the program
/// name), as the child will parse them: `Err` says why the child would refuse
/// them. The command line ([`crate::cli`]) supplies it, so that this check needs
/// nothing above it.
pub type ChildParser<'a> = dyn Fn(Vec<String>) -> Result<(), String> + 'a;

/// The decode bias or refit of a cell needs a column-major profile slice with a down
/// bias. A quantized base keeps whole blocks of `ffn_down` columns (256 for Q4_K_M's
/// K-quants, 32 for Q8_0), so where every sparsified layer of the model (`widths`,
/// when known) rounds up to all its neurons, the slice drops none and writes no bias.
fn check_decode_shift(label: &str, c: &Cell, widths: Option<&[u64]>) -> anyhow::Result<()> {
    let what = if c.decode_bias { "decode_bias" } else { "decode_refit" };
    if let (Prep::ProfileSlice { base, down: DownLayout::Columns, load, layers, variant, .. }, Some(widths)) = (&c.prep, widths) {
        let block = match base.quant() {
            Some("q4_k_m") => 256,
            Some(_) => 32,
            None => 1,
        };
        let range = layers.clone().unwrap_or_else(|| crate::select::default_layer_range(widths.len()));
        let drops = |l: usize| widths.get(l).is_some_and(|&n| crate::select::rewrite::block_rounded_load(*load, n as usize, block) < 1.0);
        if block > 1 && !variant.budget.is_per_layer() && !range.clone().any(drops) {
            bail!(
                "{label}: {what} shifts the slice's ffn_down bias, but on base {} every sparsified layer keeps all its neurons (ffn_down columns are kept in whole blocks of {block}), so the slice has no bias",
                base.name()
            );
        }
    }
    match &c.prep {
        Prep::ProfileSlice { variant, .. } if variant.compensation == Compensation::None => {
            bail!("{label}: {what} shifts the slice's ffn_down bias, and compensate: none writes none; give compensate: mean or refit")
        }
        Prep::ProfileSlice { down: DownLayout::Neurons, .. } => bail!("{label}: {what} reads ffn_down in llama.cpp's layout; down_layout: neurons stores it neuron-major"),
        Prep::ProfileSlice { .. } => Ok(()),
        _ => bail!("{label}: {what} needs a profile slice with an ffn_down bias (compensate: mean or refit)"),
    }
}

/// Checks every cell of `e`; the error names the first bad cell and field.
pub fn check(e: &Experiment, cells: &[Cell], parses: &ChildParser<'_>) -> anyhow::Result<()> {
    let child_parses = |label: &str, args: Vec<String>| parses(args).map_err(|why| anyhow::anyhow!("{label}: its child would refuse it: {why}"));
    if !(1..=crate::engine::MAX_THREADS).contains(&e.threads) {
        bail!("threads is {}; give 1 to {}", e.threads, crate::engine::MAX_THREADS);
    }
    let widths: Vec<Option<Vec<u64>>> = e.models.iter().map(model_widths).collect();
    for c in cells {
        let m = &e.models[c.model];
        let label = c.label(&m.name);
        let slice = match &c.prep {
            Prep::ProfileSlice { load, static_share, layers, .. } | Prep::RandomSlice { load, static_share, layers, .. } => {
                Some((*load, *static_share, layers.clone()))
            }
            Prep::F16 | Prep::Quant(_) => None,
        };
        if let Some((load, st, _)) = &slice {
            if st > load {
                bail!("{label}: static (delta) {st} exceeds load (gamma) {load}; delta is a part of gamma");
            }
        }
        if let (Some((phi, _)), Some((load, st, _))) = (c.compute, &slice) {
            if phi > *load + 1e-9 {
                bail!("{label}: compute (phi) {phi} exceeds load (gamma) {load}; only loaded neurons can be computed");
            }
            if !c.no_static && phi + 1e-9 < *st {
                bail!("{label}: compute (phi) {phi} is below static (delta) {st}; the static neurons are always computed");
            }
        }
        if c.examples == 0 {
            bail!("{label}: examples is 0");
        }
        if let Prep::ProfileSlice { variant, load, static_share, .. } = &c.prep {
            let floor = variant.budget_floor;
            if variant.budget.is_per_layer() && (floor > *load + 1e-9 || floor + 1e-9 < *static_share) {
                bail!("{label}: budget_floor {floor} is outside [static (delta) {static_share}, load (gamma) {load}]");
            }
        }
        if c.decode_bias || c.decode_refit.is_some() {
            check_decode_shift(&label, c, widths[c.model].as_deref())?;
        }
        let call = super::child::EvalCall::new(c, m.file(&c.prep), c.examples).with_reference(m.reference);
        child_parses(&label, call.args(Path::new("results.csv"), Some(Path::new("outputs.jsonl")), e.threads))?;
        let layers = slice.and_then(|s| s.2).or_else(|| c.compute_layers.clone());
        if let (Some(range), Some(n)) = (layers, widths[c.model].as_ref().map(Vec::len)) {
            if range.end > n {
                bail!("{label}: layers {}..{} go past the {n} layers of model {}", range.start, range.end, m.name);
            }
        }
    }
    for p in super::perplexity::ppl_cells(e, cells) {
        let m = &e.models[p.model];
        child_parses(&p.label(m), p.args(&m.file(&p.prep), &m.reference_path(), Path::new("perplexity.csv"), e.threads))?;
    }
    Ok(())
}

/// The FFN width of each layer of a model, known before running: its source
/// file's, or its synthetic shape's.
fn model_widths(m: &super::config::ModelSpec) -> Option<Vec<u64>> {
    if let Some(src) = m.source.as_ref().filter(|p| p.exists()) {
        return ModelInfo::read(src).ok().map(|i| i.n_ff);
    }
    let shape = m.synth.as_deref()?;
    let shape = <crate::synth::Shape as clap::ValueEnum>::from_str(shape, true).ok()?;
    let spec = shape.spec(crate::gguf::GgmlType::F16, 1);
    Some((0..spec.n_layer).map(|l| spec.n_ff[l.min(spec.n_ff.len() - 1)] as u64).collect())
}
