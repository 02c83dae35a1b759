//! The prompt refit (`--decode-refit RIDGE`): after a prompt's prefill, each
//! sparsified layer's computed `ffn_down` columns and its bias are refitted, by ridge
//! regression over the prompt's own tokens (its last batch, `n_batch` = 512 tokens,
//! for a longer prompt: [`super::prefill_fit`]), so that decode's output over the
//! computed neurons follows the loaded FFN's.
//!
//! With A the prompt's loaded activations (T tokens), C the computed positions and S
//! the skipped loaded ones, X_C and X_S the centred columns, mu their means, W the
//! loaded `ffn_down` (n_embd x n_loaded) and b its bias:
//!
//! minimise over D, b'  sum_t ||(W_C + D) a_C(t) + b' - W a(t) - b||^2 + lambda ||D||^2
//!
//! gives D = W_S X_S^T X_C (X_C^T X_C + lambda I)^-1 and b' = b + W_S mu_S - D mu_C.
//! With lambda -> infinity D = 0 and b' is `--decode-bias`'s shift. D is computed in
//! its kernel form, (W_S X_S^T) (X_C X_C^T + lambda I)^-1 X_C, whose system is T x T
//! (a prompt has fewer tokens than a layer has computed neurons). lambda = RIDGE x
//! the mean over the computed neurons of sum_t x_C(t)^2.

use anyhow::ensure;

use crate::util::linalg::{cholesky_factor, cholesky_solve_factored, column_blocks, for_each_chunk, matmul, matmul_par, View};

/// `--decode-refit`'s ridge when decode computes selectively on a refit slice and
/// the flag is not given (ridge 1 did best of 0.1 / 1 / 3 on qa answer perplexity,
/// docs/selection.md).
pub const DEFAULT_RIDGE: f64 = 1.0;

/// One layer's refit: what decode adds to its computed `ffn_down` columns and bias.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptRefit {
    /// D, `n_embd` rows of `set.len()`: added to the computed columns (in `set` order).
    pub columns: Vec<f32>,
    /// b' - b (`n_embd`).
    pub bias: Vec<f32>,
}

/// The refit of one layer. `w`: the loaded `ffn_down`, `n_embd` rows of `n_loaded`;
/// `rows`: the prompt's activations, rows of `n_loaded`; `set`: the computed
/// positions (sorted); `ridge`: lambda's factor (> 0). Each buffer is freed as soon
/// as it is used up, so that the fit's peak memory stays near its largest three.
pub fn prompt_refit(w: &[f32], n_embd: usize, n_loaded: usize, rows: &[f32], set: &[u32], ridge: f64) -> anyhow::Result<PromptRefit> {
    ensure!(w.len() == n_embd * n_loaded, "prompt refit: ffn_down of the wrong size");
    let row = |e: usize, out: &mut Vec<f32>| -> anyhow::Result<()> {
        out.clear();
        out.extend_from_slice(&w[e * n_loaded..(e + 1) * n_loaded]);
        Ok(())
    };
    prompt_refit_rows(&row, n_embd, n_loaded, rows.to_vec(), set, ridge, 1)
}

/// [`prompt_refit`] reading `ffn_down` a row at a time: `w_row(e, out)` puts row `e`
/// (`n_loaded` values) in `out`, so that the whole matrix is never held as floats;
/// the activation rows are freed once read. Its products and solves are split over
/// `threads` threads by rows or columns of their results (bit-identical to one
/// thread: each element is the same sum in the same order).
pub fn prompt_refit_rows(w_row: &dyn Fn(usize, &mut Vec<f32>) -> anyhow::Result<()>, n_embd: usize, n_loaded: usize, rows: Vec<f32>, set: &[u32], ridge: f64, threads: usize) -> anyhow::Result<PromptRefit> {
    ensure!(ridge > 0.0 && ridge.is_finite(), "--decode-refit's ridge must be positive, got {ridge}");
    ensure!(rows.len().is_multiple_of(n_loaded.max(1)), "prompt refit: activations of the wrong size");
    let t = rows.len().checked_div(n_loaded).unwrap_or(0);
    let k = set.len();
    let mut computed = vec![false; n_loaded];
    set.iter().for_each(|&p| computed[p as usize] = true);
    let skipped: Vec<usize> = (0..n_loaded).filter(|&p| !computed[p]).collect();
    if t == 0 || skipped.is_empty() {
        return Ok(PromptRefit { columns: vec![0.0; n_embd * k], bias: vec![0.0; n_embd] });
    }
    let mut mean = vec![0f64; n_loaded];
    rows.chunks_exact(n_loaded).for_each(|r| mean.iter_mut().zip(r).for_each(|(m, &a)| *m += f64::from(a)));
    mean.iter_mut().for_each(|m| *m /= t as f64);
    // Centred X_C (T x k) and X_S (T x s), row-major.
    let centred = |cols: &[usize]| -> Vec<f32> { rows.chunks_exact(n_loaded).flat_map(|r| cols.iter().map(|&p| (f64::from(r[p]) - mean[p]) as f32)).collect() };
    let set_us: Vec<usize> = set.iter().map(|&p| p as usize).collect();
    let s = skipped.len();
    // W_S (n_embd x s); R^T = X_S W_S^T (T x n_embd), the skipped neurons' centred output.
    let mut rt = vec![0f32; t * n_embd];
    let skipped_mean: Vec<f64> = {
        let xs = centred(&skipped);
        let mut ws: Vec<f32> = Vec::with_capacity(n_embd * s);
        let mut w = Vec::with_capacity(n_loaded);
        for e in 0..n_embd {
            w_row(e, &mut w)?;
            ensure!(w.len() == n_loaded, "prompt refit: ffn_down row {e} has {} values, not {n_loaded}", w.len());
            ws.extend(skipped.iter().map(|&p| w[p]));
        }
        matmul_par(View::row_major(&xs, t, s), View::row_major(&ws, n_embd, s).t(), &mut rt, threads)?;
        // W_S mu_S, for the bias.
        (0..n_embd).map(|e| skipped.iter().enumerate().map(|(i, &p)| f64::from(ws[e * s + i]) * mean[p]).sum()).collect()
    };
    let xc = centred(&set_us);
    drop(rows);
    // G = X_C X_C^T + lambda I (T x T), factored.
    let mut g: Vec<f64> = {
        let mut gram = vec![0f32; t * t];
        matmul_par(View::row_major(&xc, t, k), View::row_major(&xc, t, k).t(), &mut gram, threads)?;
        gram.iter().map(|&v| f64::from(v)).collect()
    };
    let energy: f64 = (0..t).map(|i| g[i * t + i]).sum();
    let lambda = ridge * energy.max(f64::MIN_POSITIVE) / k.max(1) as f64;
    (0..t).for_each(|i| g[i * t + i] += lambda);
    cholesky_factor(&mut g, t, threads)?;
    // P = R G^-1 and D = P X_C (n_embd x k), by blocks of output rows e (columns of
    // R^T), one per thread: solve G P_e^T = R_e^T in f64, then D_e = P_e X_C in f32
    // (the weights' own precision is F16 at best).
    let per = n_embd.div_ceil(threads.max(1)).max(1);
    let pts: Vec<Vec<f64>> = column_blocks(&rt, n_embd, per, f64::from);
    drop(rt);
    let mut d = vec![0f32; n_embd * k];
    for_each_chunk(&mut d, per * k, pts, |mut pt, d_rows| {
        let width = pt.len() / t;
        cholesky_solve_factored(&g, t, &mut pt, width)?;
        let pt: Vec<f32> = pt.into_iter().map(|v| v as f32).collect();
        matmul(View::row_major(&pt, t, width).t(), View::row_major(&xc, t, k), d_rows)
    })?;
    drop(g);
    // b' - b = W_S mu_S - D mu_C.
    let bias = (0..n_embd)
        .map(|e| {
            let moved: f64 = set_us.iter().enumerate().map(|(j, &p)| f64::from(d[e * k + j]) * mean[p]).sum();
            (skipped_mean[e] - moved) as f32
        })
        .collect();
    Ok(PromptRefit { columns: d, bias })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Solves A x = b by Gaussian elimination with partial pivoting (an independent solver).
    fn gauss(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
        let n = b.len();
        for c in 0..n {
            let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
            a.swap(c, p);
            b.swap(c, p);
            for r in c + 1..n {
                let f = a[r][c] / a[c][c];
                for k in c..n {
                    a[r][k] -= f * a[c][k];
                }
                b[r] -= f * b[c];
            }
        }
        let mut x = vec![0.0; n];
        for r in (0..n).rev() {
            x[r] = (b[r] - (r + 1..n).map(|k| a[r][k] * x[k]).sum::<f64>()) / a[r][r];
        }
        x
    }

    fn problem(t: usize) -> (Vec<f32>, Vec<f32>, Vec<u32>, usize, usize) {
        let (n_embd, n_loaded) = (3, 6);
        let mut rng = crate::util::rng::SplitMix64::new(7);
        let w: Vec<f32> = (0..n_embd * n_loaded).map(|_| rng.next_signed()).collect();
        let rows: Vec<f32> = (0..t * n_loaded).map(|_| rng.next_signed() * 2.0).collect();
        (w, rows, vec![0, 2, 5], n_embd, n_loaded)
    }

    #[test]
    fn refit_equals_the_primal_ridge_solution() {
        // Fewer tokens than computed neurons (2 < 3) and more (9).
        for t in [2, 9] {
            let (w, rows, set, n_embd, n_loaded) = problem(t);
            let ridge = 0.3;
            let fit = prompt_refit(&w, n_embd, n_loaded, &rows, &set, ridge).unwrap();
            // Independently: per output e, minimise sum_t (d . xc(t) + c - r_e(t))^2 + lambda |d|^2
            // over d and c, with r_e(t) = sum_{p skipped} w[e, p] a_p(t): normal equations in
            // k + 1 unknowns (the intercept unpenalized), uncentred.
            let k = set.len();
            let skipped: Vec<usize> = (0..n_loaded).filter(|p| !set.contains(&(*p as u32))).collect();
            let a = |tt: usize, p: usize| f64::from(rows[tt * n_loaded + p]);
            let mean = |p: usize| (0..t).map(|tt| a(tt, p)).sum::<f64>() / t as f64;
            let energy: f64 = set.iter().map(|&p| (0..t).map(|tt| (a(tt, p as usize) - mean(p as usize)).powi(2)).sum::<f64>()).sum();
            let lambda = ridge * energy / k as f64;
            for e in 0..n_embd {
                let feat = |tt: usize| -> Vec<f64> { set.iter().map(|&p| a(tt, p as usize)).chain([1.0]).collect() };
                let target = |tt: usize| skipped.iter().map(|&p| f64::from(w[e * n_loaded + p]) * a(tt, p)).sum::<f64>();
                let mut m = vec![vec![0.0; k + 1]; k + 1];
                let mut rhs = vec![0.0; k + 1];
                for tt in 0..t {
                    let f = feat(tt);
                    for i in 0..=k {
                        rhs[i] += f[i] * target(tt);
                        for j in 0..=k {
                            m[i][j] += f[i] * f[j];
                        }
                    }
                }
                (0..k).for_each(|i| m[i][i] += lambda);
                let x = gauss(m, rhs);
                for j in 0..k {
                    assert!((f64::from(fit.columns[e * k + j]) - x[j]).abs() < 1e-4, "t {t} e {e} column {j}: {} vs {}", fit.columns[e * k + j], x[j]);
                }
                assert!((f64::from(fit.bias[e]) - x[k]).abs() < 1e-4, "t {t} e {e} bias: {} vs {}", fit.bias[e], x[k]);
            }
        }
    }

    #[test]
    fn a_fit_on_several_threads_is_bit_identical() {
        // Tokens across the solve's 64-row blocks; outputs not a multiple of the threads.
        let (n_embd, n_loaded, t) = (37, 50, 70);
        let mut rng = crate::util::rng::SplitMix64::new(5);
        let w: Vec<f32> = (0..n_embd * n_loaded).map(|_| rng.next_signed()).collect();
        let rows: Vec<f32> = (0..t * n_loaded).map(|_| rng.next_signed() * 2.0).collect();
        let set: Vec<u32> = (0..n_loaded as u32).filter(|p| p % 3 != 1).collect();
        let row = |e: usize, out: &mut Vec<f32>| -> anyhow::Result<()> {
            out.clear();
            out.extend_from_slice(&w[e * n_loaded..(e + 1) * n_loaded]);
            Ok(())
        };
        let one = prompt_refit_rows(&row, n_embd, n_loaded, rows.clone(), &set, 0.7, 1).unwrap();
        for threads in [2, 3, 40] {
            assert_eq!(prompt_refit_rows(&row, n_embd, n_loaded, rows.clone(), &set, 0.7, threads).unwrap(), one, "{threads} threads");
        }
        assert!(one.columns.iter().any(|&d| d != 0.0));
    }

    #[test]
    fn a_large_ridge_is_the_decode_bias() {
        let (w, rows, set, n_embd, n_loaded) = problem(5);
        let fit = prompt_refit(&w, n_embd, n_loaded, &rows, &set, 1e9).unwrap();
        assert!(fit.columns.iter().all(|d| d.abs() < 1e-6));
        for e in 0..n_embd {
            let shift: f64 = (0..n_loaded)
                .filter(|p| !set.contains(&(*p as u32)))
                .map(|p| f64::from(w[e * n_loaded + p]) * (0..5).map(|t| f64::from(rows[t * n_loaded + p])).sum::<f64>() / 5.0)
                .sum();
            assert!((f64::from(fit.bias[e]) - shift).abs() < 1e-5);
        }
        // Nothing skipped, or no token: no change.
        let all: Vec<u32> = (0..n_loaded as u32).collect();
        let none = prompt_refit(&w, n_embd, n_loaded, &rows, &all, 1.0).unwrap();
        assert!(none.columns.iter().chain(&none.bias).all(|&v| v == 0.0));
        assert!(prompt_refit(&w, n_embd, n_loaded, &[], &set, 1.0).unwrap().bias.iter().all(|&v| v == 0.0));
        assert!(prompt_refit(&w, n_embd, n_loaded, &rows, &set, 0.0).is_err());
    }
}
