//! Selective computation: decode computes only static + dynamic FFN neurons.
//!
//! Fourth stage of the data flow, after selective loading. A [`ComputePlan`] says,
//! per sparsified layer, N (the original width), the loaded positions and the
//! static ones; it comes from a sliced file's metadata ([`crate::select::SliceMeta`])
//! or, for a file that is not sliced (CoreInfer), from a layer range with no static
//! set. [`SelectiveSession`] prefills each prompt over all loaded neurons while
//! [`select::VoteObserver`] counts, per token, the top alpha share by |activation|;
//! then it picks the dynamic set, gathers the chosen rows of `ffn_gate`/`ffn_up`
//! and columns of `ffn_down` from the GGUF file, and hands them to llama.cpp
//! (patch 0003) so that every decode step multiplies only those. With
//! [`SelectiveSession::set_decode_bias`] decode also adds the prompt's mean
//! contribution of the skipped loaded neurons to each layer's `ffn_down` bias, and
//! with [`SelectiveSession::set_decode_refit`] it refits the computed columns and
//! the bias to the prompt's loaded output ([`refit`]). What a command asks for and
//! the defaults it gets become one [`SessionPlan`] ([`session_plan`]), which every
//! command opens its session with.
//!
//! Shares, in the paper's terms, all of N (the original width): gamma = loaded,
//! delta = static, phi = computed, alpha = the per-token vote share of loaded
//! neurons. delta <= phi <= gamma.

mod plan;
pub mod prefill_fit;
pub mod prompt_cache;
pub mod refit;
pub mod select;
pub mod session_plan;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, ensure, Context};

use crate::engine::{gather_columns, gather_rows, CompactLayer, CompactShape, GenerateOptions, GenerateStats, Model, Session, SessionOptions, Token};
use crate::gguf::{GgmlType, GgufFile, TensorInfo};
use crate::model::{ffn_down_neuron_major, ModelInfo};
pub use crate::profile::votes::{computed_count, votes_per_token};
pub use plan::{decode_labels, ComputeOptions, ComputePlan, LayerPlan};
pub use select::Vote;
pub use session_plan::{ComputeRequest, DecodeRefit, Holding, SessionPlan, DEFAULT_TOKEN_SHARE, DEFAULT_VOTE};
use prefill_fit::{LayerFit, PrefillFit};
use prompt_cache::PromptCache;
use select::{compute_set, SelectorState, VoteObserver, Votes};

/// Allocations from this size on are memory-mapped once the prompt refit is on
/// ([`crate::memory::map_large_allocations`]).
const REFIT_MMAP_THRESHOLD: usize = 1 << 20;

/// What one prompt's selection cost and chose.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SelectionStats {
    /// Milliseconds for choosing the sets and gathering the weights.
    pub select_ms: f64,
    /// Neurons computed per sparsified layer, summed over layers.
    pub computed_neurons: usize,
    /// Neurons loaded in those layers.
    pub loaded_neurons: usize,
    /// Bytes of the compacted weights (0 when reordered in place).
    pub compact_bytes: usize,
    /// Neurons moved by the in-place reorder, summed over layers.
    pub swapped_neurons: usize,
}

/// A session that selects neurons for each prompt and decodes with them.
pub struct SelectiveSession<'m> {
    session: Session<'m>,
    plan: ComputePlan,
    state: Arc<Mutex<SelectorState>>,
    /// The GGUF file mapped for weights llama.cpp does not hold in file layout in
    /// host memory (repacked CPU weights, GPU weights); mapped on first need.
    file: Option<memmap2::Mmap>,
    /// Computed positions per layer for the current prompt (None: dense).
    current: Vec<Option<Vec<u32>>>,
    /// Whether decode uses prefix views of the reordered weights (zero-copy)
    /// rather than gathered copies; see [`Layout`].
    in_place: bool,
    /// Per layer: in place, the computed count is rounded up to a multiple of this
    /// (8 where llama.cpp repacked the layer's gate or up: its kernels multiply
    /// whole groups of interleaved rows; else 1).
    row_groups: Vec<usize>,
    /// Install compacted FFNs even where every loaded neuron is computed.
    force_compact: bool,
    /// Shift each sparsified layer's `ffn_down` bias for decode by the prompt's
    /// mean contribution of the loaded neurons decode skips ([`SelectiveSession::set_decode_bias`]).
    decode_bias: bool,
    /// Refit each sparsified layer's computed `ffn_down` columns and bias to the
    /// prompt's loaded output, with this ridge ([`SelectiveSession::set_decode_refit`]).
    decode_refit: Option<f64>,
    /// CPU threads of the session (the refit fits this many layers at once).
    threads: usize,
    /// Whether the last prefill counted votes ([`SelectiveSession::reselect`] needs them).
    votes_counted: bool,
    /// The plan the session was opened with: its votes' shape ([`SelectiveSession::set_plan`]).
    opened: ComputePlan,
    /// The prompt cache ([`SelectiveSession::generate_cached`]); dropped by every
    /// setter, whose change the cached votes did not see.
    prefix: Option<PromptCache>,
}

/// How decode reaches the computed neurons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// The loaded FFN is reordered in place so the computed neurons come first,
    /// and decode multiplies prefix views: no extra memory. Needs every
    /// sparsified layer's weights in host memory in file layout with an F32, F16
    /// or BF16 `ffn_down` (swapping its columns is exact) or a neuron-major one of
    /// any type (`slice --down-layout neurons`: its rows are swapped).
    InPlace,
    /// The computed neurons are gathered into a separate buffer each prompt
    /// (repacked or device weights, a quantized `ffn_down` in llama.cpp's layout):
    /// costs phi/gamma of the sparsified FFN bytes.
    Copy,
}

impl<'m> SelectiveSession<'m> {
    /// Creates the session; `opts.observer` must be `None` (the selector is the observer).
    pub fn new(model: &'m Model, plan: ComputePlan, mut opts: SessionOptions) -> anyhow::Result<SelectiveSession<'m>> {
        ensure!(opts.observer.is_none(), "a selective session installs its own observer");
        let info = ModelInfo::from_gguf(model.gguf())?;
        let node = info.require_gated_ffn().map_err(anyhow::Error::msg)?.node_name();
        let widths: Vec<Option<usize>> = plan.layers.iter().map(|l| l.as_ref().map(|l| l.n_loaded)).collect();
        let k_token = plan
            .layers
            .iter()
            .map(|l| l.as_ref().map_or(0, |l| votes_per_token(plan.token_share, l.n_loaded)))
            .collect();
        let state = Arc::new(Mutex::new(SelectorState { enabled: false, votes: Votes::new(&widths), k_token, vote: Vote::Abs, fit: None }));
        opts.observer = Some(Box::new(VoteObserver::new(node, state.clone())));
        let threads = usize::try_from(opts.threads).unwrap_or(1).max(1);
        let session = Session::new(model, opts)?;
        let n = plan.layers.len();
        let in_place = in_place_refusal(model, &plan).is_none();
        let row_groups = plan.layers.iter().enumerate().map(|(l, lp)| if lp.is_some() { model.ffn_row_group(l) } else { 1 }).collect();
        Ok(SelectiveSession {
            session,
            opened: plan.clone(),
            plan,
            state,
            file: None,
            current: vec![None; n],
            in_place,
            row_groups,
            force_compact: false,
            decode_bias: false,
            decode_refit: None,
            threads,
            votes_counted: false,
            prefix: None,
        })
    }

    /// Chooses how decode reaches the computed neurons (default: in place where
    /// every sparsified layer allows it). Asking for [`Layout::InPlace`] where a
    /// layer does not allow it is an error naming the layer and the reason.
    pub fn set_layout(&mut self, layout: Layout) -> anyhow::Result<()> {
        self.prefix = None;
        self.session.clear_compact_ffn();
        self.current.iter_mut().for_each(|c| *c = None);
        self.in_place = match layout {
            Layout::Copy => false,
            Layout::InPlace => {
                if let Some((l, why)) = in_place_refusal(self.session.model(), &self.plan) {
                    bail!("layer {l} cannot be reordered in place: {why}");
                }
                true
            }
        };
        Ok(())
    }

    /// How decode reaches the computed neurons.
    pub fn layout(&self) -> Layout {
        if self.in_place {
            Layout::InPlace
        } else {
            Layout::Copy
        }
    }

    /// Test hook: go through the compacted path even when phi = gamma (every loaded
    /// neuron selected), which otherwise decodes with the plain engine.
    #[doc(hidden)]
    pub fn force_compact(&mut self) {
        self.force_compact = true;
    }

    /// The underlying session.
    pub fn session(&mut self) -> &mut Session<'m> {
        &mut self.session
    }

    /// Ranks each prompt token's neurons by `vote` from the next prompt on.
    pub fn set_vote(&mut self, vote: Vote) {
        self.prefix = None;
        self.state.lock().unwrap_or_else(|e| e.into_inner()).vote = vote;
    }

    /// From the next prompt on, decode adds to each sparsified layer's `ffn_down`
    /// bias the mean contribution, over the prompt's tokens, of the loaded neurons
    /// it does not compute: sum over skipped p of W_down[:, p] x mean a_p (the
    /// prompt's own mean compensation of the computation step; prefill is
    /// unchanged). Needs an F32 `ffn_down` bias in host memory in every sparsified
    /// layer (a slice made with `--compensate`).
    pub fn set_decode_bias(&mut self, on: bool) -> anyhow::Result<()> {
        self.prefix = None;
        if on {
            ensure!(self.decode_refit.is_none(), "--decode-bias and --decode-refit both change the down bias; choose one");
            self.require_down_bias("--decode-bias")?;
        }
        self.decode_bias = on;
        Ok(())
    }

    /// What `option` (`--decode-bias`, `--decode-refit`) needs: `ffn_down` in
    /// llama.cpp's layout and an F32 down bias in host memory in every sparsified layer.
    fn require_down_bias(&self, option: &str) -> anyhow::Result<()> {
        let model = self.session.model();
        ensure!(!ffn_down_neuron_major(model.gguf()), "{option} reads ffn_down in llama.cpp's layout; {} is neuron-major", model.path().display());
        let n_embd = ModelInfo::from_gguf(model.gguf())?.n_embd as usize;
        for (l, _) in self.plan.layers.iter().enumerate().filter(|(_, lp)| lp.is_some()) {
            model.ffn_down_bias_in_host(l, n_embd).map_err(|why| {
                anyhow::anyhow!("{option} shifts each sparsified layer's ffn_down bias, and layer {l} has none to shift ({why}); slice with --compensate mean or refit")
            })?;
        }
        Ok(())
    }

    /// From the next prompt on, decode's computed `ffn_down` columns and bias are
    /// refitted to each prompt's loaded FFN output by ridge regression over the
    /// prompt's tokens ([`refit`]; `None`: off). In either layout: in place, the
    /// computed columns are changed where they lie and put back before the next
    /// prefill; copied, the copy is changed. Needs a down bias as
    /// [`SelectiveSession::set_decode_bias`] does, and `ffn_down` in llama.cpp's layout.
    pub fn set_decode_refit(&mut self, ridge: Option<f64>) -> anyhow::Result<()> {
        self.prefix = None;
        if let Some(r) = ridge {
            ensure!(r > 0.0 && r.is_finite(), "--decode-refit's ridge must be a positive number, got {r}");
            ensure!(!self.decode_bias, "--decode-bias and --decode-refit both change the down bias; choose one");
            self.require_down_bias("--decode-refit")?;
            // The fit's buffers (MBs, every prompt) go back to the system when freed:
            // on Gemma-3-270M this lowers a qa run's peak by about 45 MiB.
            crate::memory::map_large_allocations(REFIT_MMAP_THRESHOLD);
        }
        self.decode_refit = ridge;
        Ok(())
    }

    /// Neurons decode computes in layer `l`: the plan's count, rounded up in place to
    /// whole groups of a repacked layer's rows (at most the loaded).
    fn computed(&self, l: usize, lp: &LayerPlan) -> usize {
        let g = if self.in_place { self.row_groups.get(l).copied().unwrap_or(1) } else { 1 };
        (self.plan.computed(lp).div_ceil(g) * g).min(lp.n_loaded)
    }

    /// The plan.
    pub fn plan(&self) -> &ComputePlan {
        &self.plan
    }

    /// The positions computed per layer for the current prompt (`None`: dense).
    pub fn current_sets(&self) -> &[Option<Vec<u32>>] {
        &self.current
    }

    /// Forgets the conversation and the selection.
    pub fn clear(&mut self) {
        self.prefix = None;
        self.session.clear_compact_ffn();
        self.session.clear();
        self.current.iter_mut().for_each(|c| *c = None);
    }

    /// Prefills `prompt` over all loaded neurons while counting votes, then selects
    /// and installs the compacted FFNs for the following decode steps.
    pub fn prefill_and_select(&mut self, prompt: &[Token]) -> anyhow::Result<(GenerateStats, SelectionStats)> {
        self.prefix = None;
        self.prefill_counting(prompt, self.plan.is_selective(), None)
    }

    /// [`Self::prefill_and_select`], counting votes where `count` (a dense plan
    /// need not; [`Self::reselect`] may choose from them later). With `cache`
    /// (where later prompts may start to differ), from an empty conversation or the
    /// cache ([`Self::generate_cached`]); else after what the session holds.
    pub(super) fn prefill_counting(&mut self, prompt: &[Token], count: bool, cache: Option<&[usize]>) -> anyhow::Result<(GenerateStats, SelectionStats)> {
        self.session.clear_compact_ffn();
        // Prefill runs over the loaded neurons in file order (bit-identical to the
        // plain engine), whatever an earlier prompt or another session reordered.
        let t0 = Instant::now();
        self.session.model().restore_ffn_order()?;
        let restore_ms = t0.elapsed().as_secs_f64() * 1e3;
        // The per-prompt refit runs where votes are counted (`s.fit` below).
        let fits = count && self.decode_refit.is_some();
        let (reused, checkpoints, votes) = match cache {
            Some(keep) => self.reuse_prefix(prompt, count, keep, fits),
            None => (0, Vec::new(), None),
        };
        {
            let mut s = self.state.lock().unwrap();
            let widths: Vec<Option<usize>> = self.plan.layers.iter().map(|l| l.as_ref().map(|l| l.n_loaded)).collect();
            s.votes = votes.unwrap_or_else(|| Votes::new(&widths));
            s.enabled = count;
            s.fit = self.decode_refit.filter(|_| s.enabled).map(|ridge| {
                let plan = self.plan.layers.iter().enumerate().map(|(l, lp)| lp.as_ref().map(|lp| (lp.static_positions.clone(), self.computed(l, lp) - lp.static_positions.len()))).collect();
                PrefillFit::new(ridge, self.threads, prompt.len(), self.in_place, plan)
            });
        }
        let t_prefill = Instant::now();
        let mut start = reused;
        for end in checkpoints {
            // Each prefix a later prompt may share, decoded up to its end so that
            // the votes there can be kept.
            self.session.decode(&prompt[start..end], false)?;
            let votes = count.then(|| self.state.lock().unwrap().votes.clone());
            self.prefix.get_or_insert_with(PromptCache::default).push(&prompt[start..end], votes, self.session.removals());
            start = end;
        }
        let rest = &prompt[start..];
        // The refit fits the prompt's last batch (n_batch tokens, all of a shorter
        // prompt), decoded whole: its rows only are kept, so that no layer holds rows
        // across batches, whatever the prompt's length.
        let mut stats = if fits {
            let state = Arc::clone(&self.state);
            self.session.prefill_last_batch_whole(rest, |n| state.lock().unwrap().votes.keep_rows(n))?
        } else {
            self.session.prefill(rest)?
        };
        stats.prompt_tokens = prompt.len() - reused;
        stats.prefill_s = t_prefill.elapsed().as_secs_f64();
        self.state.lock().unwrap().enabled = false;
        self.votes_counted = count;
        let mut sel = self.select_and_install()?;
        if fits {
            // The fits' buffers under the memory-mapped size leave free chunks on the
            // heaps of the threads that used them, which pile up over prompts of
            // different lengths: on Gemma-3-270M's summaries the resident memory
            // between prompts crept up by 16 MiB over the first 31 without this, by
            // 5 MiB over all 100 with it (peak 687.3 -> 677.8 MiB). Timed with the
            // selection: it comes before the first decoded token.
            let t0 = Instant::now();
            crate::memory::trim_heap();
            sel.select_ms += t0.elapsed().as_secs_f64() * 1e3;
        }
        sel.select_ms += restore_ms;
        Ok((stats, sel))
    }

    /// Computes `plan` from the next prefill or [`Self::reselect`] on: another phi,
    /// with or without the static set, over the loaded neurons the session was
    /// opened with, or dense. Not with the decode bias
    /// or refit, which are fitted to one phi's set during the prefill.
    pub fn set_plan(&mut self, plan: ComputePlan) -> anyhow::Result<()> {
        if plan == self.plan {
            return Ok(());
        }
        // Votes are counted over every loaded neuron, whatever the static set: a plan
        // with or without it (`--no-static`) selects from the same votes.
        let shape = |p: &ComputePlan| p.layers.iter().map(|l| l.as_ref().map(|l| (l.n_orig, l.n_loaded))).collect::<Vec<_>>();
        let same_votes = shape(&plan) == shape(&self.opened) && plan.token_share == self.opened.token_share;
        ensure!(!plan.is_selective() || same_votes, "a selective plan must keep the sparsified layers, loaded neurons and alpha the session was opened with");
        ensure!(self.decode_refit.is_none() && !self.decode_bias, "the decode bias and refit are fitted to one phi during the prefill; open a session per phi");
        self.prefix = None;
        self.session.clear_compact_ffn();
        self.session.model().restore_ffn_order()?;
        self.current.iter_mut().for_each(|c| *c = None);
        self.plan = plan;
        Ok(())
    }

    /// Decodes the prompt just prefilled again, with the plan [`Self::set_plan`]
    /// set since: drops the cached tokens after `prompt` and installs the plan's
    /// neurons, chosen from the prompt's votes. The prefill runs over every loaded
    /// neuron whatever phi is, so decode then runs exactly as after a prefill with
    /// this plan (`tune` scores every phi of a slice from one prefill per prompt).
    /// The prompt's last logits are not restored: keep them from the prefill.
    /// Where the cache cannot drop a suffix (sliding-window caches) the prompt is
    /// prefilled again, counting votes only under a selective plan: score the
    /// selective plans first.
    pub fn reselect(&mut self, prompt: &[Token]) -> anyhow::Result<SelectionStats> {
        ensure!(self.session.n_past() >= prompt.len(), "reselect follows the prefill of the same prompt");
        ensure!(!self.plan.is_selective() || self.votes_counted, "the prompt's votes were not counted: prefill it with a selective plan first");
        self.session.clear_compact_ffn();
        self.session.model().restore_ffn_order()?;
        if !self.session.truncate(prompt.len()) {
            return Ok(self.prefill_and_select(prompt)?.1);
        }
        self.select_and_install()
    }

    /// Prefill, selection, then generation (see [`Session::generate`]).
    pub fn generate(
        &mut self,
        prompt: &[Token],
        opts: &GenerateOptions,
        on_text: impl FnMut(&str) -> bool,
    ) -> anyhow::Result<(Vec<Token>, GenerateStats, SelectionStats)> {
        let (stats, sel) = self.prefill_and_select(prompt)?;
        let (tokens, stats) = self.session.continue_generation(stats, opts, on_text)?;
        Ok((tokens, stats, sel))
    }

    fn select_and_install(&mut self) -> anyhow::Result<SelectionStats> {
        let t0 = Instant::now();
        let mut stats = SelectionStats::default();
        self.current.iter_mut().for_each(|c| *c = None);
        if !self.plan.is_selective() && !self.force_compact {
            return Ok(stats);
        }
        // The refit's job (its fits, and layers already installed) and any rows not
        // yet fitted move out rather than being copied.
        let (mut votes, job) = {
            let mut s = self.state.lock().unwrap();
            let rows = std::mem::take(&mut s.votes.rows);
            (Votes { rows, ..s.votes.clone() }, s.fit.take())
        };
        let model = self.session.model();
        let mut shapes = Vec::new();
        let mut sets: Vec<Vec<u32>> = vec![Vec::new(); self.plan.layers.len()];
        let mut fits: Vec<Option<refit::PromptRefit>> = vec![None; self.plan.layers.len()];
        let mut installed = vec![false; self.plan.layers.len()];
        if let Some(mut job) = job {
            if let Some(e) = job.error.take() {
                return Err(e);
            }
            job.fit_rest(model, &mut votes)?;
            for l in 0..self.plan.layers.len() {
                match std::mem::take(&mut job.layers[l]) {
                    LayerFit::Waiting => {}
                    LayerFit::Fitted { set, fit } => {
                        sets[l] = set;
                        fits[l] = Some(fit);
                    }
                    LayerFit::Installed { set, swapped } => {
                        sets[l] = set;
                        stats.swapped_neurons += swapped;
                        installed[l] = true;
                    }
                }
            }
        }
        for (l, lp) in self.plan.layers.iter().enumerate() {
            let (Some(lp), Some(v)) = (lp, &votes.layers[l]) else { continue };
            if sets[l].is_empty() {
                sets[l] = compute_set(v, &lp.static_positions, self.computed(l, lp) - lp.static_positions.len());
            }
            stats.computed_neurons += sets[l].len();
            stats.loaded_neurons += lp.n_loaded;
            shapes.push(compact_shape(model.gguf(), l, sets[l].len())?);
        }
        if !self.in_place {
            for (l, fit) in fits.iter().enumerate() {
                if let Some(fit) = fit {
                    model.shift_ffn_down_bias(l, &fit.bias)?;
                }
            }
        }
        if self.decode_bias {
            for (l, set) in sets.iter().enumerate().filter(|(l, _)| self.plan.layers[*l].is_some()) {
                let (Some(sums), n) = (&votes.sums[l], votes.tokens[l]) else { continue };
                model.shift_ffn_down_bias(l, &skipped_contribution(model, l, set, sums, n)?)?;
            }
        }
        if self.in_place {
            let mut views = Vec::with_capacity(shapes.len());
            for sh in &shapes {
                if !installed[sh.layer] {
                    stats.swapped_neurons += prefill_fit::install_in_place(model, sh.layer, &sets[sh.layer], fits[sh.layer].take().as_ref())?;
                }
                views.push((sh.layer, sh.k));
            }
            self.session.set_ffn_prefix_views(&views)?;
            self.finish(sets, &mut stats, t0);
            return Ok(stats);
        }
        let in_host = |l: usize| ["ffn_gate", "ffn_up", "ffn_down"].iter().all(|w| model.host_tensor_bytes(&format!("blk.{l}.{w}.weight")).is_some());
        if self.file.is_none() && !shapes.iter().all(|sh| in_host(sh.layer)) {
            self.file = Some(model.map_file().with_context(|| format!("mapping {}", model.path().display()))?);
        }
        let (gguf, file) = (model.gguf(), self.file.as_deref());
        let mut compact_bytes = 0;
        self.session.set_compact_ffn(&shapes, |sh| {
            let mut layer = gather(model, gguf, file, sh.layer, &sets[sh.layer]).map_err(|e| format!("{e:#}"))?;
            if let Some(fit) = &fits[sh.layer] {
                add_to_floats(&mut layer.down, &fit.columns).map_err(|e| format!("--decode-refit, layer {}: {e:#}", sh.layer))?;
            }
            compact_bytes += layer.gate.1.len() + layer.up.1.len() + layer.down.1.len();
            Ok(layer)
        })?;
        stats.compact_bytes = compact_bytes;
        // Unmap the file again: the pages read for the gather would otherwise stay
        // resident beside the copies (the next prompt maps it anew, from the page cache).
        self.file = None;
        self.finish(sets, &mut stats, t0);
        Ok(stats)
    }

    fn finish(&mut self, sets: Vec<Vec<u32>>, stats: &mut SelectionStats, t0: Instant) {
        for (l, set) in sets.into_iter().enumerate() {
            if self.plan.layers[l].is_some() {
                self.current[l] = Some(set);
            }
        }
        stats.select_ms = t0.elapsed().as_secs_f64() * 1e3;
    }
}

/// The first sparsified layer of `plan` that `model` cannot reorder in place, and why.
fn in_place_refusal(model: &Model, plan: &ComputePlan) -> Option<(usize, String)> {
    plan.layers.iter().enumerate().filter(|(_, lp)| lp.is_some()).find_map(|(l, _)| model.ffn_in_place(l).err().map(|why| (l, why)))
}

impl Drop for SelectiveSession<'_> {
    /// Leaves the model's weights in file order for whoever uses it next.
    fn drop(&mut self) {
        self.session.clear_compact_ffn();
        if self.in_place || self.decode_bias || self.decode_refit.is_some() {
            let _ = self.session.model().restore_ffn_order();
        }
    }
}

/// Adds `delta` element by element to a gathered `ffn_down` (F32, F16 or BF16).
fn add_to_floats((ty, bytes): &mut (GgmlType, Vec<u8>), delta: &[f32]) -> anyhow::Result<()> {
    crate::util::floats::add_floats(bytes, *ty, delta).with_context(|| format!("the computed ffn_down columns ({} bytes of {ty}) do not take {} changes", bytes.len(), delta.len()))
}

/// sum over the loaded positions p not in `set` of W_down[:, p] x sums[p] / tokens:
/// the mean contribution over a prompt's `tokens` of the neurons decode skips. Reads
/// `ffn_down` as [`prefill_fit::loaded_down`] does (in file order here: the selection
/// has not reordered it yet).
fn skipped_contribution(model: &Model, l: usize, set: &[u32], sums: &[f64], tokens: u64) -> anyhow::Result<Vec<f32>> {
    let down = prefill_fit::loaded_down(model, l)?;
    let n_ff = down.n_ff;
    ensure!(sums.len() == n_ff, "layer {l}: {} activation sums for {n_ff} loaded neurons", sums.len());
    let mut skipped = vec![tokens > 0; n_ff];
    set.iter().for_each(|&p| skipped[p as usize] = false);
    let mean: Vec<(usize, f64)> = (0..n_ff).filter(|&p| skipped[p]).map(|p| (p, sums[p] / tokens as f64)).collect();
    let mut w = Vec::new();
    (0..down.n_embd)
        .map(|e| {
            down.row(e, &mut w)?;
            Ok(mean.iter().map(|&(p, m)| f64::from(w[p]) * m).sum::<f64>() as f32)
        })
        .collect()
}

/// Shape and types of layer `l`'s compacted weights with `k` neurons: gate/up keep
/// their type; ffn_down keeps F32/F16/BF16 and becomes F16 otherwise, except a
/// neuron-major ffn_down, whose rows keep their type.
fn compact_shape(g: &GgufFile, l: usize, k: usize) -> anyhow::Result<CompactShape> {
    let (gate, up, down) = (tensor(g, l, "ffn_gate")?, tensor(g, l, "ffn_up")?, tensor(g, l, "ffn_down")?);
    let down_rows = ffn_down_neuron_major(g);
    let down_ty = if down.ty.is_quantized() && !down_rows { GgmlType::F16 } else { down.ty };
    Ok(CompactShape { layer: l, k, n_embd: gate.dims[0] as usize, types: [gate.ty, up.ty, down_ty], down_rows })
}

/// Gathers layer `l`'s chosen neurons from llama.cpp's own copy of the weights when
/// it is in file layout in host memory (no second mapping of the file, so resident
/// memory is not counted twice), else from the mapped file.
fn gather(model: &Model, g: &GgufFile, file: Option<&[u8]>, l: usize, set: &[u32]) -> anyhow::Result<CompactLayer> {
    let names = ["ffn_gate", "ffn_up", "ffn_down"].map(|w| format!("blk.{l}.{w}.weight"));
    if let [Some(gate), Some(up), Some(down)] = names.each_ref().map(|n| model.host_tensor_bytes(n)) {
        return gather_from(g, l, set, [gate, up, down]);
    }
    gather_layer(g, file.context("the model file is not mapped")?, l, set)
}

fn tensor<'g>(g: &'g GgufFile, l: usize, what: &str) -> anyhow::Result<&'g TensorInfo> {
    g.tensor(&format!("blk.{l}.{what}.weight")).with_context(|| format!("{} has no blk.{l}.{what}.weight", g.path.display()))
}

fn bytes<'a>(g: &GgufFile, file: &'a [u8], t: &TensorInfo) -> &'a [u8] {
    let start = (g.data_offset + t.offset) as usize;
    &file[start..start + t.n_bytes().expect("sized when read") as usize]
}

/// Gathers the chosen positions of layer `l` from the file: rows of gate/up (a
/// byte copy, any type) and columns of down (exact for F32/F16/BF16; quantized
/// down columns are dequantized and stored as F16).
pub fn gather_layer(g: &GgufFile, file: &[u8], l: usize, set: &[u32]) -> anyhow::Result<CompactLayer> {
    let ts = [tensor(g, l, "ffn_gate")?, tensor(g, l, "ffn_up")?, tensor(g, l, "ffn_down")?];
    gather_from(g, l, set, ts.map(|t| bytes(g, file, t)))
}

/// [`gather_layer`] from the three tensors' bytes (gate, up, down) in GGUF layout.
fn gather_from(g: &GgufFile, l: usize, set: &[u32], [gate_b, up_b, down_b]: [&[u8]; 3]) -> anyhow::Result<CompactLayer> {
    let (gate, up, down) = (tensor(g, l, "ffn_gate")?, tensor(g, l, "ffn_up")?, tensor(g, l, "ffn_down")?);
    let rows = |t: &TensorInfo, b: &[u8]| gather_rows(b, t, set).map(|v| (t.ty, v));
    Ok(CompactLayer {
        layer: l,
        k: set.len(),
        n_embd: gate.dims[0] as usize,
        gate: rows(gate, gate_b)?,
        up: rows(up, up_b)?,
        down: if ffn_down_neuron_major(g) { rows(down, down_b)? } else { gather_columns(down_b, down, set)? },
    })
}
