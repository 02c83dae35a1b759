//! Dynamic neuron selection during prefill (the paper's per-prompt choice): the
//! observer that counts a prompt's votes. The rule itself ([`Votes`],
//! [`compute_set`]) sits in [`crate::profile::votes`], which the computed refit
//! ([`crate::fit::computed`]) shares.

use std::sync::{Arc, Mutex};

use crate::engine::{ObservedTensor, TensorObserver};

use super::prefill_fit::PrefillFit;
pub use crate::profile::votes::{compute_set, Vote, Votes};

/// Shared between the observer (inside llama.cpp's callback) and the generator.
#[derive(Debug)]
pub struct SelectorState {
    /// Count votes only while true (prefill).
    pub enabled: bool,
    /// Votes of the current prompt.
    pub votes: Votes,
    /// Per layer: how many neurons each token votes for.
    pub k_token: Vec<usize>,
    /// What tokens rank their neurons by.
    pub vote: Vote,
    /// The prompt refit, run layer by layer during the prefill (`--decode-refit`).
    pub fit: Option<PrefillFit>,
}

/// The eval-callback observer that collects [`Votes`] while enabled.
#[derive(Debug)]
pub struct VoteObserver {
    prefix: String,
    state: Arc<Mutex<SelectorState>>,
}

impl VoteObserver {
    /// An observer of `<node>-<layer>` activation nodes.
    pub fn new(node: &str, state: Arc<Mutex<SelectorState>>) -> VoteObserver {
        VoteObserver { prefix: format!("{node}-"), state }
    }

    fn layer_of(&self, name: &str) -> Option<usize> {
        name.strip_prefix(&self.prefix)?.parse().ok()
    }
}

impl TensorObserver for VoteObserver {
    fn wants(&mut self, name: &str) -> bool {
        let Some(l) = self.layer_of(name) else { return false };
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.enabled && matches!(s.votes.layers.get(l), Some(Some(_)))
    }

    fn observe(&mut self, t: ObservedTensor<'_>) {
        let Some(l) = self.layer_of(t.name) else { return };
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (k, vote) = (s.k_token[l], s.vote);
        s.votes.add_rows(l, t.data, t.ne[0], k, vote);
        let SelectorState { votes, fit, .. } = &mut *s;
        if let Some(fit) = fit {
            fit.after_rows(t.model, l, votes);
        }
    }
}
