//! The compute plan: which layers decode computes selectively, and how many neurons.
//!
//! A [`ComputePlan`] comes from a sliced file's metadata ([`SliceMeta`]: N, the
//! loaded positions and the static ones per sparsified layer) or, for a file that
//! is not sliced (CoreInfer), from a layer range with no static set.

use anyhow::{bail, ensure};

use super::Vote;
use crate::profile::votes::computed_count;
use crate::gguf::GgufFile;
use crate::model::ModelInfo;
use crate::select::SliceMeta;

/// One sparsified layer of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerPlan {
    /// Original FFN width N.
    pub n_orig: usize,
    /// Neurons in the file (loaded).
    pub n_loaded: usize,
    /// File positions of the static neurons.
    pub static_positions: Vec<u32>,
}

/// Which layers compute selectively, and with what.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputePlan {
    /// Per layer; `None` = computed densely.
    pub layers: Vec<Option<LayerPlan>>,
    /// phi: computed share of N.
    pub compute: f64,
    /// alpha: share of loaded neurons each prompt token votes for.
    pub token_share: f64,
}

/// How to derive a plan from a model file.
#[derive(Debug, Clone)]
pub struct ComputeOptions {
    /// phi.
    pub compute: f64,
    /// alpha.
    pub token_share: f64,
    /// For a file that is not sliced (CoreInfer): the layers to sparsify
    /// (default: [`crate::select::default_layer_range`]).
    pub layers: Option<std::ops::Range<usize>>,
    /// Ignore the file's static set (CoreInfer on a sliced file: `--static 0`).
    pub no_static: bool,
}

impl ComputePlan {
    /// The plan for `g`: from its slice metadata when sliced, else CoreInfer over
    /// `opts.layers` with no static neurons.
    pub fn for_model(g: &GgufFile, opts: &ComputeOptions) -> anyhow::Result<ComputePlan> {
        ensure!(opts.token_share > 0.0 && opts.token_share <= 1.0, "--token-share (alpha) must be in (0, 1], got {}", opts.token_share);
        let info = ModelInfo::from_gguf(g)?;
        info.require_gated_ffn().map_err(anyhow::Error::msg)?;
        let mut layers = vec![None; info.n_layer];
        match SliceMeta::from_gguf(g)? {
            Some(meta) => {
                ensure!(opts.layers.is_none(), "--compute-layers applies to a file that is not sliced; {} computes selectively in its sliced layers {}..{}", g.path.display(), meta.layer_start, meta.layer_end);
                ensure!(
                    opts.compute <= meta.load + 1e-9,
                    "--compute (phi) {} exceeds the loaded share (gamma) {} of {}",
                    opts.compute,
                    meta.load,
                    g.path.display()
                );
                if !opts.no_static {
                    ensure!(
                        opts.compute + 1e-9 >= meta.static_share,
                        "--compute (phi) {} is below the static share (delta) {} of {}",
                        opts.compute,
                        meta.static_share,
                        g.path.display()
                    );
                }
                for l in meta.layer_start..meta.layer_end {
                    let (Some(kept), Some(stat)) = (&meta.kept[l], &meta.static_set[l]) else { continue };
                    let static_positions = if opts.no_static {
                        Vec::new()
                    } else {
                        let pos: std::collections::HashMap<u32, u32> = kept.iter().enumerate().map(|(p, &i)| (i, p as u32)).collect();
                        let mut v: Vec<u32> = stat.iter().filter_map(|i| pos.get(i).copied()).collect();
                        v.sort_unstable();
                        v
                    };
                    layers[l] = Some(LayerPlan { n_orig: meta.source_n_ff[l] as usize, n_loaded: kept.len(), static_positions });
                }
            }
            None => {
                ensure!(opts.compute > 0.0 && opts.compute <= 1.0, "--compute (phi) must be in (0, 1], got {}", opts.compute);
                let range = opts.layers.clone().unwrap_or_else(|| crate::select::default_layer_range(info.n_layer));
                ensure!(range.end <= info.n_layer && range.start < range.end, "layer range {range:?} is outside the model's {} layers", info.n_layer);
                for l in range {
                    let n = info.n_ff[l] as usize;
                    layers[l] = Some(LayerPlan { n_orig: n, n_loaded: n, static_positions: Vec::new() });
                }
            }
        }
        let plan = ComputePlan { layers, compute: opts.compute, token_share: opts.token_share };
        if let Some((l, lp)) = plan.layers.iter().enumerate().find_map(|(l, lp)| lp.as_ref().filter(|lp| plan.computed(lp) == 0).map(|lp| (l, lp))) {
            bail!("--compute (phi) {} keeps no neuron of layer {l} (N = {}); use a larger share", opts.compute, lp.n_orig);
        }
        Ok(plan)
    }

    /// A plan that computes every loaded neuron of every layer.
    pub fn dense(n_layer: usize) -> ComputePlan {
        ComputePlan { layers: vec![None; n_layer], compute: 1.0, token_share: super::DEFAULT_TOKEN_SHARE }
    }

    /// Neurons computed in a layer: `round(phi * N)`, at most the loaded ones.
    pub fn computed(&self, l: &LayerPlan) -> usize {
        computed_count(self.compute, l.n_orig, l.n_loaded, l.static_positions.len())
    }

    /// Whether decode computes fewer neurons than are loaded anywhere.
    pub fn is_selective(&self) -> bool {
        self.layers.iter().flatten().any(|l| self.computed(l) < l.n_loaded)
    }
}

/// How decode ran beyond the paper's (|a| vote, no decode-side compensation), as
/// the parts of a row's `variant`: `vote=signed`, `decode_bias`, `decode_refit=RIDGE`.
pub fn decode_labels(vote: Vote, decode_bias: bool, decode_refit: Option<f64>) -> Vec<String> {
    let mut parts = Vec::new();
    if vote == Vote::Signed {
        parts.push("vote=signed".into());
    }
    if decode_bias {
        parts.push("decode_bias".into());
    }
    if let Some(ridge) = decode_refit {
        parts.push(format!("decode_refit={ridge}"));
    }
    parts
}
