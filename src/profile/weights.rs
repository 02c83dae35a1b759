//! What the profiler reads from the weights: the `ffn_down` columns of a layer
//! (one column per neuron, its contribution direction in the residual stream) and
//! their squared norms ||W_down[:, n]||^2, the factor that turns a neuron's mean
//! squared activation into its expected squared share of the FFN output.

use anyhow::Context;

use crate::gguf::GgufFile;

/// `ffn_down` of layer `l` as floats, row-major `[n_embd][n_ff]` (row r holds
/// output dimension r of every neuron). Any type ggml can dequantize.
pub fn down_matrix(g: &GgufFile, l: usize) -> anyhow::Result<(Vec<f32>, usize, usize)> {
    let name = format!("blk.{l}.ffn_down.weight");
    let t = g.tensor(&name).with_context(|| format!("{} has no {name}", g.path.display()))?;
    down_matrix_of(g, l, &g.read_tensor_data(t)?)
}

/// [`down_matrix`] from the tensor's bytes in GGUF layout (e.g. llama.cpp's own
/// copy in host memory, which saves reading the file).
pub fn down_matrix_of(g: &GgufFile, l: usize, data: &[u8]) -> anyhow::Result<(Vec<f32>, usize, usize)> {
    let name = format!("blk.{l}.ffn_down.weight");
    let t = g.tensor(&name).with_context(|| format!("{} has no {name}", g.path.display()))?;
    anyhow::ensure!(t.dims.len() == 2, "{name} of {} is not 2-D", g.path.display());
    let (n_ff, n_embd) = (t.dims[0] as usize, t.dims[1] as usize);
    let row_bytes = t.ty.row_bytes(n_ff as u64).with_context(|| format!("cannot size rows of {name}"))? as usize;
    let mut out = Vec::with_capacity(n_ff * n_embd);
    for row in data.chunks_exact(row_bytes).take(n_embd) {
        let values = crate::synth::decode_floats(row, t.ty).or_else(|| crate::engine::dequantize(t.ty.0, row, n_ff));
        out.extend(values.with_context(|| format!("cannot dequantize {name} ({})", t.ty))?);
    }
    Ok((out, n_embd, n_ff))
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
