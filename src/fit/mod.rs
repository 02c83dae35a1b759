//! What slicing needs measured, between profiling and `slice` in the data flow:
//! the task's activation moments ([`moments`]), the chained passes through the
//! slice cut so far ([`chain`]), the computed refit's pass ([`computed`]), each
//! layer's output sensitivity ([`sensitivity`], for `--budget output`), and the
//! least-squares solve they feed ([`solve`]). [`compensate`] hands `slice`
//! ([`crate::select`]) a ready [`Compensated`]: new `ffn_down` biases and kept
//! columns for the sparsified layers, from the keep sets it chose
//! ([`crate::profile::keep`]).
//!
//! The measurements run the engine over a task's profiling text
//! ([`crate::profile::text`]); [`mask::NeuronMask`] slices a layer in the graph
//! without writing a file.

pub mod chain;
pub mod computed;
pub mod mask;
pub mod moments;
pub mod sensitivity;
pub mod solve;

use std::path::Path;

use anyhow::{bail, ensure, Context};

use crate::gguf::GgufFile;
use crate::model::ModelInfo;
use crate::profile::keep::LayerKeep;
use crate::profile::moments::{read_layer_moments, required_moments};
use crate::profile::ranking::{check_model_lineage, read_raw_dir, signed_means, ModelFingerprint};
use crate::tasks::Task;
use chain::Chain;
use computed::ComputedFit;

/// What replaces the dropped neurons' output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Compensation {
    /// Nothing (the paper's).
    #[default]
    None,
    /// Their mean contribution over the profiling tokens, as an `ffn_down` bias.
    Mean,
    /// The kept `ffn_down` columns and a bias fitted by ridge regression to the whole
    /// layer's output over the profiling tokens ([`solve`]; needs the task's
    /// activation moments, `profile moments`).
    Refit,
    /// The same fit, layer after layer, on the activations of the slice with the
    /// layers before already refitted, to the whole model's output
    /// ([`chain`]; runs the task's profiling text once per sparsified
    /// layer).
    #[serde(rename = "refit-chained")]
    RefitChained,
    /// The refit for selective computation: each profiling chunk's tokens count
    /// once with every loaded neuron (as prefill computes them) and once with only
    /// the static neurons and the chunk's dynamic set (as decode computes them),
    /// the set chosen by the chunk's own votes ([`ComputedFit`];
    /// [`computed`]; runs the task's profiling text once).
    #[serde(rename = "refit-computed")]
    RefitComputed,
}

impl Compensation {
    /// The name used on the command line and in metadata.
    pub fn name(self) -> &'static str {
        match self {
            Compensation::None => "none",
            Compensation::Mean => "mean",
            Compensation::Refit => "refit",
            Compensation::RefitChained => "refit-chained",
            Compensation::RefitComputed => "refit-computed",
        }
    }
}

/// What compensation writes: new `ffn_down` biases and, for the refit, each
/// sparsified layer's new kept columns (row-major `[n_embd][kept]`).
#[derive(Debug, Default)]
pub struct Compensated {
    pub biases: Vec<(String, Vec<f32>)>,
    pub columns: Vec<Option<Vec<f32>>>,
}

/// Why a written `ffn_down` bias would not be read by llama.cpp's loader of this
/// model's architecture, if it would not: only its llama builder and, with
/// patches 0009 and 0010, its gemma3, qwen2 and qwen3 builders load an optional
/// `ffn_down.bias`.
pub fn down_bias_unread(info: &ModelInfo) -> Option<String> {
    down_bias_unread_by(&info.architecture)
}

/// [`down_bias_unread`] for an architecture name.
fn down_bias_unread_by(architecture: &str) -> Option<String> {
    (!matches!(architecture, "llama" | "gemma3" | "qwen2" | "qwen3")).then(|| {
        format!(
            "an ffn_down bias, which llama.cpp's {architecture} loader does not read (only its llama builder and, with patches 0009 and 0010, \
             its gemma3, qwen2 and qwen3 builders load an optional ffn_down.bias)"
        )
    })
}

/// What compensates each sparsified layer's dropped neurons. Mean: the bias
/// b = sum over dropped n of W_down[:, n] x mean a_n over the task's profiling
/// tokens. Refit: new kept columns and a bias ([`solve`]), chained: the
/// same fitted layer after layer on the slice's own activations
/// ([`chain`]); computed: for the selective computation ([`computed`]). Nothing
/// without compensation.
#[allow(clippy::too_many_arguments)]
pub fn compensate(
    kind: Compensation,
    computed_fit: ComputedFit,
    src: &GgufFile,
    info: &ModelInfo,
    keeps: &[Option<LayerKeep>],
    profile: Option<(&Path, Task)>,
    fp: &ModelFingerprint,
    lineage: &[String],
    chain: Chain<'_>,
) -> anyhow::Result<Compensated> {
    let mut out = Compensated { biases: Vec::new(), columns: vec![None; info.n_layer] };
    if kind == Compensation::None {
        return Ok(out);
    }
    let flag = kind.name();
    let Some((dir, task)) = profile else { bail!("--compensate {flag} needs a profile (--profile DIR --task T), not --random") };
    if let Some(why) = down_bias_unread(info) {
        bail!("--compensate {flag} writes {why}");
    }
    let sparsified = || keeps.iter().enumerate().filter_map(|(l, k)| k.as_ref().filter(|k| !k.is_whole(info.n_ff[l] as usize)).map(|k| (l, k)));
    for (l, _) in sparsified() {
        let name = format!("blk.{l}.ffn_down.bias");
        ensure!(src.tensor(&name).is_none(), "{} already has {name}; compensating a model with down biases is not supported", src.path.display());
    }
    if kind == Compensation::RefitChained {
        return chain::chained_refit(src, info, keeps, task, chain);
    }
    if kind == Compensation::RefitComputed {
        return computed::computed_refit(src, info, keeps, task, chain.text, computed_fit);
    }
    if kind == Compensation::Refit {
        let path = required_moments(dir, task, &fp.sha256, lineage)?;
        // A layer of a 1.5B model (n_ff 8960) takes about 15 s on 2 cores: say so.
        let bar = crate::output::progress_bar(true, sparsified().count() as u64, &format!("refit {task}"));
        for (l, keep) in sparsified() {
            let (header, moments) = read_layer_moments(&path, l)?;
            check_model_lineage(&path, &header.model, fp, lineage)?;
            ensure!(header.task == task, "{} holds {} moments, not {task}", path.display(), header.task);
            ensure!(
                header.n_ff.iter().map(|&n| n as u64).eq(info.n_ff.iter().copied()),
                "{} describes FFN widths {:?}, but {} has {:?}",
                path.display(),
                header.n_ff,
                src.path.display(),
                info.n_ff
            );
            let (w, n_embd, n_ff) = crate::profile::weights::down_matrix(src, l)?;
            let fit = solve::refit_down(&w, n_embd, n_ff, &keep.kept, &moments, solve::REFIT_DAMPING)
                .with_context(|| format!("refitting layer {l} from {}", path.display()))?;
            out.biases.push((format!("blk.{l}.ffn_down.bias"), fit.bias));
            out.columns[l] = Some(fit.columns);
            bar.inc(1);
        }
        bar.finish_and_clear();
        return Ok(out);
    }
    let raws = read_raw_dir(dir)?;
    let means = signed_means(&raws, Some(task)).map_err(anyhow::Error::msg).with_context(|| format!("cannot compensate from {}", dir.display()))?;
    for (l, keep) in sparsified() {
        out.biases.push((format!("blk.{l}.ffn_down.bias"), dropped_contribution(src, l, &keep.kept, &means[l])?));
    }
    Ok(out)
}

/// W_down[:, dropped] x mean[dropped] of layer `l` (dropped = not in `kept`).
pub fn dropped_contribution(src: &GgufFile, l: usize, kept: &[u32], mean: &[f64]) -> anyhow::Result<Vec<f32>> {
    let (m, n_embd, n_ff) = crate::profile::weights::down_matrix(src, l)?;
    ensure!(mean.len() == n_ff, "layer {l}: the profile has {} neurons, the model {n_ff}", mean.len());
    let mut dropped = vec![true; n_ff];
    kept.iter().for_each(|&k| dropped[k as usize] = false);
    Ok((0..n_embd)
        .map(|r| {
            let row = &m[r * n_ff..(r + 1) * n_ff];
            (0..n_ff).filter(|&n| dropped[n]).map(|n| f64::from(row[n]) * mean[n]).sum::<f64>() as f32
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::down_bias_unread_by;

    #[test]
    fn the_down_bias_is_read_by_the_patched_builders_only() {
        for arch in ["llama", "gemma3", "qwen2", "qwen3"] {
            assert_eq!(down_bias_unread_by(arch), None, "{arch}");
        }
        for arch in ["gemma2", "mistral", "gemma"] {
            let why = down_bias_unread_by(arch).unwrap();
            assert!(why.contains(&format!("llama.cpp's {arch} loader does not read")), "{why}");
        }
    }
}
