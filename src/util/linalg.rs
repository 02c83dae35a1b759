//! Dense matrix products and a blocked Cholesky solve for the prompt refit
//! ([`crate::compute::refit`]), which runs after every prompt's prefill and so must
//! be fast: the products go through `matrixmultiply`'s cache-blocked kernels (which
//! pick AVX/FMA at run time), and the solve spends its time in them too. The
//! `unsafe` calls are wrapped here behind views whose every element is checked to
//! lie in its slice.

use anyhow::ensure;

/// An element type `matrixmultiply` multiplies (f32 and f64).
pub trait Scalar: Copy + Default + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> + PartialOrd {
    /// 0 and 1.
    const ZERO: Self;
    const ONE: Self;
    /// `c = alpha a b + beta c`, raw, with `matrixmultiply`'s contract.
    ///
    /// # Safety
    /// As `matrixmultiply::sgemm`: every addressed element lies in its allocation,
    /// and `c` overlaps neither `a` nor `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(m: usize, k: usize, n: usize, alpha: Self, a: *const Self, rsa: isize, csa: isize, b: *const Self, rsb: isize, csb: isize, beta: Self, c: *mut Self, rsc: isize, csc: isize);
    /// The square root.
    fn sqrt(self) -> Self;
}

/// `Scalar` for a float type through its `matrixmultiply` kernel.
macro_rules! scalar {
    ($t:ty, $gemm:path) => {
        impl Scalar for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            unsafe fn gemm(m: usize, k: usize, n: usize, alpha: $t, a: *const $t, rsa: isize, csa: isize, b: *const $t, rsb: isize, csb: isize, beta: $t, c: *mut $t, rsc: isize, csc: isize) {
                // SAFETY: the caller's contract.
                unsafe { $gemm(m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc) }
            }
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
        }
    };
}

scalar!(f32, matrixmultiply::sgemm);
scalar!(f64, matrixmultiply::dgemm);

/// A read-only `rows` x `cols` view of a slice: element (i, j) is
/// `data[i * row_stride + j * col_stride]`.
#[derive(Debug, Clone, Copy)]
pub struct View<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a, T> View<'a, T> {
    /// `data` read as `rows` rows of `cols` (row-major, rows contiguous).
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        View { data, rows, cols, row_stride: cols, col_stride: 1 }
    }

    /// Rows `r` and columns `c` of a row-major matrix `cols` wide (a block).
    fn block(data: &'a [T], cols: usize, r: std::ops::Range<usize>, c: std::ops::Range<usize>) -> Self {
        let start = (r.start * cols + c.start).min(data.len());
        View { data: &data[start..], rows: r.len(), cols: c.len(), row_stride: cols, col_stride: 1 }
    }

    /// Rows `r` of the view (no copy).
    pub fn row_block(self, r: std::ops::Range<usize>) -> Self {
        let start = if r.is_empty() { 0 } else { (r.start * self.row_stride).min(self.data.len()) };
        View { data: &self.data[start..], rows: r.len(), ..self }
    }

    /// Columns `c` of the view (no copy).
    pub fn col_block(self, c: std::ops::Range<usize>) -> Self {
        let start = if c.is_empty() { 0 } else { (c.start * self.col_stride).min(self.data.len()) };
        View { data: &self.data[start..], cols: c.len(), ..self }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        View { rows: self.cols, cols: self.rows, row_stride: self.col_stride, col_stride: self.row_stride, ..self }
    }

    /// Whether the last element lies inside the slice (strides are non-negative).
    fn fits(&self) -> bool {
        self.rows == 0 || self.cols == 0 || (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride < self.data.len()
    }
}

/// `out = alpha a b + beta out`, `out` row-major a.rows x b.cols.
fn gemm<T: Scalar>(alpha: T, a: View<T>, b: View<T>, beta: T, out: &mut [T]) -> anyhow::Result<()> {
    ensure!(out.len() == a.rows * b.cols, "matmul: output of {} for {}x{}", out.len(), a.rows, b.cols);
    gemm_into(alpha, a, b, beta, out, b.cols)
}

/// [`gemm`] into a block of a wider row-major matrix: `out` starts at the block's
/// first element and its rows lie `out_stride` apart.
fn gemm_into<T: Scalar>(alpha: T, a: View<T>, b: View<T>, beta: T, out: &mut [T], out_stride: usize) -> anyhow::Result<()> {
    ensure!(a.cols == b.rows, "matmul: {}x{} times {}x{}", a.rows, a.cols, b.rows, b.cols);
    ensure!(a.fits() && b.fits(), "matmul: a view reaches past its slice");
    ensure!(out_stride >= b.cols, "matmul: output rows {out_stride} apart for {} columns", b.cols);
    if a.rows == 0 || b.cols == 0 {
        return Ok(());
    }
    ensure!((a.rows - 1) * out_stride + b.cols <= out.len(), "matmul: output of {} for {}x{} rows {out_stride} apart", out.len(), a.rows, b.cols);
    if a.cols == 0 {
        for row in out.chunks_mut(out_stride).take(a.rows) {
            row[..b.cols].iter_mut().for_each(|o| *o = if beta == T::ZERO { T::ZERO } else { *o * beta });
        }
        return Ok(());
    }
    let s = |v: usize| isize::try_from(v).expect("a stride within a slice fits isize");
    // SAFETY: every element (i, j) of a, b and out read or written lies in its slice
    // (checked above: the views fit, out's last element (a.rows - 1) * out_stride +
    // b.cols - 1 is inside it, and its rows do not overlap), and out is borrowed
    // mutably, so it overlaps neither input.
    unsafe {
        T::gemm(a.rows, a.cols, b.cols, alpha, a.data.as_ptr(), s(a.row_stride), s(a.col_stride), b.data.as_ptr(), s(b.row_stride), s(b.col_stride), beta, out.as_mut_ptr(), s(out_stride), 1);
    }
    Ok(())
}

/// `out` (a.rows x b.cols, row-major) = `a` . `b`.
pub fn matmul<T: Scalar>(a: View<T>, b: View<T>, out: &mut [T]) -> anyhow::Result<()> {
    gemm(T::ONE, a, b, T::ZERO, out)
}

/// [`matmul`] on `threads` threads, each multiplying a block of `a`'s rows into the
/// same rows of `out`: every element is the same sum in the same order as
/// [`matmul`]'s, so the result is bit-identical.
pub fn matmul_par<T: Scalar + Send + Sync>(a: View<T>, b: View<T>, out: &mut [T], threads: usize) -> anyhow::Result<()> {
    ensure!(out.len() == a.rows * b.cols, "matmul: output of {} for {}x{}", out.len(), a.rows, b.cols);
    let per = a.rows.div_ceil(threads.max(1)).max(1);
    let blocks: Vec<_> = (0..a.rows).step_by(per).map(|r| r..(r + per).min(a.rows)).collect();
    for_each_chunk(out, per * b.cols, blocks, |rows, o| matmul(a.row_block(rows), b, o))
}

/// Runs `f(input, chunk)` for each of `inputs` with the matching `chunk_len`-long
/// chunk of `out` (the last may be shorter), one thread per chunk; a single chunk
/// runs on the calling thread. The first error is returned.
pub fn for_each_chunk<T: Send, I: Send>(out: &mut [T], chunk_len: usize, inputs: Vec<I>, f: impl Fn(I, &mut [T]) -> anyhow::Result<()> + Sync) -> anyhow::Result<()> {
    let f = &f;
    run_jobs(inputs.into_iter().zip(out.chunks_mut(chunk_len.max(1))).map(|(i, c)| move || f(i, c)).collect()).map(drop)
}

/// Runs each job on a thread of its own (a single job on the calling thread) and
/// returns their results in order, or the first error (a job that panicked is one).
pub fn run_jobs<R: Send, F: FnOnce() -> anyhow::Result<R> + Send>(jobs: Vec<F>) -> anyhow::Result<Vec<R>> {
    if jobs.len() <= 1 {
        return jobs.into_iter().map(|f| f()).collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs.into_iter().map(|f| scope.spawn(f)).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked")))).collect()
    })
}

/// `b` (rows of `width`) as blocks of `per` columns (the last may be narrower),
/// each gathered row-major and converted by `f`: one block per thread for work
/// that treats columns apart.
pub fn column_blocks<T: Copy, U>(b: &[T], width: usize, per: usize, f: impl Fn(T) -> U) -> Vec<Vec<U>> {
    (0..width).step_by(per.max(1)).map(|c0| b.chunks_exact(width.max(1)).flat_map(|r| r[c0..(c0 + per).min(width)].iter().map(|&v| f(v))).collect()).collect()
}

/// Rows handled together by [`cholesky_solve`]'s blocks.
const BLOCK: usize = 64;

/// Solves `a x = b` for symmetric positive definite `a` (n x n, row-major; its lower
/// triangle is overwritten by the Cholesky factor L) and `b` (n rows of `width`
/// right-hand sides, overwritten by x), on `threads` threads. Blocked: all but the
/// diagonal blocks' work is matrix products. The result does not depend on
/// `threads`: the factor's updates are split by rows and the solve by columns.
pub fn cholesky_solve<T: Scalar + Send + Sync>(a: &mut [T], n: usize, b: &mut [T], width: usize, threads: usize) -> anyhow::Result<()> {
    cholesky_factor(a, n, threads)?;
    ensure!(b.len() == n * width, "cholesky_solve: a system of the wrong size");
    let per = width.div_ceil(threads.max(1)).max(1);
    if per >= width {
        return cholesky_solve_factored(a, n, b, width);
    }
    // Each thread solves a block of columns, gathered and scattered back.
    let a = &*a;
    let jobs: Vec<_> = column_blocks(b, width, per, |v| v)
        .into_iter()
        .map(|mut x| {
            move || {
                let w = x.len() / n.max(1);
                cholesky_solve_factored(a, n, &mut x, w).map(|()| x)
            }
        })
        .collect();
    let blocks = run_jobs(jobs)?;
    let starts: Vec<usize> = (0..width).step_by(per).collect();
    for (&c0, x) in starts.iter().zip(&blocks) {
        let w = (c0 + per).min(width) - c0;
        for (row, xs) in b.chunks_exact_mut(width).zip(x.chunks_exact(w)) {
            row[c0..c0 + w].copy_from_slice(xs);
        }
    }
    Ok(())
}

/// The first half of [`cholesky_solve`]: overwrites the lower triangle of `a` (n x n,
/// symmetric positive definite) by its Cholesky factor L, the trailing updates on
/// `threads` threads (bit-identical to one).
pub fn cholesky_factor<T: Scalar + Send + Sync>(a: &mut [T], n: usize, threads: usize) -> anyhow::Result<()> {
    ensure!(a.len() == n * n, "cholesky_solve: a system of the wrong size");
    // Right-looking by block columns: factor the diagonal block, solve the panel
    // below it, then update the trailing lower triangle.
    for j0 in (0..n).step_by(BLOCK) {
        let j1 = (j0 + BLOCK).min(n);
        // A[j0..j1, j0..j1] -= L[j0..j1, 0..j0] L[j0..j1, 0..j0]^T, then factor it.
        for j in j0..j1 {
            for i in j..j1 {
                let mut s = a[i * n + j];
                for p in j0..j {
                    s = s - a[i * n + p] * a[j * n + p];
                }
                if i == j {
                    ensure!(s > T::ZERO, "the refit's system is not positive definite (pivot {j})");
                    a[j * n + j] = s.sqrt();
                } else {
                    a[i * n + j] = s / a[j * n + j];
                }
            }
        }
        if j1 == n {
            break;
        }
        // The panel L[j1..n, j0..j1] = A[j1..n, j0..j1] L[j0..j1, j0..j1]^-T, row by row.
        for i in j1..n {
            for j in j0..j1 {
                let mut s = a[i * n + j];
                for p in j0..j {
                    s = s - a[i * n + p] * a[j * n + p];
                }
                a[i * n + j] = s / a[j * n + j];
            }
        }
        // The trailing lower triangle A[j1..n, j1..n] -= panel panel^T, in place, by
        // blocks of rows of about equal area, one per thread: rows r0..r1 of it need
        // only its columns before r1. The panel is copied out, as it lies in `a`.
        let panel: Vec<T> = (j1..n).flat_map(|i| a[i * n + j0..i * n + j1].to_vec()).collect();
        let p = View::row_major(&panel, n - j1, j1 - j0);
        let rows = n - j1;
        let t = threads.clamp(1, rows);
        let ends: Vec<usize> = (1..=t).map(|i| ((rows as f64 * (i as f64 / t as f64).sqrt()).round() as usize).clamp(1, rows)).collect();
        let mut blocks = Vec::new();
        let mut rest = &mut a[j1 * n..];
        let mut r0 = 0;
        for &r1 in &ends {
            if r1 <= r0 {
                continue;
            }
            let (head, tail) = std::mem::take(&mut rest).split_at_mut((r1 - r0) * n);
            blocks.push((r0..r1, head));
            rest = tail;
            r0 = r1;
        }
        let update = |(r, out): (std::ops::Range<usize>, &mut [T])| gemm_into(T::ZERO - T::ONE, p.row_block(r.clone()), p.row_block(0..r.end).t(), T::ONE, &mut out[j1..], n);
        let update = &update;
        run_jobs(blocks.into_iter().map(|b| move || update(b)).collect())?;
    }
    Ok(())
}

/// The second half of [`cholesky_solve`]: solves L L^T x = b for the factor L in
/// `a`'s lower triangle ([`cholesky_factor`]); `b` is n rows of `width`, overwritten
/// by x. Each column of `b` is solved by the same operations whatever `width` is, so
/// solving column blocks apart (on several threads) gives bit-identical results.
pub fn cholesky_solve_factored<T: Scalar>(a: &[T], n: usize, b: &mut [T], width: usize) -> anyhow::Result<()> {
    ensure!(a.len() == n * n && b.len() == n * width, "cholesky_solve: a system of the wrong size");
    // L y = b by block rows: B_i -= L[i, 0..i0] Y[0..i0], then the diagonal block.
    for i0 in (0..n).step_by(BLOCK) {
        let i1 = (i0 + BLOCK).min(n);
        let (done, rest) = b.split_at_mut(i0 * width);
        let bi = &mut rest[..(i1 - i0) * width];
        gemm(T::ZERO - T::ONE, View::block(a, n, i0..i1, 0..i0), View::row_major(done, i0, width), T::ONE, bi)?;
        for i in i0..i1 {
            let (before, row) = bi.split_at_mut((i - i0) * width);
            for p in i0..i {
                let l = a[i * n + p];
                let src = &before[(p - i0) * width..(p - i0 + 1) * width];
                row[..width].iter_mut().zip(src).for_each(|(y, &x)| *y = *y - l * x);
            }
            let d = a[i * n + i];
            row[..width].iter_mut().for_each(|y| *y = *y / d);
        }
    }
    // L^T x = y from the last block row: B_i -= L[i1..n, i]^T X[i1..n], then the block.
    let starts: Vec<usize> = (0..n).step_by(BLOCK).collect();
    for &i0 in starts.iter().rev() {
        let i1 = (i0 + BLOCK).min(n);
        let (head, done) = b.split_at_mut(i1 * width);
        let bi = &mut head[i0 * width..];
        gemm(T::ZERO - T::ONE, View::block(a, n, i1..n, i0..i1).t(), View::row_major(done, n - i1, width), T::ONE, bi)?;
        for i in (i0..i1).rev() {
            let (row, after) = bi.split_at_mut((i - i0 + 1) * width);
            let row = &mut row[(i - i0) * width..];
            for p in i + 1..i1 {
                let l = a[p * n + i];
                let src = &after[(p - i - 1) * width..(p - i) * width];
                row.iter_mut().zip(src).for_each(|(y, &x)| *y = *y - l * x);
            }
            let d = a[i * n + i];
            row.iter_mut().for_each(|y| *y = *y / d);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_equals_the_triple_loop_for_every_transpose() {
        let mut rng = crate::util::rng::SplitMix64::new(3);
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|_| rng.next_signed()).collect();
        let b: Vec<f32> = (0..k * n).map(|_| rng.next_signed()).collect();
        let at: Vec<f32> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
        let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
        let expected: Vec<f64> =
            (0..m * n).map(|i| (0..k).map(|p| f64::from(a[(i / n) * k + p]) * f64::from(b[p * n + i % n])).sum()).collect();
        let views = [
            (View::row_major(&a, m, k), View::row_major(&b, k, n)),
            (View::row_major(&at, k, m).t(), View::row_major(&bt, n, k).t()),
        ];
        for (va, vb) in views {
            let mut out = vec![f32::NAN; m * n];
            matmul(va, vb, &mut out).unwrap();
            out.iter().zip(&expected).for_each(|(o, e)| assert!((f64::from(*o) - e).abs() < 1e-5, "{o} vs {e}"));
        }
    }

    #[test]
    fn products_and_solves_split_over_threads_are_bit_identical() {
        let mut rng = crate::util::rng::SplitMix64::new(11);
        // Sizes off every kernel edge, both operand layouts.
        for (m, k, n) in [(1, 5, 3), (7, 33, 9), (70, 130, 41)] {
            let a: Vec<f32> = (0..m * k).map(|_| rng.next_signed()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| rng.next_signed()).collect();
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            for threads in [2, 3, 8] {
                let (mut one, mut par) = (vec![0f32; m * n], vec![0f32; m * n]);
                matmul(View::row_major(&a, m, k), View::row_major(&b, k, n), &mut one).unwrap();
                matmul_par(View::row_major(&a, m, k), View::row_major(&b, k, n), &mut par, threads).unwrap();
                assert_eq!(one, par, "{m}x{k}x{n} on {threads} threads");
                let at: Vec<f32> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
                matmul_par(View::row_major(&at, k, m).t(), View::row_major(&bt, n, k).t(), &mut par, threads).unwrap();
                assert_eq!(one, par, "{m}x{k}x{n} transposed on {threads} threads");
            }
        }
        // The solve of a column block equals those columns of the whole solve.
        let (n, width) = (150, 9);
        let m: Vec<f64> = (0..n * (n + 3)).map(|_| f64::from(rng.next_signed())).collect();
        let mut a: Vec<f64> = (0..n * n).map(|i| (0..n + 3).map(|p| m[(i / n) * (n + 3) + p] * m[(i % n) * (n + 3) + p]).sum::<f64>() + if i / n == i % n { 1.0 } else { 0.0 }).collect();
        let b: Vec<f64> = (0..n * width).map(|_| f64::from(rng.next_signed())).collect();
        let mut whole = b.clone();
        cholesky_factor(&mut a, n, 1).unwrap();
        cholesky_solve_factored(&a, n, &mut whole, width).unwrap();
        let (c0, c1) = (2, 7);
        let mut part: Vec<f64> = b.chunks(width).flat_map(|r| r[c0..c1].to_vec()).collect();
        cholesky_solve_factored(&a, n, &mut part, c1 - c0).unwrap();
        let want: Vec<f64> = whole.chunks(width).flat_map(|r| r[c0..c1].to_vec()).collect();
        assert_eq!(part, want);
    }

    #[test]
    fn mismatched_or_overlong_views_are_refused() {
        let a = vec![1.0f32; 6];
        let mut out = vec![0.0; 4];
        assert!(matmul(View::row_major(&a, 2, 3), View::row_major(&a, 2, 3), &mut out).is_err());
        assert!(matmul(View::row_major(&a, 2, 4), View::row_major(&a, 4, 2), &mut out).is_err());
        let mut empty: Vec<f32> = vec![f32::NAN; 4];
        matmul(View::row_major(&[], 2, 0), View::row_major(&[], 0, 2), &mut empty).unwrap();
        assert_eq!(empty, vec![0.0; 4]);
    }

    /// The unblocked Cholesky solve (column by column, no matrix products): the
    /// reference for the blocked one.
    fn unblocked_solve(a: &mut [f64], n: usize, b: &mut [f64], width: usize) {
        for j in 0..n {
            let d = a[j * n + j] - a[j * n..j * n + j].iter().map(|x| x * x).sum::<f64>();
            assert!(d > 0.0, "pivot {j}: {d}");
            let d = d.sqrt();
            a[j * n + j] = d;
            for i in j + 1..n {
                let s: f64 = a[i * n..i * n + j].iter().zip(&a[j * n..j * n + j]).map(|(x, y)| x * y).sum();
                a[i * n + j] = (a[i * n + j] - s) / d;
            }
        }
        // L y = b, then L^T x = y.
        for i in 0..n {
            for p in 0..i {
                let l = a[i * n + p];
                (0..width).for_each(|w| b[i * width + w] -= l * b[p * width + w]);
            }
            (0..width).for_each(|w| b[i * width + w] /= a[i * n + i]);
        }
        for i in (0..n).rev() {
            for p in i + 1..n {
                let l = a[p * n + i];
                (0..width).for_each(|w| b[i * width + w] -= l * b[p * width + w]);
            }
            (0..width).for_each(|w| b[i * width + w] /= a[i * n + i]);
        }
    }

    #[test]
    fn cholesky_solves_a_known_system() {
        // A = [[4, 2], [2, 3]], X = [[1, 2], [3, -1]] -> B = A X.
        let mut a: Vec<f64> = vec![4.0, 2.0, 2.0, 3.0];
        let mut b: Vec<f64> = vec![4.0 * 1.0 + 2.0 * 3.0, 4.0 * 2.0 - 2.0, 2.0 * 1.0 + 3.0 * 3.0, 2.0 * 2.0 - 3.0];
        cholesky_solve(&mut a, 2, &mut b, 2, 1).unwrap();
        for (x, e) in b.iter().zip([1.0, 2.0, 3.0, -1.0]) {
            assert!((x - e).abs() < 1e-12, "{b:?}");
        }
        assert!(cholesky_solve(&mut [0.0f64], 1, &mut [1.0], 1, 1).is_err());
    }

    #[test]
    fn the_blocked_solve_equals_the_unblocked_one() {
        // Sizes below, at and across block edges.
        for (n, width) in [(1, 3), (5, 2), (64, 4), (65, 1), (150, 7)] {
            let mut rng = crate::util::rng::SplitMix64::new(n as u64);
            let m: Vec<f64> = (0..n * (n + 3)).map(|_| f64::from(rng.next_signed())).collect();
            // A = M M^T + I: symmetric positive definite.
            let a: Vec<f64> = (0..n * n).map(|i| (0..n + 3).map(|p| m[(i / n) * (n + 3) + p] * m[(i % n) * (n + 3) + p]).sum::<f64>() + if i / n == i % n { 1.0 } else { 0.0 }).collect();
            let b: Vec<f64> = (0..n * width).map(|_| f64::from(rng.next_signed())).collect();
            let (mut a1, mut x1) = (a.clone(), b.clone());
            unblocked_solve(&mut a1, n, &mut x1, width);
            let (mut a2, mut x2) = (a.clone(), b.clone());
            cholesky_solve(&mut a2, n, &mut x2, width, 1).unwrap();
            // On several threads: bit-identical, factor and solution.
            for threads in [2, 3, 8] {
                let (mut a3, mut x3) = (a.clone(), b.clone());
                cholesky_solve(&mut a3, n, &mut x3, width, threads).unwrap();
                assert_eq!(x3, x2, "n {n} on {threads} threads");
                for i in 0..n {
                    assert_eq!(a3[i * n..i * n + i + 1], a2[i * n..i * n + i + 1], "n {n}, factor row {i} on {threads} threads");
                }
            }
            x1.iter().zip(&x2).for_each(|(u, v)| assert!((u - v).abs() < 1e-9 * (1.0 + u.abs()), "n {n}: {u} vs {v}"));
            // And a x = b holds.
            for i in 0..n {
                for w in 0..width {
                    let ax: f64 = (0..n).map(|p| a[i * n + p] * x2[p * width + w]).sum();
                    assert!((ax - b[i * width + w]).abs() < 1e-8, "n {n}: residual {}", ax - b[i * width + w]);
                }
            }
        }
        let mut not_pd = vec![1.0, 2.0, 2.0, 1.0];
        assert!(cholesky_solve(&mut not_pd, 2, &mut [1.0, 1.0], 1, 2).is_err());
    }
}
