//! Activation statistics per layer and neuron: s_n = sum over tokens of |a_n(t)|
//! (the paper's score), and beside it the signed sum of a_n(t) (whose mean is what
//! bias compensation adds back for a dropped neuron) and the sum of a_n(t)^2 (which,
//! times ||W_down[:, n]||^2, is the contribution importance).
//!
//! [`ActivationRecorder`] is the eval-callback observer: it asks llama.cpp for the
//! FFN activation node of every layer (`ffn_swiglu-<l>` or `ffn_geglu-<l>`, the
//! values entering `ffn_down`) and adds |a| of every token row into the bucket
//! that is currently active. Two buckets (A and B) let the profiler keep
//! alternating examples apart, so that overlap between halves of one task can be
//! measured from the same run.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::engine::{ObservedTensor, TensorObserver};
use crate::model::FfnActivation;

/// Summed |activation| per layer and neuron, and the tokens that went in.
///
/// `signed` and `squares` were added later; raw files written before them read
/// as `None` (their rankings by |activation| are unchanged, the variants that need
/// the new statistics say so).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivationSums {
    /// Tokens counted (each token once; the same for every layer).
    pub tokens: u64,
    /// `sums[layer][neuron]`: sum of |a|.
    pub sums: Vec<Vec<f64>>,
    /// Sum of a (signed), same shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed: Option<Vec<Vec<f64>>>,
    /// Sum of a^2, same shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub squares: Option<Vec<Vec<f64>>>,
}

impl ActivationSums {
    /// Zeros for layers of the given widths (every statistic present).
    pub fn zeros(n_ff: &[u64]) -> ActivationSums {
        let z = || n_ff.iter().map(|&n| vec![0.0; n as usize]).collect::<Vec<_>>();
        ActivationSums { tokens: 0, sums: z(), signed: Some(z()), squares: Some(z()) }
    }

    /// Adds another set of sums of the same shape (a statistic missing from
    /// either side is missing from the result).
    pub fn add(&mut self, other: &ActivationSums) {
        self.tokens += other.tokens;
        add_table(&mut self.sums, &other.sums);
        for (mine, theirs) in [(&mut self.signed, &other.signed), (&mut self.squares, &other.squares)] {
            match (mine.as_mut(), theirs) {
                (Some(a), Some(b)) => add_table(a, b),
                _ => *mine = None,
            }
        }
    }

    /// Mean |activation| per token: the per-dataset score.
    pub fn mean(&self) -> Vec<Vec<f64>> {
        per_token(&self.sums, self.tokens)
    }

    /// Mean signed activation per token, if recorded.
    pub fn signed_mean(&self) -> Option<Vec<Vec<f64>>> {
        self.signed.as_ref().map(|s| per_token(s, self.tokens))
    }

    /// Mean squared activation per token, if recorded.
    pub fn square_mean(&self) -> Option<Vec<Vec<f64>>> {
        self.squares.as_ref().map(|s| per_token(s, self.tokens))
    }
}

fn add_table(a: &mut [Vec<f64>], b: &[Vec<f64>]) {
    for (a, b) in a.iter_mut().zip(b) {
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
    }
}

fn per_token(sums: &[Vec<f64>], tokens: u64) -> Vec<Vec<f64>> {
    let n = tokens.max(1) as f64;
    sums.iter().map(|l| l.iter().map(|s| s / n).collect()).collect()
}

/// Which bucket tokens currently go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// Even-numbered examples.
    A,
    /// Odd-numbered examples.
    B,
}

/// State shared between the recorder (inside llama.cpp's callback) and the profiler.
#[derive(Debug)]
pub struct Recording {
    /// Bucket A sums.
    pub a: ActivationSums,
    /// Bucket B sums.
    pub b: ActivationSums,
    /// Where the next tokens go.
    pub active: Bucket,
    /// Tokens seen per layer in the current decode call (checked by the profiler).
    pub layer_tokens: Vec<u64>,
    /// A node whose shape did not match the model (recorded, reported as an error).
    pub error: Option<String>,
}

impl Recording {
    /// Empty buckets for layers of these widths.
    pub fn new(n_ff: &[u64]) -> Recording {
        Recording {
            a: ActivationSums::zeros(n_ff),
            b: ActivationSums::zeros(n_ff),
            active: Bucket::A,
            layer_tokens: vec![0; n_ff.len()],
            error: None,
        }
    }

    fn bucket_mut(&mut self) -> &mut ActivationSums {
        match self.active {
            Bucket::A => &mut self.a,
            Bucket::B => &mut self.b,
        }
    }

    /// Adds one activation node of `layer`: `data` holds `n_tokens` rows of the
    /// layer's width.
    pub fn add_rows(&mut self, layer: usize, width: usize, data: &[f32]) {
        let n_tokens = data.len() / width.max(1);
        self.layer_tokens[layer] += n_tokens as u64;
        let bucket = self.bucket_mut();
        let sums = &mut bucket.sums[layer];
        let signed = &mut bucket.signed.as_mut().expect("recording has every statistic")[layer];
        let squares = &mut bucket.squares.as_mut().expect("recording has every statistic")[layer];
        for row in data.chunks_exact(width) {
            for (n, x) in row.iter().enumerate() {
                let x = f64::from(*x);
                sums[n] += x.abs();
                signed[n] += x;
                squares[n] += x * x;
            }
        }
    }

    /// Ends a decode call: every layer must have seen `n_tokens` tokens; they are
    /// counted once into the active bucket.
    pub fn finish_step(&mut self, n_tokens: usize) -> Result<(), String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some((l, &seen)) = self.layer_tokens.iter().enumerate().find(|(_, &s)| s != n_tokens as u64) {
            return Err(format!("layer {l} saw {seen} tokens of a {n_tokens}-token step"));
        }
        self.layer_tokens.iter_mut().for_each(|s| *s = 0);
        self.bucket_mut().tokens += n_tokens as u64;
        Ok(())
    }
}

/// The eval-callback observer that fills a shared [`Recording`].
#[derive(Debug)]
pub struct ActivationRecorder {
    prefix: String,
    n_ff: Vec<u64>,
    recording: Arc<Mutex<Recording>>,
}

impl ActivationRecorder {
    /// A recorder for a model with this activation and these layer widths.
    pub fn new(activation: FfnActivation, n_ff: &[u64], recording: Arc<Mutex<Recording>>) -> ActivationRecorder {
        ActivationRecorder { prefix: format!("{}-", activation.node_name()), n_ff: n_ff.to_vec(), recording }
    }

    fn layer_of(&self, name: &str) -> Option<usize> {
        name.strip_prefix(&self.prefix)?.parse().ok()
    }
}

impl TensorObserver for ActivationRecorder {
    fn wants(&mut self, name: &str) -> bool {
        self.layer_of(name).is_some()
    }

    fn observe(&mut self, t: ObservedTensor<'_>) {
        let Some(layer) = self.layer_of(t.name) else { return };
        let mut rec = self.recording.lock().unwrap_or_else(|e| e.into_inner());
        match self.n_ff.get(layer) {
            Some(&w) if w as usize == t.ne[0] => rec.add_rows(layer, t.ne[0], t.data),
            _ => rec.error = Some(format!("node {} has shape {:?}, the model has n_ff {:?}", t.name, t.ne, self.n_ff.get(layer))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_absolute_values_per_neuron() {
        let mut r = Recording::new(&[3, 2]);
        r.add_rows(0, 3, &[1.0, -2.0, 0.5, -1.0, 0.0, 4.0]);
        r.add_rows(1, 2, &[-3.0, 1.0, 2.0, -2.0]);
        r.finish_step(2).unwrap();
        assert_eq!(r.a.sums, vec![vec![2.0, 2.0, 4.5], vec![5.0, 3.0]]);
        assert_eq!(r.a.signed, Some(vec![vec![0.0, -2.0, 4.5], vec![-1.0, -1.0]]));
        assert_eq!(r.a.squares, Some(vec![vec![2.0, 4.0, 16.25], vec![13.0, 5.0]]));
        assert_eq!(r.a.tokens, 2);
        r.active = Bucket::B;
        r.add_rows(0, 3, &[1.0, 1.0, 1.0]);
        assert!(r.finish_step(1).unwrap_err().contains("layer 1 saw 0 tokens"));
        assert_eq!(r.a.mean(), vec![vec![1.0, 1.0, 2.25], vec![2.5, 1.5]]);
    }
}
