//! `--compensate refit` and `refit-chained`: the kept neurons' `ffn_down` columns
//! and a bias, fitted so that the sliced FFN output follows the whole one over the
//! profiling tokens.
//!
//! For a sparsified layer with kept set K and dropped set D, the whole FFN outputs
//! y(t) = W a(t); the slice outputs W'_K a_K(t) + b. The refit chooses W'_K and b
//! that minimize
//!
//!   mean over t of ||W a(t) - W'_K a_K(t) - b||^2 + lambda ||W'_K - W_K||^2,
//!
//! a ridge regression of the dropped neurons' output on the kept activations, with
//! the columns pulled towards their originals. Its normal equations are
//!
//!   [[M_KK + lambda I, mu_K], [mu_K^T, 1]] [W'_K^T; b^T] = [M_K: W^T + lambda W_K^T; (W mu)^T]
//!
//! with M = mean a a^T and mu = mean a ([`crate::profile::moments`]). As lambda
//! grows, W'_K stays W_K and b becomes W_D mu_D, the mean compensation; at lambda
//! 0 it is the least-squares linear reconstruction of the dropped contribution,
//! which restores per token what a constant bias cannot. The system is positive
//! definite for lambda > 0 and is solved by Cholesky in f64.
//!
//! `refit` fits every layer to the whole model's own activations, so each layer is
//! fitted as if the layers before it were whole. `refit-chained` fits the layers in
//! order, each on the activations a'_K(t) that the slice with the layers before it
//! already refitted computes, to the whole model's output y(t) of that layer at the
//! same token ([`super::chain`]): the same equations with M, mu and the
//! cross term taken from (a'_K, y) pairs ([`FitSums`]), so a layer also corrects
//! the error that reaches it from the sliced layers before it.

use anyhow::ensure;

use crate::profile::moments::{add_column_sums, columns, dot, LayerMoments};
use crate::util::linalg::{cholesky_solve, matmul_par, View};

/// lambda as a share of the mean diagonal of M_KK (the kept neurons' mean squared
/// activation), as in OBS-style reconstructions, which damp by 1% of the mean
/// Hessian diagonal.
pub const REFIT_DAMPING: f64 = 0.01;

/// The refitted layer: the kept columns of `ffn_down` in the order of `kept`,
/// row-major `[n_embd][kept.len()]`, and the bias.
#[derive(Debug, Clone)]
pub struct Refit {
    pub columns: Vec<f32>,
    pub bias: Vec<f32>,
}

/// The sums over the fit's tokens that a refit's least squares need: the kept
/// neurons' activations x(t) = a_K(t), as the slice computes them, and the target
/// y(t), the whole layer's output.
#[derive(Debug, Clone, PartialEq)]
pub struct FitSums {
    /// Kept neurons.
    pub k: usize,
    /// Outputs (n_embd).
    pub n_out: usize,
    pub tokens: u64,
    /// sum of x, `k`.
    pub x_sum: Vec<f64>,
    /// sum of x x^T, `k x k` row-major.
    pub gram: Vec<f64>,
    /// sum of y, `n_out`.
    pub y_sum: Vec<f64>,
    /// sum of x y^T, `k x n_out` row-major.
    pub cross: Vec<f64>,
}

impl FitSums {
    /// Empty sums.
    pub fn new(k: usize, n_out: usize) -> FitSums {
        FitSums { k, n_out, tokens: 0, x_sum: vec![0.0; k], gram: vec![0.0; k * k], y_sum: vec![0.0; n_out], cross: vec![0.0; k * n_out] }
    }

    /// The sums of the whole model's own activations, from its moments `m`, for the
    /// kept neurons `kept` of layer `w` (`ffn_down` row-major `[n_embd][n_ff]`), whose
    /// output is y = W a. The cross term M_K: W^T is a matrix product on `threads`
    /// threads (its result does not depend on their number).
    pub fn from_moments(w: &[f32], n_embd: usize, kept: &[u32], m: &LayerMoments, threads: usize) -> anyhow::Result<FitSums> {
        let n = m.n;
        let k = kept.len();
        ensure!(w.len() == n_embd * n && m.gram.len() == n * n && m.sum.len() == n, "moments of {n} neurons for ffn_down of {} values ({n_embd} rows)", w.len());
        ensure!(kept.iter().all(|&i| (i as usize) < n), "a kept neuron lies past the layer's {n}");
        let mut s = FitSums::new(k, n_embd);
        s.tokens = m.tokens;
        for (r, &i) in kept.iter().enumerate() {
            let i = i as usize;
            s.x_sum[r] = m.sum[i];
            for (c, &j) in kept.iter().enumerate() {
                s.gram[r * k + c] = m.gram[i * n + j as usize];
            }
        }
        let w64: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
        let wt = View::row_major(&w64, n_embd, n).t();
        // M_K: W^T by blocks of kept rows, so that the gathered rows of M stay small.
        const ROWS: usize = 256;
        for (b, rows) in kept.chunks(ROWS).enumerate() {
            let g: Vec<f64> = rows.iter().flat_map(|&i| m.gram[i as usize * n..(i as usize + 1) * n].iter().copied()).collect();
            let out = &mut s.cross[b * ROWS * n_embd..(b * ROWS + rows.len()) * n_embd];
            matmul_par(View::row_major(&g, rows.len(), n), wt, out, threads)?;
        }
        for e in 0..n_embd {
            s.y_sum[e] = dot64(&m.sum, &w64[e * n..(e + 1) * n]);
        }
        Ok(s)
    }

    /// Adds `rows` tokens: `x` row-major `[rows][k]`, `y` row-major `[rows][n_out]`.
    pub fn add(&mut self, x: &[f32], y: &[f32]) {
        let (k, n_out) = (self.k, self.n_out);
        let rows = x.len() / k.max(1);
        assert!(x.len() == rows * k && y.len() == rows * n_out, "{} x values and {} y values for {rows} rows", x.len(), y.len());
        let xc = columns(x, k, rows);
        let yc = columns(y, n_out, rows);
        add_column_sums(&xc, k, rows, &mut self.x_sum, &mut self.gram);
        for i in 0..k {
            let ci = &xc[i * rows..(i + 1) * rows];
            for e in 0..n_out {
                self.cross[i * n_out + e] += f64::from(dot(ci, &yc[e * rows..(e + 1) * rows]));
            }
        }
        for e in 0..n_out {
            self.y_sum[e] += yc[e * rows..(e + 1) * rows].iter().map(|&v| f64::from(v)).sum::<f64>();
        }
        self.tokens += rows as u64;
    }
}

impl FitSums {
    /// Adds the tokens of `c` (sums over the same kept neurons) in two roles: with
    /// weight `1 - share` as they are, every kept neuron computed (prefill), and with
    /// weight `share` with only the neurons where `computed` is true (decode; the
    /// others' activations taken as 0). The token count grows by `c`'s.
    pub fn add_roles(&mut self, c: &FitSums, computed: &[bool], share: f64) {
        let (k, n_out) = (self.k, self.n_out);
        assert!(c.k == k && c.n_out == n_out && computed.len() == k, "sums of {} x {} and a mask of {} added to {k} x {n_out}", c.k, c.n_out, computed.len());
        let weight = |on: bool| if on { 1.0 } else { 1.0 - share };
        for i in 0..k {
            let wi = weight(computed[i]);
            self.x_sum[i] += wi * c.x_sum[i];
            for j in 0..k {
                self.gram[i * k + j] += weight(computed[i] && computed[j]) * c.gram[i * k + j];
            }
            for e in 0..n_out {
                self.cross[i * n_out + e] += wi * c.cross[i * n_out + e];
            }
        }
        self.y_sum.iter_mut().zip(&c.y_sum).for_each(|(s, v)| *s += v);
        self.tokens += c.tokens;
    }
}

/// The threads a fit's products and solve run on: the machine's cores, as a
/// session's default.
fn cores() -> usize {
    crate::engine::default_threads().max(1) as usize
}

fn dot64(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Fits layer `w` (`ffn_down` row-major `[n_embd][n_ff]`) to the moments `m` of the
/// whole model's activations, keeping the neurons `kept` (in their stored order);
/// `damping` is lambda as a share of the mean of diag(M_KK). The products and the
/// solve run on the machine's cores; the result does not depend on their number.
pub fn refit_down(w: &[f32], n_embd: usize, n_ff: usize, kept: &[u32], m: &LayerMoments, damping: f64) -> anyhow::Result<Refit> {
    ensure!(m.n == n_ff && w.len() == n_embd * n_ff, "the moments have {} neurons, ffn_down {n_ff}", m.n);
    fit_down(w, n_embd, n_ff, kept, &FitSums::from_moments(w, n_embd, kept, m, cores())?, damping)
}

/// Fits the kept columns of layer `w` (`ffn_down` row-major `[n_embd][n_ff]`) and a
/// bias to the sums `s` of its kept inputs and target outputs: with M = mean x x^T,
/// mu = mean x, C = mean x y^T and nu = mean y, the normal equations of
///
///   mean over t of ||y(t) - W'_K x(t) - b||^2 + lambda ||W'_K - W_K||^2
///
/// are [[M + lambda I, mu], [mu^T, 1]] [W'_K^T; b^T] = [C + lambda W_K^T; nu^T].
/// When x are the whole model's own activations and y = W a, this is the ridge
/// regression of the module documentation.
pub fn fit_down(w: &[f32], n_embd: usize, n_ff: usize, kept: &[u32], s: &FitSums, damping: f64) -> anyhow::Result<Refit> {
    ensure!(w.len() == n_embd * n_ff, "ffn_down has {} values, not {n_embd} x {n_ff}", w.len());
    ensure!(s.k == kept.len() && s.n_out == n_embd, "the fit's sums are {} x {}, the layer keeps {} of {n_embd}-wide columns", s.k, s.n_out, kept.len());
    ensure!(s.tokens > 0, "the moments sum no tokens");
    ensure!(damping > 0.0, "the refit's damping must be positive");
    let t = s.tokens as f64;
    let k = kept.len();
    let dim = k + 1;

    // The system matrix A (dim x dim, row-major).
    let diag_mean = (0..k).map(|i| s.gram[i * k + i] / t).sum::<f64>() / k.max(1) as f64;
    let lambda = damping * diag_mean.max(f64::MIN_POSITIVE);
    let mut a = vec![0f64; dim * dim];
    for r in 0..k {
        for c in 0..k {
            a[r * dim + c] = s.gram[r * k + c] / t;
        }
        a[r * dim + r] += lambda;
        a[r * dim + k] = s.x_sum[r] / t;
        a[k * dim + r] = s.x_sum[r] / t;
    }
    a[k * dim + k] = 1.0;

    // The right side, dim x n_embd.
    let mut rhs = vec![0f64; dim * n_embd];
    for (r, &i) in kept.iter().enumerate() {
        for e in 0..n_embd {
            rhs[r * n_embd + e] = s.cross[r * n_embd + e] / t + lambda * f64::from(w[e * n_ff + i as usize]);
        }
    }
    for e in 0..n_embd {
        rhs[k * n_embd + e] = s.y_sum[e] / t;
    }
    cholesky_solve(&mut a, dim, &mut rhs, n_embd, cores())?;

    let mut columns = vec![0f32; n_embd * k];
    for e in 0..n_embd {
        for c in 0..k {
            columns[e * k + c] = rhs[c * n_embd + e] as f32;
        }
    }
    let bias = (0..n_embd).map(|e| rhs[k * n_embd + e] as f32).collect();
    Ok(Refit { columns, bias })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_weigh_every_token_with_all_and_with_the_computed_neurons() {
        // 3 tokens of 3 kept neurons, 2 outputs; the decode role computes 0 and 2.
        let x = [1.0f32, -2.0, 0.5, 3.0, 1.0, -1.0, 0.25, 4.0, 2.0];
        let y = [1.0f32, 2.0, -1.0, 0.5, 3.0, -2.0];
        let computed = [true, false, true];
        let mut c = FitSums::new(3, 2);
        c.add(&x, &y);
        let mut roles = FitSums::new(3, 2);
        roles.add_roles(&c, &computed, 0.5);
        // Each token once as it is and once with neuron 1 zeroed, at weight 1/2 each.
        let masked: Vec<f32> = x.chunks(3).flat_map(|r| [r[0], 0.0, r[2]]).collect();
        let mut both = FitSums::new(3, 2);
        both.add(&x, &y);
        both.add(&masked, &y);
        assert_eq!(roles.tokens, 3);
        let half = |v: &[f64]| v.iter().map(|a| a / 2.0).collect::<Vec<_>>();
        assert_eq!(roles.x_sum, half(&both.x_sum));
        assert_eq!(roles.gram, half(&both.gram));
        assert_eq!(roles.cross, half(&both.cross));
        assert_eq!(roles.y_sum, half(&both.y_sum));
        // Share 0 is the sums as they are.
        let mut plain = FitSums::new(3, 2);
        plain.add_roles(&c, &computed, 0.0);
        assert_eq!(plain, c);
    }
}
