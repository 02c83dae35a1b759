//! What the profiler reads from the weights: the `ffn_down` columns of a layer
//! (one column per neuron, its contribution direction in the residual stream) and
//! their squared norms ||W_down[:, n]||^2, the factor that turns a neuron's mean
//! squared activation into its expected squared share of the FFN output.

use anyhow::Context;

use crate::gguf::{GgmlType, GgufFile};

/// `ffn_down` of layer `l` as floats, row-major `[n_embd][n_ff]` (row r holds
/// output dimension r of every neuron). Any type ggml can dequantize.
pub fn down_matrix(g: &GgufFile, l: usize) -> anyhow::Result<(Vec<f32>, usize, usize)> {
    let name = format!("blk.{l}.ffn_down.weight");
    let t = g.tensor(&name).with_context(|| format!("{} has no {name}", g.path.display()))?;
    let rows = DownRows::of(g, l, std::borrow::Cow::Owned(g.read_tensor_data(t)?))?;
    let (mut out, mut row) = (Vec::with_capacity(rows.n_ff * rows.n_embd), Vec::new());
    for e in 0..rows.n_embd {
        rows.row(e, &mut row)?;
        out.extend_from_slice(&row);
    }
    Ok((out, rows.n_embd, rows.n_ff))
}

/// Layer `l`'s `ffn_down` in its own type (GGUF layout), read a row at a time as
/// floats, so that the whole matrix need not be held as floats.
#[derive(Debug)]
pub struct DownRows<'a> {
    bytes: std::borrow::Cow<'a, [u8]>,
    ty: GgmlType,
    name: String,
    row_bytes: usize,
    /// Rows (output dimensions).
    pub n_embd: usize,
    /// Values per row (neurons).
    pub n_ff: usize,
}

impl<'a> DownRows<'a> {
    /// The rows of `data`, the bytes of `g`'s `blk.{l}.ffn_down.weight`.
    pub fn of(g: &GgufFile, l: usize, data: std::borrow::Cow<'a, [u8]>) -> anyhow::Result<DownRows<'a>> {
        let name = format!("blk.{l}.ffn_down.weight");
        let t = g.tensor(&name).with_context(|| format!("{} has no {name}", g.path.display()))?;
        anyhow::ensure!(t.dims.len() == 2, "{name} of {} is not 2-D", g.path.display());
        let (n_ff, n_embd) = (t.dims[0] as usize, t.dims[1] as usize);
        let row_bytes = t.ty.row_bytes(n_ff as u64).with_context(|| format!("cannot size rows of {name}"))? as usize;
        anyhow::ensure!(data.len() >= row_bytes * n_embd, "{name}: {} bytes for {n_embd} rows of {row_bytes}", data.len());
        Ok(DownRows { bytes: data, ty: t.ty, name, row_bytes, n_embd, n_ff })
    }

    /// Row `e` (output dimension e of every neuron) into `out`: exact for
    /// F32/F16/BF16, dequantized otherwise.
    pub fn row(&self, e: usize, out: &mut Vec<f32>) -> anyhow::Result<()> {
        let raw = &self.bytes[e * self.row_bytes..(e + 1) * self.row_bytes];
        let values = crate::util::floats::decode_floats(raw, self.ty).or_else(|| crate::engine::dequantize(self.ty.0, raw, self.n_ff));
        *out = values.with_context(|| format!("cannot dequantize {} ({})", self.name, self.ty))?;
        Ok(())
    }
}

/// ||W_down[:, n]||^2 of every neuron of every layer.
pub fn down_column_norms(g: &GgufFile, n_layer: usize) -> anyhow::Result<Vec<Vec<f64>>> {
    (0..n_layer)
        .map(|l| {
            let (m, _, n_ff) = down_matrix(g, l)?;
            let mut norms = vec![0.0f64; n_ff];
            for row in m.chunks_exact(n_ff) {
                for (s, &w) in norms.iter_mut().zip(row) {
                    *s += f64::from(w) * f64::from(w);
                }
            }
            Ok(norms)
        })
        .collect()
}
