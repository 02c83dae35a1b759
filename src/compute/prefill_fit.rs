//! The prompt refit ([`super::refit`]) run while the prompt is prefilled, so that
//! its memory stays bounded.
//!
//! Fitting after the prefill would hold every sparsified layer's activation rows at
//! once (T x the loaded width x 4 bytes per layer: 78 KiB per token on Gemma-3-270M
//! at gamma 0.7) plus every layer's change D until the install. Here the vote
//! observer hands each layer over as soon as its activations are complete (the
//! callback of its last batch): its set is chosen, it is fitted (its products and
//! solves split over the session's threads, bit-identical to one thread) and its
//! rows are freed. When decode reorders in place, each fitted layer is installed
//! (reordered, its computed `ffn_down` columns and bias changed) at the next
//! observed layer's callback, whose node comes after the layer's own FFN in the
//! graph, so nothing of this prefill reads the layer's weights again; its D is
//! freed then. Left for after the prefill: the last fitted layer's install, any
//! layer whose rows never completed (the last layer of a model, which llama.cpp
//! computes for the output tokens only), and, with gathered copies, every layer's D.
//!
//! Bounded whatever the prompt's length: the fit uses the prompt's last batch
//! (`n_batch`, 512 tokens; all of a shorter prompt), which the session decodes whole
//! after the tokens before it ([`crate::engine::Session::prefill_last_batch_whole`]),
//! and only that batch's rows are kept; so at most one layer's fit buffers and the
//! rows of the layers of that batch not yet fitted are held at a time. (Until
//! 2026-12-03 a longer prompt was fitted on all its tokens and held every layer's
//! rows of its earlier batches until its last batch reached that layer, 39 MiB on
//! Gemma-3-270M's summaries, and two layers were fitted at once, one per thread,
//! each with its own buffers.) The votes, and so the computed sets, still count
//! every token.

use std::borrow::Cow;

use anyhow::Context;

use crate::engine::Model;
use crate::profile::weights::DownRows;

use super::refit::{prompt_refit_rows, PromptRefit};
use super::select::{compute_set, Votes};

/// Where a layer stands in the current prompt.
#[derive(Debug, Default)]
pub enum LayerFit {
    /// Not fitted yet (or not fitted during the prefill).
    #[default]
    Waiting,
    /// Fitted; not yet installed.
    Fitted { set: Vec<u32>, fit: PromptRefit },
    /// Reordered in place with its fit applied; `swapped` neurons moved.
    Installed { set: Vec<u32>, swapped: usize },
}

/// What the vote observer needs to fit layers during the prefill, and what it did.
#[derive(Debug)]
pub struct PrefillFit {
    ridge: f64,
    /// Threads each fit's products and solves are split over.
    threads: usize,
    /// The prompt's tokens: a layer's rows are complete when this many have voted
    /// (the rows kept are the last batch's).
    prompt_tokens: u64,
    /// Install each fitted layer in place during the prefill.
    in_place: bool,
    /// Per layer: the static positions and how many dynamic ones (`None`: dense).
    plan: Vec<Option<(Vec<u32>, usize)>>,
    /// Per layer: what was done.
    pub layers: Vec<LayerFit>,
    /// The first failure inside the callback (reported after the prefill).
    pub error: Option<anyhow::Error>,
}

impl PrefillFit {
    /// A job for a prompt of `prompt_tokens` tokens, each fit on `threads` threads;
    /// `plan` gives each sparsified layer's static positions and dynamic count.
    pub fn new(ridge: f64, threads: usize, prompt_tokens: usize, in_place: bool, plan: Vec<Option<(Vec<u32>, usize)>>) -> PrefillFit {
        let layers = plan.iter().map(|_| LayerFit::Waiting).collect();
        PrefillFit { ridge, threads: threads.max(1), prompt_tokens: prompt_tokens as u64, in_place, plan, layers, error: None }
    }

    /// Called by the observer after layer `l`'s rows of a batch were added to
    /// `votes`: once `l`'s rows are complete it is fitted (its rows freed), and the
    /// fitted layers before `l` are installed (in place).
    pub fn after_rows(&mut self, model: &Model, l: usize, votes: &mut Votes) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.step(model, l, votes) {
            self.error = Some(e);
        }
    }

    fn step(&mut self, model: &Model, l: usize, votes: &mut Votes) -> anyhow::Result<()> {
        if votes.tokens.get(l) == Some(&self.prompt_tokens) && matches!(self.layers.get(l), Some(LayerFit::Waiting)) {
            self.fit(model, l, votes)?;
        }
        if self.in_place {
            for p in 0..l.min(self.layers.len()) {
                self.install(model, p)?;
            }
        }
        Ok(())
    }

    /// Fits every layer that still has rows (after the prefill: those whose rows
    /// never completed, e.g. a model's last layer, which llama.cpp computes for the
    /// output tokens only).
    pub fn fit_rest(&mut self, model: &Model, votes: &mut Votes) -> anyhow::Result<()> {
        for l in 0..self.layers.len() {
            if matches!(self.layers[l], LayerFit::Waiting) && matches!(votes.rows.get(l), Some(Some(_))) {
                self.fit(model, l, votes)?;
            }
        }
        Ok(())
    }

    /// Chooses layer `l`'s set from `votes`, fits it on its rows and frees them.
    fn fit(&mut self, model: &Model, l: usize, votes: &mut Votes) -> anyhow::Result<()> {
        let (Some(Some((stat, n_dynamic))), Some(Some(v))) = (self.plan.get(l), votes.layers.get(l)) else { return Ok(()) };
        let set = compute_set(v, stat, *n_dynamic);
        let rows = votes.rows.get_mut(l).and_then(Option::take).unwrap_or_default();
        let down = loaded_down(model, l)?;
        let fit = prompt_refit_rows(&|e, out| down.row(e, out), down.n_embd, down.n_ff, rows, &set, self.ridge, self.threads).with_context(|| format!("--decode-refit, layer {l}"))?;
        self.layers[l] = LayerFit::Fitted { set, fit };
        Ok(())
    }

    /// Reorders layer `l` in place and applies its fit, if it is fitted and not yet installed.
    pub fn install(&mut self, model: &Model, l: usize) -> anyhow::Result<()> {
        self.layers[l] = match std::mem::take(&mut self.layers[l]) {
            LayerFit::Fitted { set, fit } => LayerFit::Installed { swapped: install_in_place(model, l, &set, Some(&fit))?, set },
            other => other,
        };
        Ok(())
    }
}

/// Reorders layer `l` (in file order) so that `set` comes first and, with a fit,
/// changes its computed `ffn_down` columns and its bias. Returns the neurons moved.
pub fn install_in_place(model: &Model, l: usize, set: &[u32], fit: Option<&PromptRefit>) -> anyhow::Result<usize> {
    let swapped = model.place_ffn_prefix(l, set)?;
    if let Some(fit) = fit {
        model.shift_ffn_down_prefix(l, set.len(), &fit.columns)?;
        model.shift_ffn_down_bias(l, &fit.bias)?;
    }
    Ok(swapped)
}

/// Layer `l`'s loaded `ffn_down`, read a row at a time: llama.cpp's host copy
/// where it holds one in file layout (in file order when used: before the layer is
/// reordered), else the file's bytes.
pub fn loaded_down(model: &Model, l: usize) -> anyhow::Result<DownRows<'_>> {
    let g = model.gguf();
    let name = format!("blk.{l}.ffn_down.weight");
    let bytes = match model.host_tensor_bytes(&name) {
        Some(b) => Cow::Borrowed(b),
        None => Cow::Owned(model.read_file_tensor(&name).with_context(|| format!("reading {name} of {}", g.path.display()))?),
    };
    DownRows::of(g, l, bytes)
}
