//! In-place neuron reordering of a layer's FFN weights: selective computation with
//! no copy of the computed neurons.
//!
//! As the paper's public code does, the loaded FFN is permuted in place so that the
//! neurons to compute come first; decode then multiplies prefix views of the
//! layer's own tensors ([`super::compact`]). A neuron is row `p` of `ffn_gate` and
//! `ffn_up` (whole rows: a byte swap for every type) and column `p` of `ffn_down`
//! (one element per row: exact for F32/F16/BF16, so a quantized `ffn_down` in
//! llama.cpp's layout uses the gathered copy instead), or row `p` of a neuron-major
//! `ffn_down` (patch 0006: a byte swap for every type).
//!
//! The order is a property of the [`Model`](super::Model), shared by all its
//! sessions: every prefill starts from the file order ([`FfnOrder::restore`]), so
//! prefill is bit-identical to the plain engine, and the computed set is placed in
//! ascending file position, the order the gathered copy uses, so decode is too.
//!
//! Memory-mapped weights are mapped read-only and shared with the file, so a layer
//! is first remapped copy-on-write (`MAP_PRIVATE`) over the same pages: the file is
//! never written, and only pages that a swap touches become anonymous memory
//! (resident memory does not grow: each such page replaces a file-backed one).
//! The same holds for a layer's `ffn_down` bias, which `--decode-bias` shifts for
//! decode and every prefill puts back ([`FfnOrder::shift_down_bias`]), and for the
//! computed (prefix) columns of `ffn_down` that `--decode-refit` changes
//! ([`FfnOrder::shift_down_prefix`]).

use super::host::{HostFfn, HostTensor, LayerTensors};
use crate::gguf::GgufFile;

/// Why a layer cannot be reordered in place (the caller then gathers a copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotInPlace(pub String);

/// The neuron order of every layer of a model, as swaps applied to the file order.
#[derive(Debug, Default)]
pub(crate) struct FfnOrder {
    /// Per layer: the swaps applied since the file order, in order.
    swaps: Vec<Vec<(u32, u32)>>,
    /// Per layer: the file's `ffn_down` bias, kept while decode runs with a shifted
    /// one ([`FfnOrder::shift_down_bias`]).
    biases: Vec<Option<Vec<f32>>>,
    /// Per layer: the prefix width k of `ffn_down` columns that
    /// [`FfnOrder::shift_down_prefix`] changed (put back from the file: no copy is
    /// kept while decode runs).
    columns: Vec<Option<usize>>,
    /// Whether every layer's FFN weights were remapped copy-on-write (done once,
    /// for all layers, before the first swap: a page that two tensors share is
    /// then never remapped after one of them was written).
    private: bool,
}

// SAFETY: the raw pointers are only dereferenced under the model's mutex, between
// decode calls or from the evaluation callback between two computed parts of the
// graph (no llama.cpp thread reads the weights then).
unsafe impl Send for FfnOrder {}

impl FfnOrder {
    /// Whether any layer is out of file order.
    pub(crate) fn is_permuted(&self) -> bool {
        self.swaps.iter().any(|s| !s.is_empty()) || self.biases.iter().any(Option::is_some) || self.columns.iter().any(Option::is_some)
    }

    /// Puts every layer back in file order.
    pub(crate) fn restore(&mut self, host: &HostFfn) -> Result<(), NotInPlace> {
        // The changed prefix columns first, from the file: prefix column j holds the
        // neuron that the layer's swaps brought there.
        for l in 0..self.columns.len() {
            if let Some(k) = self.columns[l].take() {
                let t = host.layer(l)?;
                let (d, e, n) = (t.down, t.down.elem_bytes, t.gate.rows);
                let file = host.read(d.file_offset, d.len).map_err(|e| NotInPlace(format!("layer {l}: reading ffn_down back from the file: {e}")))?;
                if file.len() != d.rows * n * e || k > n {
                    return Err(NotInPlace(format!("layer {l}: ffn_down in the file is not {} rows of {n} elements", d.rows)));
                }
                let mut at: Vec<u32> = (0..n as u32).collect();
                self.swaps.get(l).into_iter().flatten().for_each(|&(a, b)| at.swap(a as usize, b as usize));
                for (r, src) in file.chunks_exact(n * e).enumerate() {
                    // SAFETY: row r's first k elements, checked and made writable by shift_down_prefix.
                    let row = unsafe { std::slice::from_raw_parts_mut(d.data.add(r * d.row_bytes), k * e) };
                    for (j, &p) in at[..k].iter().enumerate() {
                        row[j * e..(j + 1) * e].copy_from_slice(&src[p as usize * e..(p as usize + 1) * e]);
                    }
                }
            }
        }
        for l in 0..self.swaps.len() {
            if self.swaps[l].is_empty() {
                continue;
            }
            let t = host.layer(l)?;
            let undo: Vec<(u32, u32)> = self.swaps[l].iter().rev().copied().collect();
            // SAFETY: the tensors were checked when the model loaded and made
            // writable when the swaps were first applied.
            unsafe { apply_swaps(t, &undo) };
            self.swaps[l].clear();
        }
        for l in 0..self.biases.len() {
            if let Some(file) = self.biases[l].take() {
                let b = host.bias(l, file.len())?;
                // SAFETY: checked by HostFfn::bias and made writable by shift_down_bias.
                unsafe { write_f32(b, &file) };
            }
        }
        Ok(())
    }

    /// Adds `delta` to layer `l`'s `ffn_down` bias (in host memory, F32), keeping
    /// the file's values for [`FfnOrder::restore`]. The layer's bias must be the
    /// file's (restored since the last shift).
    pub(crate) fn shift_down_bias(&mut self, host: &HostFfn, l: usize, delta: &[f32]) -> Result<(), NotInPlace> {
        if self.biases.len() <= l {
            self.biases.resize(l + 1, None);
        }
        if self.biases[l].is_some() {
            return Err(NotInPlace(format!("layer {l}'s ffn_down bias is already shifted")));
        }
        let b = host.bias(l, delta.len())?;
        self.make_private(host)?;
        // SAFETY: checked by HostFfn::bias (n F32 values in host memory), writable (above).
        let file: Vec<f32> = (0..delta.len()).map(|i| unsafe { b.data.cast::<f32>().add(i).read_unaligned() }).collect();
        let shifted: Vec<f32> = file.iter().zip(delta).map(|(a, d)| a + d).collect();
        unsafe { write_f32(b, &shifted) };
        self.biases[l] = Some(file);
        Ok(())
    }

    /// Adds `delta` (`n_embd` rows of `k`) to the first `k` columns of layer `l`'s
    /// `ffn_down` (F32, F16 or BF16, in llama.cpp's layout, in host memory);
    /// [`FfnOrder::restore`] puts the file's values back (read from the file: no
    /// copy is held meanwhile) before it undoes the layer's swaps. The columns must
    /// not be shifted already.
    pub(crate) fn shift_down_prefix(&mut self, host: &HostFfn, gguf: &GgufFile, l: usize, k: usize, delta: &[f32]) -> Result<(), NotInPlace> {
        if self.columns.len() <= l {
            self.columns.resize(l + 1, None);
        }
        if self.columns[l].is_some() {
            return Err(NotInPlace(format!("layer {l}'s ffn_down columns are already shifted")));
        }
        let t = host.layer(l)?;
        let ty = gguf.tensor(&format!("blk.{l}.ffn_down.weight")).map(|i| i.ty).ok_or_else(|| NotInPlace(format!("layer {l}: no ffn_down")))?;
        if t.down_rows || t.down.elem_bytes == 0 {
            return Err(NotInPlace(format!("layer {l}: its ffn_down columns can be changed in place when F32, F16 or BF16 in llama.cpp's layout")));
        }
        let d = t.down;
        if delta.len() != d.rows * k || k > t.gate.rows {
            return Err(NotInPlace(format!("layer {l}: {} changes for {k} of {} columns of {} rows", delta.len(), t.gate.rows, d.rows)));
        }
        self.make_private(host)?;
        let n = k * d.elem_bytes;
        // Recorded before the first write, so that a failure half-way is still put back.
        self.columns[l] = Some(k);
        for (r, change) in delta.chunks_exact(k.max(1)).enumerate().take(d.rows) {
            // SAFETY: row r holds the layer's width (>= k) of elem_bytes elements; writable (above).
            let row = unsafe { std::slice::from_raw_parts_mut(d.data.add(r * d.row_bytes), n) };
            crate::util::floats::add_floats(row, ty, change).ok_or_else(|| NotInPlace(format!("layer {l}: ffn_down row {r} is not {k} {ty} values")))?;
        }
        Ok(())
    }

    /// Remaps every layer's FFN weights and `ffn_down` bias copy-on-write, once, for
    /// all layers, before anything is written: a page that two tensors share is then
    /// never remapped after one of them was written.
    fn make_private(&mut self, host: &HostFfn) -> Result<(), NotInPlace> {
        if self.private {
            return Ok(());
        }
        for t in host.host_tensors() {
            host.make_writable(t)?;
        }
        self.private = true;
        Ok(())
    }

    /// Reorders layer `l` (which must be in file order) so that positions
    /// `0..set.len()` hold the file positions in `set` (ascending, distinct),
    /// in that order. Returns the number of neuron swaps.
    pub(crate) fn place_prefix(&mut self, host: &HostFfn, l: usize, set: &[u32]) -> Result<usize, NotInPlace> {
        if self.swaps.len() <= l {
            self.swaps.resize(l + 1, Vec::new());
        }
        if !self.swaps[l].is_empty() {
            return Err(NotInPlace(format!("layer {l} is not in file order")));
        }
        let t = host.layer(l)?;
        let swaps = prefix_swaps(t.gate.rows, set)?;
        if swaps.is_empty() {
            return Ok(0);
        }
        self.make_private(host)?;
        // SAFETY: checked when the model loaded, writable (above).
        unsafe { apply_swaps(t, &swaps) };
        host.drop_copied_file_pages(t);
        let n = swaps.len();
        self.swaps[l] = swaps;
        Ok(n)
    }
}

/// Writes `values` over the tensor's data.
///
/// # Safety
/// `t` must be a live, writable host tensor of `values.len()` F32 values.
unsafe fn write_f32(t: &HostTensor, values: &[f32]) {
    for (i, &v) in values.iter().enumerate() {
        unsafe { t.data.cast::<f32>().add(i).write_unaligned(v) };
    }
}

/// The swaps that take the identity order to one whose first `set.len()` positions
/// hold `set`, in order: position `i` receives `set[i]`.
fn prefix_swaps(n: usize, set: &[u32]) -> Result<Vec<(u32, u32)>, NotInPlace> {
    if set.windows(2).any(|w| w[0] >= w[1]) || set.last().is_some_and(|&p| p as usize >= n) {
        return Err(NotInPlace(format!("the computed set must be ascending positions below {n}")));
    }
    let mut at: Vec<u32> = (0..n as u32).collect(); // position -> neuron
    let mut pos: Vec<u32> = (0..n as u32).collect(); // neuron -> position
    let mut swaps = Vec::new();
    for (i, &want) in set.iter().enumerate() {
        let j = pos[want as usize] as usize;
        if j != i {
            swaps.push((i as u32, j as u32));
            let (a, b) = (at[i], at[j]);
            at.swap(i, j);
            pos[a as usize] = j as u32;
            pos[b as usize] = i as u32;
        }
    }
    Ok(swaps)
}

/// Applies `swaps` in order to rows of gate/up and columns of down.
///
/// # Safety
/// `t` must describe live, writable host tensors of the checked shapes.
unsafe fn apply_swaps(t: &LayerTensors, swaps: &[(u32, u32)]) {
    let row_major: &[&HostTensor] = if t.down_rows { &[&t.gate, &t.up, &t.down] } else { &[&t.gate, &t.up] };
    for w in row_major {
        if let Some(il) = w.interleaved {
            // SAFETY: a live, writable tensor of `len` bytes (the caller's contract).
            let data = unsafe { std::slice::from_raw_parts_mut(w.data, w.len) };
            swaps.iter().for_each(|&(i, j)| il.swap_rows(data, i as usize, j as usize));
            continue;
        }
        for &(i, j) in swaps {
            // SAFETY: i != j are rows below `rows` (prefix_swaps), each row_bytes long.
            unsafe {
                std::ptr::swap_nonoverlapping(w.data.add(i as usize * w.row_bytes), w.data.add(j as usize * w.row_bytes), w.row_bytes)
            };
        }
    }
    if t.down_rows {
        return;
    }
    let d = &t.down;
    for r in 0..d.rows {
        // SAFETY: row r of down holds the layer's width of elem_bytes elements.
        let row = unsafe { d.data.add(r * d.row_bytes) };
        match d.elem_bytes {
            2 => {
                let row = row.cast::<u16>();
                for &(i, j) in swaps {
                    unsafe { std::ptr::swap(row.add(i as usize), row.add(j as usize)) };
                }
            }
            _ => {
                let row = row.cast::<u32>();
                for &(i, j) in swaps {
                    unsafe { std::ptr::swap(row.add(i as usize), row.add(j as usize)) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_swaps;

    fn apply(n: usize, swaps: &[(u32, u32)]) -> Vec<u32> {
        let mut v: Vec<u32> = (0..n as u32).collect();
        swaps.iter().for_each(|&(i, j)| v.swap(i as usize, j as usize));
        v
    }

    #[test]
    fn prefix_swaps_place_the_set_in_order_and_undo_exactly() {
        for set in [vec![], vec![0, 1, 2], vec![3, 5, 9], vec![0, 2, 4, 6, 8], vec![1, 2, 3, 7, 8, 9]] {
            let swaps = prefix_swaps(10, &set).unwrap();
            let v = apply(10, &swaps);
            assert_eq!(&v[..set.len()], &set[..], "{set:?}");
            let mut rest: Vec<u32> = v[set.len()..].to_vec();
            rest.sort_unstable();
            assert!(rest.iter().all(|p| !set.contains(p)));
            // Undo in reverse order gives the identity back.
            let mut w = v.clone();
            swaps.iter().rev().for_each(|&(i, j)| w.swap(i as usize, j as usize));
            assert_eq!(w, (0..10).collect::<Vec<u32>>());
            assert!(swaps.len() <= set.len());
        }
        assert_eq!(prefix_swaps(10, &[0, 1, 2]).unwrap(), vec![], "a prefix already in place moves nothing");
    }

    #[test]
    fn prefix_swaps_refuse_unsorted_or_out_of_range_sets() {
        assert!(prefix_swaps(4, &[2, 1]).is_err());
        assert!(prefix_swaps(4, &[1, 1]).is_err());
        assert!(prefix_swaps(4, &[1, 4]).is_err());
    }
}
