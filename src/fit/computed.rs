//! `slice --compensate refit-computed`: the refit for the selective computation
//! that decode runs ([`super::solve`]).
//!
//! The plain refit fits each sparsified layer's kept `ffn_down` columns and bias as
//! if every loaded neuron were computed. With `--compute phi`, decode computes only
//! the static neurons and the prompt's dynamic ones, so the columns fitted to stand
//! in for the dropped neurons lose part of what they fitted, and the neurons loaded
//! but not computed are missing too. This fit sees both modes of the slice:
//!
//! - the task's profiling text (as `profile moments` reads it) runs once through the
//!   whole model, recording each sparsified layer's activations a(t) entering
//!   `ffn_down` and its output y(t) = W a(t);
//! - each chunk of the text stands for one prompt: its tokens vote as a prompt's do
//!   in prefill (each for the top alpha share of the loaded neurons by |a|), and the
//!   chunk's computed set C is the static neurons and the `round(phi*N) - |static|`
//!   most-voted others ([`crate::profile::votes::compute_set`]);
//! - every token enters the least squares twice: with weight 1 - s with all kept
//!   activations a_K(t), as prefill computes them, and with weight s with a_C(t) only
//!   (the others 0), as decode computes them ([`FitSums::add_roles`]); s is
//!   `--fit-decode-share`.
//!
//! One set of columns serves both modes, so the fit is their weighted compromise;
//! at s = 0 it is the plain refit over the same tokens.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::ensure;

use super::chain::{sparsified_layers, FitText};
use super::solve::{fit_down, FitSums, REFIT_DAMPING};
use super::Compensated;
use crate::engine::{LoadOptions, Model, ObservedTensor, Session, SessionOptions, TensorObserver};
use crate::gguf::GgufFile;
use crate::model::ModelInfo;
use crate::profile::keep::LayerKeep;
use crate::profile::text::{profiling_text, text_chunks};
use crate::profile::votes::{compute_set, computed_count, votes_per_token, Vote, Votes};
use crate::tasks::Task;

/// The selective computation that [`super::Compensation::RefitComputed`] fits the kept
/// columns for, as `--compute` will run it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ComputedFit {
    /// phi: the computed share of the layer's original N neurons.
    pub compute: f64,
    /// alpha: the share of the loaded neurons each token votes for (by |a|).
    pub token_share: f64,
    /// The decode role's share of the fit: each token weighs `1 - share` with every
    /// loaded neuron (prefill) and `share` with the computed ones only (decode).
    pub decode_share: f64,
}

impl Default for ComputedFit {
    fn default() -> ComputedFit {
        ComputedFit { compute: 0.4, token_share: 0.2, decode_share: 0.5 }
    }
}

/// Fits every sparsified layer of `keeps` (source file `src`) for the computation
/// `fit`, over the task's profiling text `text`.
pub fn computed_refit(src: &GgufFile, info: &ModelInfo, keeps: &[Option<LayerKeep>], task: Task, text: &FitText, fit: ComputedFit) -> anyhow::Result<Compensated> {
    let activation = info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    ensure!((0.0..=1.0).contains(&fit.decode_share), "--fit-decode-share must be in [0, 1], got {}", fit.decode_share);
    ensure!(fit.token_share > 0.0 && fit.token_share <= 1.0, "--fit-token-share (alpha) must be in (0, 1], got {}", fit.token_share);
    let layers = sparsified_layers(info, keeps);
    let mut plans = Vec::with_capacity(layers.len());
    for &l in &layers {
        let keep = keeps[l].as_ref().expect("a sparsified layer");
        let (n, k, s) = (info.n_ff[l] as usize, keep.kept.len(), keep.static_set.len());
        let wanted = (fit.compute * n as f64).round() as usize;
        ensure!(
            (s..=k).contains(&wanted),
            "layer {l}: --fit-compute {} computes {wanted} of {n} neurons, outside its {s} static and {k} loaded ones (phi must be in [--static, --load])",
            fit.compute
        );
        let n_computed = computed_count(fit.compute, n, k, s);
        plans.push(LayerFit { layer: l, n_ff: n, kept: keep.kept.clone(), n_static: s, n_dynamic: n_computed - s, k_token: votes_per_token(fit.token_share, k) });
    }

    let model = Model::load(&src.path, &LoadOptions::default())?;
    let chunks = text_chunks(&model, &profiling_text(&text.files(task), task)?, text.ctx, Some(text.chunks))?;
    let n_embd = info.n_embd as usize;
    let t0 = Instant::now();
    let rec = Arc::new(Mutex::new(Recorder::new(activation.node_name(), info.n_layer, &plans)));
    let mut sums: Vec<FitSums> = plans.iter().map(|p| FitSums::new(p.kept.len(), n_embd)).collect();
    {
        let observer = Box::new(SharedRecorder(rec.clone()));
        let mut s = Session::new(&model, SessionOptions { n_ctx: text.ctx as u32, n_batch: text.ctx as u32, threads: text.threads, observer: Some(observer) })?;
        let first = text.first_position(&layers, info.n_layer);
        for chunk in &chunks {
            s.eval_from(chunk, first)?;
            let mut r = rec.lock().expect("recorder lock");
            if let Some(e) = r.error.take() {
                anyhow::bail!("refit-computed: {e}");
            }
            for (i, p) in plans.iter().enumerate() {
                let (x, y) = (std::mem::take(&mut r.x[p.layer]), std::mem::take(&mut r.y[p.layer]));
                let rows = x.len() / p.kept.len();
                ensure!(rows > 0 && y.len() == rows * n_embd, "layer {}: a chunk recorded {rows} activation rows and {} output values of width {n_embd}", p.layer, y.len());
                let computed = p.computed_mask(&x);
                let mut c = FitSums::new(p.kept.len(), n_embd);
                c.add(&x, &y);
                sums[i].add_roles(&c, &computed, fit.decode_share);
            }
        }
    }
    eprintln!("refit-computed: {} layers' activations over {} chunks in {:.0} s", plans.len(), chunks.len(), t0.elapsed().as_secs_f64());

    let mut out = Compensated { biases: Vec::new(), columns: vec![None; info.n_layer] };
    for (p, s) in plans.iter().zip(&sums) {
        let (w, n_embd, n_ff) = crate::profile::weights::down_matrix(src, p.layer)?;
        ensure!(n_ff == p.n_ff, "layer {}: ffn_down has {n_ff} neurons, the model info {}", p.layer, p.n_ff);
        let f = fit_down(&w, n_embd, n_ff, &p.kept, s, REFIT_DAMPING).map_err(|e| e.context(format!("refitting layer {} for the computation", p.layer)))?;
        out.biases.push((format!("blk.{}.ffn_down.bias", p.layer), f.bias));
        out.columns[p.layer] = Some(f.columns);
    }
    Ok(out)
}

/// One sparsified layer's selection, as `--compute` makes it.
struct LayerFit {
    layer: usize,
    n_ff: usize,
    /// Kept neurons in file order; positions `0..n_static` are static.
    kept: Vec<u32>,
    n_static: usize,
    n_dynamic: usize,
    k_token: usize,
}

impl LayerFit {
    /// Which kept positions a prompt with activation rows `x` (`[rows][kept]`)
    /// computes: the static ones and the dynamic set its tokens vote for.
    fn computed_mask(&self, x: &[f32]) -> Vec<bool> {
        let k = self.kept.len();
        let mut votes = Votes::new(&[Some(k)]);
        votes.add_rows(0, x, k, self.k_token, Vote::Abs);
        let counts = votes.layers[0].as_ref().expect("one layer of votes");
        let statics: Vec<u32> = (0..self.n_static as u32).collect();
        let mut mask = vec![false; k];
        compute_set(counts, &statics, self.n_dynamic).into_iter().for_each(|p| mask[p as usize] = true);
        mask
    }
}

/// Records, per chunk, the kept activations (`<act>-<l>`) and the FFN output
/// (`ffn_out-<l>`) of the fitted layers.
struct Recorder {
    act_prefix: String,
    /// Per layer: the kept neurons' file positions in the whole model, if fitted.
    kept: Vec<Option<(usize, Vec<u32>)>>,
    x: Vec<Vec<f32>>,
    y: Vec<Vec<f32>>,
    error: Option<String>,
}

impl Recorder {
    fn new(act_node: &str, n_layer: usize, plans: &[LayerFit]) -> Recorder {
        let mut kept = vec![None; n_layer];
        plans.iter().for_each(|p| kept[p.layer] = Some((p.n_ff, p.kept.clone())));
        Recorder { act_prefix: format!("{act_node}-"), kept, x: vec![Vec::new(); n_layer], y: vec![Vec::new(); n_layer], error: None }
    }

    /// The fitted layer a node belongs to, and whether it is the activation.
    fn node(&self, name: &str) -> Option<(usize, bool)> {
        let (l, act): (usize, bool) = match name.strip_prefix(&self.act_prefix) {
            Some(rest) => (rest.parse().ok()?, true),
            None => (name.strip_prefix("ffn_out-")?.parse().ok()?, false),
        };
        self.kept.get(l)?.as_ref().map(|_| (l, act))
    }

    fn add(&mut self, t: ObservedTensor<'_>) {
        let Some((l, act)) = self.node(t.name) else { return };
        if !act {
            self.y[l].extend_from_slice(t.data);
            return;
        }
        let (n_ff, kept) = self.kept[l].as_ref().expect("a fitted layer");
        if t.ne[0] != *n_ff {
            self.error.get_or_insert_with(|| format!("{}: rows of {} values, the layer has {n_ff} neurons", t.name, t.ne[0]));
            return;
        }
        let x = &mut self.x[l];
        for row in t.data.chunks_exact(*n_ff) {
            x.extend(kept.iter().map(|&k| row[k as usize]));
        }
    }
}

/// [`Recorder`] behind a lock, emptied after every chunk.
struct SharedRecorder(Arc<Mutex<Recorder>>);

impl TensorObserver for SharedRecorder {
    fn wants(&mut self, name: &str) -> bool {
        self.0.lock().expect("recorder lock").node(name).is_some()
    }

    fn observe(&mut self, t: ObservedTensor<'_>) {
        self.0.lock().expect("recorder lock").add(t);
    }
}
