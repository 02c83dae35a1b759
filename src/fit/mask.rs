//! Reference masking: run the dense model with some FFN neurons' activations
//! zeroed through the eval callback.
//!
//! Zeroing a neuron's activation before `ffn_down` is, mathematically, the same as
//! deleting its row of `ffn_gate`/`ffn_up` and column of `ffn_down`. The
//! sensitivity measurement ([`super::sensitivity`]) slices one layer at a time this
//! way, without writing a file; tests compare sliced (and, later, compacted) models
//! against this reference.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::engine::{ObservedTensor, TensorObserver};
use crate::model::FfnActivation;

/// Zeroes, in each listed layer, every neuron not in its keep set.
#[derive(Debug, Clone)]
pub struct NeuronMask {
    prefix: String,
    /// Per layer: `None` = leave whole, `Some(set)` = keep only these neurons.
    keep: Vec<Option<HashSet<u32>>>,
    /// Masks only while true.
    enabled: Arc<AtomicBool>,
}

impl NeuronMask {
    /// A mask for a model with this activation; `keep[l]` lists the original
    /// indices layer `l` keeps.
    pub fn new(activation: FfnActivation, keep: Vec<Option<Vec<u32>>>) -> NeuronMask {
        NeuronMask {
            prefix: format!("{}-", activation.node_name()),
            keep: keep.into_iter().map(|k| k.map(|v| v.into_iter().collect())).collect(),
            enabled: Arc::new(AtomicBool::new(true)),
        }
    }

    /// A switch that turns the mask off (`false`) and on again, e.g. to run a
    /// prompt's prefill densely and mask only its decode steps.
    pub fn switch(&self) -> Arc<AtomicBool> {
        self.enabled.clone()
    }

    fn layer_of(&self, name: &str) -> Option<usize> {
        let l: usize = name.strip_prefix(&self.prefix)?.parse().ok()?;
        self.keep.get(l)?.as_ref().map(|_| l)
    }
}

impl TensorObserver for NeuronMask {
    fn wants(&mut self, name: &str) -> bool {
        self.enabled.load(Ordering::Relaxed) && self.layer_of(name).is_some()
    }

    fn observe(&mut self, t: ObservedTensor<'_>) {
        let Some(layer) = self.layer_of(t.name) else { return };
        let keep = self.keep[layer].as_ref().expect("checked");
        let width = t.ne[0];
        for row in t.data.chunks_exact_mut(width) {
            for (n, x) in row.iter_mut().enumerate() {
                if !keep.contains(&(n as u32)) {
                    *x = 0.0;
                }
            }
        }
    }
}
