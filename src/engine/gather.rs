//! Gathering neurons out of FFN weights in GGUF layout: rows of `ffn_gate`/`ffn_up`
//! (and of a neuron-major `ffn_down`) and columns of `ffn_down`. Used by the slicer
//! (`select::rewrite`) and by selective computation's copy layout (`compute`).

use anyhow::{ensure, Context};

use super::{dequantize, quantize_rows};
use crate::gguf::{GgmlType, TensorInfo};
use crate::util::floats::encode_floats;

/// Keeps the given rows (last dimension) of a tensor; rows are whole blocks, so
/// this is a byte copy for every type.
pub fn gather_rows(data: &[u8], t: &TensorInfo, kept: &[u32]) -> anyhow::Result<Vec<u8>> {
    let row_elems = if t.dims.len() == 1 { 1 } else { t.dims[0] };
    let row_bytes = t.ty.row_bytes(row_elems).with_context(|| format!("cannot size rows of {}", t.name))? as usize;
    let mut out = Vec::with_capacity(row_bytes * kept.len());
    for &r in kept {
        out.extend_from_slice(&data[r as usize * row_bytes..(r as usize + 1) * row_bytes]);
    }
    Ok(out)
}

/// Keeps the given columns (first dimension) of a 2-D tensor. F32/F16/BF16 columns
/// are copied exactly; quantized rows are dequantized with ggml's `to_float` and the
/// kept values stored as F16. Returns the type of the result and its bytes.
pub fn gather_columns(data: &[u8], t: &TensorInfo, kept: &[u32]) -> anyhow::Result<(GgmlType, Vec<u8>)> {
    let (n_cols, n_rows) = (t.dims[0] as usize, t.dims[1] as usize);
    let row_bytes = t.ty.row_bytes(n_cols as u64).context("row size")? as usize;
    let rows = data.chunks_exact(row_bytes).take(n_rows);
    match t.ty {
        GgmlType::F32 => Ok((t.ty, gather_elements::<4>(rows, kept))),
        GgmlType::F16 | GgmlType::BF16 => Ok((t.ty, gather_elements::<2>(rows, kept))),
        _ => Ok((GgmlType::F16, encode_floats(&dequantized_columns(data, t, kept)?, GgmlType::F16).expect("F16 encodes"))),
    }
}

/// The given columns of a 2-D `[n_cols, n_rows]` tensor as the rows of a
/// `[n_rows, kept.len()]` tensor of type `ty`: element types are moved exactly (`ty`
/// must then be the source's type); quantized rows are dequantized with ggml's
/// `to_float` and the transposed values quantized as `ty` (rows of `n_rows`).
pub fn transpose_columns(data: &[u8], t: &TensorInfo, kept: &[u32], ty: GgmlType) -> anyhow::Result<Vec<u8>> {
    let n_rows = t.dims[1] as usize;
    if !t.ty.is_quantized() {
        ensure!(ty == t.ty, "{} is {}: it is transposed in its own type, not {ty}", t.name, t.ty);
        let (_, picked) = gather_columns(data, t, kept)?; // [n_rows][k] elements
        let e = match t.ty {
            GgmlType::F32 => 4,
            _ => 2,
        };
        let k = kept.len();
        let mut out = vec![0u8; picked.len()];
        for r in 0..n_rows {
            for c in 0..k {
                out[(c * n_rows + r) * e..(c * n_rows + r + 1) * e].copy_from_slice(&picked[(r * k + c) * e..(r * k + c + 1) * e]);
            }
        }
        return Ok(out);
    }
    let picked = dequantized_columns(data, t, kept)?; // [n_rows][k]
    let tr = transposed(&picked, n_rows, kept.len());
    quantize_rows(ty.0, &tr, n_rows).with_context(|| format!("cannot quantize the transposed {} as {ty} (rows of {n_rows})", t.name))
}

/// `values` (`rows` rows of `cols`, row-major) as `cols` rows of `rows`.
fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut tr = vec![0f32; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            tr[c * rows + r] = values[r * cols + c];
        }
    }
    tr
}

/// Keeps the given columns of a quantized 2-D tensor in its own type: each row is
/// dequantized with ggml's `to_float`, the kept values are quantized again with
/// ggml's quantizer (`kept.len()` must be whole blocks: `select::rewrite::block_rounded_load`).
pub fn requantize_columns(data: &[u8], t: &TensorInfo, kept: &[u32]) -> anyhow::Result<Vec<u8>> {
    quantize_rows(t.ty.0, &dequantized_columns(data, t, kept)?, kept.len())
        .with_context(|| format!("cannot requantize {} as {} with {} columns", t.name, t.ty, kept.len()))
}

/// The kept columns of a quantized 2-D tensor as floats, row after row (ggml's
/// `to_float` on each row).
fn dequantized_columns(data: &[u8], t: &TensorInfo, kept: &[u32]) -> anyhow::Result<Vec<f32>> {
    let (n_cols, n_rows) = (t.dims[0] as usize, t.dims[1] as usize);
    let row_bytes = t.ty.row_bytes(n_cols as u64).context("row size")? as usize;
    let mut picked = Vec::with_capacity(kept.len() * n_rows);
    for row in data.chunks_exact(row_bytes).take(n_rows) {
        let values = dequantize(t.ty.0, row, n_cols).with_context(|| format!("cannot dequantize {} ({})", t.name, t.ty))?;
        picked.extend(kept.iter().map(|&c| values[c as usize]));
    }
    Ok(picked)
}

/// Copies the `E`-byte elements at `kept` of every row.
fn gather_elements<'a, const E: usize>(rows: impl Iterator<Item = &'a [u8]>, kept: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for row in rows {
        let elems: &[[u8; E]] = as_elements(row);
        out.extend(kept.iter().flat_map(|&c| elems[c as usize]));
    }
    out
}

/// Views bytes as `E`-byte arrays (the length is a multiple of `E` for whole rows).
fn as_elements<const E: usize>(bytes: &[u8]) -> &[[u8; E]] {
    let (chunks, rest) = bytes.as_chunks::<E>();
    debug_assert!(rest.is_empty());
    chunks
}

/// Refitted kept columns (`[n_embd][k]` floats) in the type of the source `t`.
pub fn encode_columns(values: &[f32], t: &TensorInfo, k: usize) -> anyhow::Result<Vec<u8>> {
    encode_rows(values, t.ty, k).with_context(|| format!("cannot quantize the refitted {} as {} with {k} columns", t.name, t.ty))
}

/// Refitted kept columns as neuron-major rows (`[k][n_embd]`) of type `ty`.
pub fn encode_transposed(values: &[f32], t: &TensorInfo, k: usize, ty: GgmlType) -> anyhow::Result<Vec<u8>> {
    let n_embd = t.dims[1] as usize;
    encode_rows(&transposed(values, n_embd, k), ty, n_embd).with_context(|| format!("cannot quantize the refitted {} as {ty} (rows of {n_embd})", t.name))
}

/// Floats stored as `ty`: element types exactly, block types by ggml's quantizer.
fn encode_rows(values: &[f32], ty: GgmlType, n_per_row: usize) -> Option<Vec<u8>> {
    encode_floats(values, ty).or_else(|| quantize_rows(ty.0, values, n_per_row))
}
