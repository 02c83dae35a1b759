//! `--compensate refit`: the kept neurons' `ffn_down` columns and a bias, fitted so
//! that the sliced FFN output follows the whole one over the profiling tokens.
//!
//! For a sparsified layer with kept set K and dropped set D, the whole FFN outputs
//! y(t) = W a(t); the slice outputs W'_K a_K(t) + b. The refit chooses W'_K and b
//! that minimize
//!
//!   mean over t of ||W a(t) - W'_K a_K(t) - b||^2 + lambda ||W'_K - W_K||^2,
//!
//! a ridge regression of the dropped neurons' output on the kept activations, with
//! the columns pulled towards their originals. Writing W'_K = W_K + Delta_K^T and
//! b = Delta_1^T, the normal equations are
//!
//!   [[M_KK + lambda I, mu_K], [mu_K^T, 1]] [Delta_K; Delta_1] = [M_KD; mu_D^T] W_D^T
//!
//! with M = mean a a^T and mu = mean a ([`crate::profile::moments`]). As lambda
//! grows, Delta_K vanishes and b becomes W_D mu_D, the mean compensation; at lambda
//! 0 it is the least-squares linear reconstruction of the dropped contribution,
//! which restores per token what a constant bias cannot. The system is positive
//! definite for lambda > 0 and is solved by Cholesky in f64.

use anyhow::ensure;

use crate::profile::moments::LayerMoments;

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

/// Fits layer `w` (`ffn_down` row-major `[n_embd][n_ff]`) to the moments `m`,
/// keeping the neurons `kept` (in their stored order); `damping` is lambda as a share
/// of the mean of diag(M_KK).
pub fn refit_down(w: &[f32], n_embd: usize, n_ff: usize, kept: &[u32], m: &LayerMoments, damping: f64) -> anyhow::Result<Refit> {
    ensure!(m.n == n_ff && w.len() == n_embd * n_ff, "the moments have {} neurons, ffn_down {n_ff}", m.n);
    ensure!(m.tokens > 0, "the moments sum no tokens");
    ensure!(damping > 0.0, "the refit's damping must be positive");
    let t = m.tokens as f64;
    let mut is_kept = vec![false; n_ff];
    kept.iter().for_each(|&k| is_kept[k as usize] = true);
    let dropped: Vec<usize> = (0..n_ff).filter(|&n| !is_kept[n]).collect();
    let k = kept.len();
    let dim = k + 1;
    let mom = |i: usize, j: usize| m.gram[i * n_ff + j] / t;
    let mu = |i: usize| m.sum[i] / t;

    // The system matrix A (dim x dim, row-major).
    let diag_mean = kept.iter().map(|&i| mom(i as usize, i as usize)).sum::<f64>() / k.max(1) as f64;
    let lambda = damping * diag_mean.max(f64::MIN_POSITIVE);
    let mut a = vec![0f64; dim * dim];
    for (r, &i) in kept.iter().enumerate() {
        for (c, &j) in kept.iter().enumerate() {
            a[r * dim + c] = mom(i as usize, j as usize);
        }
        a[r * dim + r] += lambda;
        a[r * dim + k] = mu(i as usize);
        a[k * dim + r] = mu(i as usize);
    }
    a[k * dim + k] = 1.0;

    // The right side: [M_KD; mu_D^T] W_D^T, dim x n_embd.
    let wd: Vec<f64> = (0..n_embd).flat_map(|r| dropped.iter().map(move |&d| f64::from(w[r * n_ff + d]))).collect();
    let nd = dropped.len();
    let mut rhs = vec![0f64; dim * n_embd];
    let mut feature = vec![0f64; nd];
    for row in 0..dim {
        for (f, &d) in feature.iter_mut().zip(&dropped) {
            *f = if row < k { mom(kept[row] as usize, d) } else { mu(d) };
        }
        for r in 0..n_embd {
            rhs[row * n_embd + r] = feature.iter().zip(&wd[r * nd..(r + 1) * nd]).map(|(x, y)| x * y).sum();
        }
    }
    cholesky_solve(&mut a, dim, &mut rhs, n_embd)?;

    let mut columns = vec![0f32; n_embd * k];
    for r in 0..n_embd {
        for (c, &i) in kept.iter().enumerate() {
            columns[r * k + c] = (f64::from(w[r * n_ff + i as usize]) + rhs[c * n_embd + r]) as f32;
        }
    }
    let bias = (0..n_embd).map(|r| rhs[k * n_embd + r] as f32).collect();
    Ok(Refit { columns, bias })
}

/// Solves A X = B in place (A: n x n symmetric positive definite, overwritten by its
/// Cholesky factor; B: n rows of `width`, overwritten by X).
pub fn cholesky_solve(a: &mut [f64], n: usize, b: &mut [f64], width: usize) -> anyhow::Result<()> {
    for j in 0..n {
        let d = a[j * n + j] - a[j * n..j * n + j].iter().map(|x| x * x).sum::<f64>();
        ensure!(d > 0.0, "the refit's system is not positive definite (pivot {j}: {d})");
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let s: f64 = a[i * n..i * n + j].iter().zip(&a[j * n..j * n + j]).map(|(x, y)| x * y).sum();
            a[i * n + j] = (a[i * n + j] - s) / d;
        }
    }
    // L y = b, then L^T x = y (rows of b are the unknowns' right sides).
    for i in 0..n {
        for p in 0..i {
            let l = a[i * n + p];
            if l != 0.0 {
                let (head, tail) = b.split_at_mut(i * width);
                axpy(&mut tail[..width], -l, &head[p * width..(p + 1) * width]);
            }
        }
        let d = a[i * n + i];
        b[i * width..(i + 1) * width].iter_mut().for_each(|x| *x /= d);
    }
    for i in (0..n).rev() {
        for p in i + 1..n {
            let l = a[p * n + i];
            if l != 0.0 {
                let (head, tail) = b.split_at_mut(p * width);
                axpy(&mut head[i * width..(i + 1) * width], -l, &tail[..width]);
            }
        }
        let d = a[i * n + i];
        b[i * width..(i + 1) * width].iter_mut().for_each(|x| *x /= d);
    }
    Ok(())
}

fn axpy(y: &mut [f64], alpha: f64, x: &[f64]) {
    y.iter_mut().zip(x).for_each(|(y, x)| *y += alpha * x);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_known_system() {
        // A = [[4, 2], [2, 3]], X = [[1, 2], [3, -1]] -> B = A X.
        let mut a = vec![4.0, 2.0, 2.0, 3.0];
        let mut b = vec![4.0 * 1.0 + 2.0 * 3.0, 4.0 * 2.0 - 2.0, 2.0 * 1.0 + 3.0 * 3.0, 2.0 * 2.0 - 3.0];
        cholesky_solve(&mut a, 2, &mut b, 2).unwrap();
        for (x, e) in b.iter().zip([1.0, 2.0, 3.0, -1.0]) {
            assert!((x - e).abs() < 1e-12, "{b:?}");
        }
        assert!(cholesky_solve(&mut [0.0], 1, &mut [1.0], 1).is_err());
    }
}
