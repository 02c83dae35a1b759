//! Cross-field checks of an experiment, run by every `experiment` invocation
//! (`--dry-run` included) before anything is prepared: what a cell's child
//! `slice` or `eval` would refuse hours later, after conversions and profiling,
//! is refused here with the cell named.
//!
//! Per cell: static (delta) at most load (gamma) for a slice, compute (phi) at
//! most load and at least static (unless the cell computes dynamic neurons
//! only), sparsified layers inside the model's layers (when the model's layer
//! count is known before running: an existing source file or a synthetic
//! shape), at least one example, and threads in range.

use anyhow::bail;

use super::config::{Cell, Experiment, Prep};
use crate::model::ModelInfo;

/// Checks every cell of `e`; the error names the first bad cell and field.
pub fn check(e: &Experiment, cells: &[Cell]) -> anyhow::Result<()> {
    if !(1..=crate::cli::opts::MAX_THREADS).contains(&e.threads) {
        bail!("threads is {}; give 1 to {}", e.threads, crate::cli::opts::MAX_THREADS);
    }
    let n_layers: Vec<Option<usize>> = e.models.iter().map(model_layers).collect();
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
        let layers = slice.and_then(|s| s.2).or_else(|| c.compute_layers.clone());
        if let (Some(range), Some(n)) = (layers, n_layers[c.model]) {
            if range.end > n {
                bail!("{label}: layers {}..{} go past the {n} layers of model {}", range.start, range.end, m.name);
            }
        }
    }
    Ok(())
}

/// The layer count of a model known before running: its source file's, or its
/// synthetic shape's.
fn model_layers(m: &super::config::ModelSpec) -> Option<usize> {
    if let Some(src) = m.source.as_ref().filter(|p| p.exists()) {
        return ModelInfo::read(src).ok().map(|i| i.n_layer);
    }
    let shape = m.synth.as_deref()?;
    let shape = <crate::synth::Shape as clap::ValueEnum>::from_str(shape, true).ok()?;
    Some(shape.spec(crate::gguf::GgmlType::F16, 1).n_layer)
}
