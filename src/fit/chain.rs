//! `slice --compensate refit-chained`: fits each sparsified layer's kept `ffn_down`
//! columns and bias on the activations of the slice as it will run, not of the
//! whole model ([`super::solve`]).
//!
//! The task's profiling text (as `profile moments` reads it) runs once through the
//! whole model, recording each sparsified layer's FFN output y(t) (`ffn_out-<l>`).
//! Then, layer after layer in order, it runs through the slice cut so far (the
//! layers before l sliced and already refitted, the others whole; a staged file
//! beside the output, removed after its pass), and layer l's kept activations
//! a'_K(t) are summed against y(t) of the same token ([`FitSums`]). Each pass serves
//! one layer, so a slice of L sparsified layers costs L + 1 passes over the text.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{ensure, Context};

use super::solve::{fit_down, FitSums, REFIT_DAMPING};
use super::Compensated;
use crate::engine::{LoadOptions, Model, ObservedTensor, Session, SessionOptions, TensorObserver};
use crate::gguf::GgufFile;
use crate::model::{FfnActivation, ModelInfo};
use crate::profile::keep::LayerKeep;
use crate::profile::text::{profiling_text, text_chunks};
use crate::tasks::Task;

/// Chunk length of the fit's text, as `profile moments` reads it.
pub const FIT_CTX: usize = 512;
/// Most chunks of the fit's text, as `profile moments` reads it.
pub const FIT_CHUNKS: usize = 16;

/// The text a chained refit runs: the profiling split of `data` (the task's bundled
/// files when `None`), each example as its prompt and first reference, in chunks.
#[derive(Debug, Clone)]
pub struct FitText {
    pub data: Option<PathBuf>,
    pub ctx: usize,
    pub chunks: usize,
    pub threads: i32,
}

impl Default for FitText {
    fn default() -> FitText {
        FitText { data: None, ctx: FIT_CTX, chunks: FIT_CHUNKS, threads: crate::engine::default_threads() }
    }
}

impl FitText {
    /// The task files whose profiling split is read.
    pub fn files(&self, task: Task) -> Vec<PathBuf> {
        self.data.clone().map_or_else(|| task.profiling_data().iter().map(PathBuf::from).collect(), |d| vec![d])
    }

    /// The first position of each chunk a fit's pass asks logits for, given the
    /// fitted `layers` of a model of `n_layer`. No logits are needed, so the output
    /// layer runs for one position per chunk, unless the last layer is fitted:
    /// llama.cpp computes it only for the positions whose logits are asked for, here
    /// the scored half as in `profile moments`.
    pub fn first_position(&self, layers: &[usize], n_layer: usize) -> usize {
        if layers.last() == Some(&(n_layer - 1)) {
            self.ctx / 2
        } else {
            self.ctx - 1
        }
    }
}

/// The layers of `keeps` that drop neurons or reorder them (the ones a fit serves).
pub fn sparsified_layers(info: &ModelInfo, keeps: &[Option<LayerKeep>]) -> Vec<usize> {
    (0..info.n_layer).filter(|&l| keeps[l].as_ref().is_some_and(|k| !k.is_whole(info.n_ff[l] as usize))).collect()
}

/// Writes a slice with the sparsified layers before `upto` cut and compensated as in
/// the given [`Compensated`], every other layer whole, to the path.
pub type WritePrefix<'a> = dyn Fn(usize, &Compensated, &Path) -> anyhow::Result<()> + 'a;

/// What a chained refit needs beyond the selection: its text, the writer of the
/// slice cut so far, and the output the staged files are written beside.
#[derive(Clone, Copy)]
pub struct Chain<'a> {
    pub text: &'a FitText,
    pub write_prefix: &'a WritePrefix<'a>,
    pub staging: &'a Path,
}

/// Fits every sparsified layer of `keeps` (source file `src`) in order, each on the
/// slice cut so far.
pub fn chained_refit(src: &GgufFile, info: &ModelInfo, keeps: &[Option<LayerKeep>], task: Task, chain: Chain<'_>) -> anyhow::Result<Compensated> {
    let Chain { text, write_prefix, staging } = chain;
    let activation = info.require_gated_ffn().map_err(anyhow::Error::msg)?;
    let layers = sparsified_layers(info, keeps);
    let chunks = text_chunks(&Model::load(&src.path, &LoadOptions::default())?, &profiling_text(&text.files(task), task)?, text.ctx, Some(text.chunks))?;
    let first = text.first_position(&layers, info.n_layer);
    let run = |path: &Path, observer: Box<dyn TensorObserver>| -> anyhow::Result<()> {
        let model = Model::load(path, &LoadOptions::default())?;
        let mut s = Session::new(&model, SessionOptions { n_ctx: text.ctx as u32, n_batch: text.ctx as u32, threads: text.threads, observer: Some(observer) })?;
        for chunk in &chunks {
            s.eval_from(chunk, first)?;
        }
        Ok(())
    };

    let t0 = Instant::now();
    let targets = Arc::new(Mutex::new(vec![Vec::new(); info.n_layer]));
    let want: Vec<bool> = (0..info.n_layer).map(|l| layers.contains(&l)).collect();
    run(&src.path, Box::new(Outputs { want, rows: targets.clone() }))?;
    let mut targets = std::mem::take(&mut *targets.lock().expect("targets lock"));
    eprintln!("refit-chained: the whole model's FFN outputs of {} layers in {:.0} s", layers.len(), t0.elapsed().as_secs_f64());

    let mut out = Compensated { biases: Vec::new(), columns: vec![None; info.n_layer] };
    for (i, &l) in layers.iter().enumerate() {
        let t0 = Instant::now();
        let keep = keeps[l].as_ref().expect("a sparsified layer");
        let (w, n_embd, n_ff) = crate::profile::weights::down_matrix(src, l)?;
        let y = std::mem::take(&mut targets[l]);
        ensure!(!y.is_empty() && y.len() % n_embd == 0, "layer {l}: the whole model's pass recorded {} output values of width {n_embd}", y.len());
        let sums = Arc::new(Mutex::new(Inputs::new(activation, l, n_ff, &keep.kept, y, n_embd)));
        let observer = Box::new(SharedInputs(sums.clone()));
        if i == 0 {
            run(&src.path, observer)?;
        } else {
            let staged = crate::fsutil::TempPath::beside(staging);
            write_prefix(l, &out, staged.path()).with_context(|| format!("writing the slice up to layer {l} for its fit"))?;
            run(staged.path(), observer)?;
        }
        let sums = Arc::try_unwrap(sums).map_err(|_| anyhow::anyhow!("layer {l}: the pass kept its observer"))?.into_inner().expect("sums lock").finish()?;
        let fit = fit_down(&w, n_embd, n_ff, &keep.kept, &sums, REFIT_DAMPING).with_context(|| format!("refitting layer {l} (chained)"))?;
        out.biases.push((format!("blk.{l}.ffn_down.bias"), fit.bias));
        out.columns[l] = Some(fit.columns);
        eprintln!("refit-chained: layer {l} ({}/{}) fitted on {} tokens in {:.0} s", i + 1, layers.len(), sums.tokens, t0.elapsed().as_secs_f64());
    }
    Ok(out)
}

/// The layer of a node named `<prefix><l>`.
fn layer_of(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok()
}

/// Records the down projection's output (`ffn_out-<l>`) of the wanted layers.
struct Outputs {
    want: Vec<bool>,
    rows: Arc<Mutex<Vec<Vec<f32>>>>,
}

impl TensorObserver for Outputs {
    fn wants(&mut self, name: &str) -> bool {
        layer_of(name, "ffn_out-").is_some_and(|l| self.want.get(l).copied().unwrap_or(false))
    }

    fn observe(&mut self, t: ObservedTensor<'_>) {
        if let Some(l) = layer_of(t.name, "ffn_out-") {
            self.rows.lock().expect("targets lock")[l].extend_from_slice(t.data);
        }
    }
}

/// Sums one layer's kept activations against the recorded outputs of the same
/// tokens, in the order the passes compute them.
struct Inputs {
    node: String,
    n_ff: usize,
    kept: Vec<u32>,
    targets: Vec<f32>,
    n_out: usize,
    /// Rows consumed so far.
    cursor: usize,
    sums: FitSums,
    error: Option<String>,
}

impl Inputs {
    fn new(activation: FfnActivation, l: usize, n_ff: usize, kept: &[u32], targets: Vec<f32>, n_out: usize) -> Inputs {
        Inputs {
            node: format!("{}-{l}", activation.node_name()),
            n_ff,
            kept: kept.to_vec(),
            targets,
            n_out,
            cursor: 0,
            sums: FitSums::new(kept.len(), n_out),
            error: None,
        }
    }

    fn add(&mut self, t: ObservedTensor<'_>) {
        if self.error.is_some() {
            return;
        }
        let rows = t.data.len() / self.n_ff.max(1);
        if t.ne[0] != self.n_ff || self.targets.len() < (self.cursor + rows) * self.n_out {
            self.error = Some(format!(
                "{}: {rows} rows of {} after {} rows, against {} rows of {} neurons recorded by the whole model",
                self.node,
                t.ne[0],
                self.cursor,
                self.targets.len() / self.n_out,
                self.n_ff
            ));
            return;
        }
        let x: Vec<f32> = t.data.chunks_exact(self.n_ff).flat_map(|row| self.kept.iter().map(move |&k| row[k as usize])).collect();
        let y = &self.targets[self.cursor * self.n_out..(self.cursor + rows) * self.n_out];
        self.sums.add(&x, y);
        self.cursor += rows;
    }

    /// The sums, once every recorded token was seen again.
    fn finish(self) -> anyhow::Result<FitSums> {
        if let Some(e) = self.error {
            anyhow::bail!("the slice's pass does not line up with the whole model's: {e}");
        }
        let recorded = self.targets.len() / self.n_out;
        ensure!(self.cursor == recorded, "{}: the slice's pass saw {} tokens, the whole model's {recorded}", self.node, self.cursor);
        Ok(self.sums)
    }
}

/// [`Inputs`] behind a lock, read back after the pass.
struct SharedInputs(Arc<Mutex<Inputs>>);

impl TensorObserver for SharedInputs {
    fn wants(&mut self, name: &str) -> bool {
        name == self.0.lock().expect("sums lock").node
    }

    fn observe(&mut self, t: ObservedTensor<'_>) {
        self.0.lock().expect("sums lock").add(t);
    }
}
