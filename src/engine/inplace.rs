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

use std::ffi::CString;
use std::path::Path;

use llama_cpp_sys_2 as sys;

use super::interleave::{Interleaved, GROUP};
use crate::gguf::{GgmlType, GgufFile};

/// Why a layer cannot be reordered in place (the caller then gathers a copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotInPlace(pub String);

/// One FFN weight as llama.cpp holds it in host memory, in file layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostTensor {
    data: *mut u8,
    /// Bytes between rows (`nb[1]`).
    row_bytes: usize,
    rows: usize,
    /// Bytes of one element (`ffn_down` only; 0 when not an element type).
    elem_bytes: usize,
    /// Byte offset of the data in the GGUF file.
    file_offset: u64,
    len: usize,
    mapped: bool,
    /// Repacked by llama.cpp for its CPU kernels (rows interleaved in groups of 8).
    interleaved: Option<Interleaved>,
}

/// A layer's three FFN weights.
#[derive(Debug, Clone, Copy)]
struct LayerTensors {
    gate: HostTensor,
    up: HostTensor,
    down: HostTensor,
    /// `down` is neuron-major: its rows are the neurons.
    down_rows: bool,
}

impl LayerTensors {
    /// Rows a prefix view must cover in whole multiples of: 8 where llama.cpp holds
    /// gate or up repacked (its kernels take whole groups), else 1.
    fn row_group(&self) -> usize {
        if self.gate.interleaved.is_some() || self.up.interleaved.is_some() || self.down.interleaved.is_some() {
            GROUP
        } else {
            1
        }
    }
}

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
    pub(crate) fn restore(&mut self, model: *const sys::llama_model, gguf: &GgufFile) -> Result<(), NotInPlace> {
        // The changed prefix columns first, from the file: prefix column j holds the
        // neuron that the layer's swaps brought there.
        for l in 0..self.columns.len() {
            if let Some(k) = self.columns[l].take() {
                let t = layer_tensors(model, gguf, l)?;
                let (d, e, n) = (t.down, t.down.elem_bytes, t.gate.rows);
                let info = gguf.tensor(&format!("blk.{l}.ffn_down.weight")).ok_or_else(|| NotInPlace(format!("layer {l}: no ffn_down")))?;
                let file = gguf.read_tensor_data(info).map_err(|e| NotInPlace(format!("layer {l}: reading ffn_down back from the file: {e}")))?;
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
            let t = layer_tensors(model, gguf, l)?;
            let undo: Vec<(u32, u32)> = self.swaps[l].iter().rev().copied().collect();
            // SAFETY: the tensors were checked by layer_tensors and made writable when
            // the swaps were first applied.
            unsafe { apply_swaps(&t, &undo) };
            self.swaps[l].clear();
        }
        for l in 0..self.biases.len() {
            if let Some(file) = self.biases[l].take() {
                let b = bias_tensor(model, gguf, l, file.len())?;
                // SAFETY: checked by bias_tensor and made writable by shift_down_bias.
                unsafe { write_f32(&b, &file) };
            }
        }
        Ok(())
    }

    /// Adds `delta` to layer `l`'s `ffn_down` bias (in host memory, F32), keeping
    /// the file's values for [`FfnOrder::restore`]. The layer's bias must be the
    /// file's (restored since the last shift).
    pub(crate) fn shift_down_bias(&mut self, model: *const sys::llama_model, gguf: &GgufFile, path: &Path, l: usize, delta: &[f32]) -> Result<(), NotInPlace> {
        if self.biases.len() <= l {
            self.biases.resize(l + 1, None);
        }
        if self.biases[l].is_some() {
            return Err(NotInPlace(format!("layer {l}'s ffn_down bias is already shifted")));
        }
        let b = bias_tensor(model, gguf, l, delta.len())?;
        self.make_private(model, gguf, path)?;
        // SAFETY: checked by bias_tensor (n F32 values in host memory), writable (above).
        let file: Vec<f32> = (0..delta.len()).map(|i| unsafe { b.data.cast::<f32>().add(i).read_unaligned() }).collect();
        let shifted: Vec<f32> = file.iter().zip(delta).map(|(a, d)| a + d).collect();
        unsafe { write_f32(&b, &shifted) };
        self.biases[l] = Some(file);
        Ok(())
    }

    /// Adds `delta` (`n_embd` rows of `k`) to the first `k` columns of layer `l`'s
    /// `ffn_down` (F32, F16 or BF16, in llama.cpp's layout, in host memory);
    /// [`FfnOrder::restore`] puts the file's values back (read from the file: no
    /// copy is held meanwhile) before it undoes the layer's swaps. The columns must
    /// not be shifted already.
    pub(crate) fn shift_down_prefix(&mut self, model: *const sys::llama_model, gguf: &GgufFile, path: &Path, l: usize, k: usize, delta: &[f32]) -> Result<(), NotInPlace> {
        if self.columns.len() <= l {
            self.columns.resize(l + 1, None);
        }
        if self.columns[l].is_some() {
            return Err(NotInPlace(format!("layer {l}'s ffn_down columns are already shifted")));
        }
        let t = layer_tensors(model, gguf, l)?;
        let ty = gguf.tensor(&format!("blk.{l}.ffn_down.weight")).map(|i| i.ty).ok_or_else(|| NotInPlace(format!("layer {l}: no ffn_down")))?;
        if t.down_rows || t.down.elem_bytes == 0 {
            return Err(NotInPlace(format!("layer {l}: its ffn_down columns can be changed in place when F32, F16 or BF16 in llama.cpp's layout")));
        }
        let d = t.down;
        if delta.len() != d.rows * k || k > t.gate.rows {
            return Err(NotInPlace(format!("layer {l}: {} changes for {k} of {} columns of {} rows", delta.len(), t.gate.rows, d.rows)));
        }
        self.make_private(model, gguf, path)?;
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
    fn make_private(&mut self, model: *const sys::llama_model, gguf: &GgufFile, path: &Path) -> Result<(), NotInPlace> {
        if self.private {
            return Ok(());
        }
        for layer in (0..).take_while(|i| gguf.tensor(&format!("blk.{i}.ffn_up.weight")).is_some()) {
            if let Ok(lt) = layer_tensors(model, gguf, layer) {
                for w in [lt.gate, lt.up, lt.down] {
                    make_writable(&w, path)?;
                }
            }
            if gguf.tensor(&format!("blk.{layer}.ffn_down.bias")).is_some() {
                if let Ok(b) = host_tensor(model, gguf, &format!("blk.{layer}.ffn_down.bias")) {
                    make_writable(&b, path)?;
                }
            }
        }
        self.private = true;
        Ok(())
    }

    /// Reorders layer `l` (which must be in file order) so that positions
    /// `0..set.len()` hold the file positions in `set` (ascending, distinct),
    /// in that order. Returns the number of neuron swaps.
    pub(crate) fn place_prefix(
        &mut self,
        model: *const sys::llama_model,
        gguf: &GgufFile,
        path: &Path,
        l: usize,
        set: &[u32],
    ) -> Result<usize, NotInPlace> {
        if self.swaps.len() <= l {
            self.swaps.resize(l + 1, Vec::new());
        }
        if !self.swaps[l].is_empty() {
            return Err(NotInPlace(format!("layer {l} is not in file order")));
        }
        let t = layer_tensors(model, gguf, l)?;
        let swaps = prefix_swaps(t.gate.rows, set)?;
        if swaps.is_empty() {
            return Ok(0);
        }
        self.make_private(model, gguf, path)?;
        // SAFETY: checked and writable (above).
        unsafe { apply_swaps(&t, &swaps) };
        drop_copied_file_pages(&t, path);
        let n = swaps.len();
        self.swaps[l] = swaps;
        Ok(n)
    }
}

/// Layer `l`'s `ffn_down` bias of `n` F32 values in host memory, or why not.
pub(crate) fn bias_tensor(model: *const sys::llama_model, gguf: &GgufFile, l: usize, n: usize) -> Result<HostTensor, NotInPlace> {
    let name = format!("blk.{l}.ffn_down.bias");
    let t = host_tensor(model, gguf, &name)?;
    if t.elem_bytes != 4 || t.len != 4 * n {
        return Err(NotInPlace(format!("{name} is not {n} F32 values")));
    }
    Ok(t)
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

/// Whether layer `l` of `model` can be reordered in place; the reason if not.
/// When it can: the number of rows a prefix view must be a multiple of (8 where
/// llama.cpp repacked gate or up, see [`super::interleave`]; else 1).
pub(crate) fn check_layer(model: *const sys::llama_model, gguf: &GgufFile, l: usize) -> Result<usize, NotInPlace> {
    layer_tensors(model, gguf, l).map(|t| t.row_group())
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

fn layer_tensors(model: *const sys::llama_model, gguf: &GgufFile, l: usize) -> Result<LayerTensors, NotInPlace> {
    let gate = host_tensor(model, gguf, &format!("blk.{l}.ffn_gate.weight"))?;
    let up = host_tensor(model, gguf, &format!("blk.{l}.ffn_up.weight"))?;
    let down = host_tensor(model, gguf, &format!("blk.{l}.ffn_down.weight"))?;
    let down_rows = crate::model::ffn_down_neuron_major(gguf);
    if down.interleaved.is_some() && !down_rows {
        return Err(NotInPlace(format!("blk.{l}.ffn_down.weight is repacked: its columns cannot be swapped")));
    }
    if down_rows {
        if gate.rows != up.rows || down.rows != gate.rows {
            return Err(NotInPlace(format!("layer {l}: FFN widths disagree")));
        }
        return Ok(LayerTensors { gate, up, down, down_rows });
    }
    if down.elem_bytes == 0 {
        return Err(NotInPlace(format!(
            "blk.{l}.ffn_down.weight is quantized in llama.cpp's layout: its columns cannot be swapped exactly \
             (a slice made with --down-layout neurons can be reordered in place)"
        )));
    }
    if gate.rows != up.rows || down.row_bytes < gate.rows * down.elem_bytes {
        return Err(NotInPlace(format!("layer {l}: FFN widths disagree")));
    }
    Ok(LayerTensors { gate, up, down, down_rows })
}

fn host_tensor(model: *const sys::llama_model, gguf: &GgufFile, name: &str) -> Result<HostTensor, NotInPlace> {
    let no = |why: &str| NotInPlace(format!("{name}: {why}"));
    let info = gguf.tensor(name).ok_or_else(|| no("not in the file"))?;
    let len = info.n_bytes().ok_or_else(|| no("size overflows"))? as usize;
    let cname = CString::new(name).map_err(|_| no("bad name"))?;
    // SAFETY: model is a live llama_model; the returned tensor lives as long as it.
    unsafe {
        let t = sys::llama_model_get_tensor_by_name(model, cname.as_ptr());
        let t = t.as_ref().ok_or_else(|| no("not in the model"))?;
        if t.buffer.is_null() || t.data.is_null() {
            return Err(no("not in host memory"));
        }
        if t.type_ as u32 != info.ty.0 || sys::ggml_nbytes(t) != len || t.ne[2] != 1 || t.ne[3] != 1 {
            return Err(no("llama.cpp holds it in another layout"));
        }
        let name_ptr = sys::ggml_backend_buffer_name(t.buffer);
        let buffer = if name_ptr.is_null() { &b""[..] } else { std::ffi::CStr::from_ptr(name_ptr).to_bytes() };
        let mapped = buffer == b"CPU_Mapped";
        let mut interleaved = None;
        if !sys::ggml_backend_buffer_is_host(t.buffer) {
            // CPU_REPACK lives in host memory, in llama.cpp's interleaved layout.
            if buffer != b"CPU_REPACK" {
                return Err(no("not in host memory (on a device)"));
            }
            let why = "repacked by llama.cpp in a layout selectinfer does not know";
            let (ne0, rows) = (t.ne[0] as usize, t.ne[1] as usize);
            let group = (len / rows.max(1)) * GROUP;
            if rows % GROUP != 0 || group > len {
                return Err(no(why));
            }
            let file = read_file_range(gguf, gguf.data_offset + info.offset, group).map_err(|e| no(&format!("reading its first rows from the file: {e}")))?;
            let mem = std::slice::from_raw_parts(t.data.cast::<u8>(), group);
            interleaved = Some(Interleaved::detect(info.ty, ne0, &file, mem).ok_or_else(|| no(why))?);
        }
        let elem_bytes = match GgmlType(t.type_ as u32) {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::BF16 => 2,
            _ => 0,
        };
        Ok(HostTensor {
            data: t.data.cast(),
            row_bytes: t.nb[1],
            rows: t.ne[1] as usize,
            elem_bytes,
            file_offset: gguf.data_offset + info.offset,
            len,
            mapped,
            interleaved,
        })
    }
}

/// `len` bytes of the model file from `offset`.
fn read_file_range(gguf: &GgufFile, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len];
    std::fs::File::open(&gguf.path)?.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// Makes a memory-mapped tensor writable without writing the file: its pages are
/// mapped again, privately (copy-on-write), from the same file offsets.
fn make_writable(t: &HostTensor, path: &Path) -> Result<(), NotInPlace> {
    if !t.mapped {
        return Ok(()); // read into an anonymous CPU buffer: already writable
    }
    let page = page_size();
    let addr = t.data as usize;
    let start = addr & !(page - 1);
    let end = (addr + t.len).div_ceil(page) * page;
    let lead = (addr - start) as u64;
    if t.file_offset < lead || (t.file_offset - lead) % page as u64 != 0 {
        return Err(NotInPlace(format!("mapped weights at {addr:#x} do not follow the file's page layout")));
    }
    let file = std::fs::File::open(path).map_err(|e| NotInPlace(format!("reopening {}: {e}", path.display())))?;
    use std::os::fd::AsRawFd;
    // SAFETY: [start, end) lies inside llama.cpp's read-only mapping of this same
    // file (the tensor is inside the file, the mapping covers it whole, page
    // aligned); MAP_FIXED replaces those pages with a private mapping of the same
    // bytes, so every pointer into the range stays valid and reads the same data.
    let p = unsafe {
        libc::mmap(
            start as *mut libc::c_void,
            end - start,
            libc::PROT_READ | libc::PROT_WRITE,
            // MAP_POPULATE maps every page at once (from the page cache, where
            // llama.cpp's load left them), so that drop_copied_file_pages finds the
            // pages no swap wrote still mapped, and leaves them cached.
            libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_POPULATE,
            file.as_raw_fd(),
            (t.file_offset - lead) as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED || p as usize != start {
        return Err(NotInPlace(format!("remapping weights copy-on-write: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

/// A page a swap wrote is anonymous now, and its file page, which nothing maps any
/// more, stays in the page cache until the kernel reclaims it: under a memory cgroup
/// it is charged beside its copy, and reclaim may take mapped weight pages first
/// (which then fault back in during decode). Drops those file pages of the layer's
/// tensors now: `POSIX_FADV_DONTNEED` leaves pages that are still mapped alone (the
/// copy-on-write remap populates every page, so only copied ones are unmapped).
fn drop_copied_file_pages(t: &LayerTensors, path: &Path) {
    let mapped: Vec<&HostTensor> = [&t.gate, &t.up, &t.down].into_iter().filter(|w| w.mapped).collect();
    if mapped.is_empty() {
        return;
    }
    let Ok(file) = std::fs::File::open(path) else { return };
    use std::os::fd::AsRawFd;
    for w in mapped {
        // SAFETY: posix_fadvise only reads its arguments; an advice on a valid file
        // descriptor changes no memory of this process.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), w.file_offset as libc::off_t, w.len as libc::off_t, libc::POSIX_FADV_DONTNEED);
        }
    }
}

/// The system's page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
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
