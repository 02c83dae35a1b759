//! Where llama.cpp holds a loaded model's FFN weights in host memory, found once
//! when the model loads, and the file it was loaded from, held open.
//!
//! In-place selective computation ([`super::inplace`]) swaps neuron rows of these
//! tensors. Their layout is recognised at load, while every layer is still in file
//! order: a repacked tensor (llama.cpp's CPU_REPACK buffer, rows interleaved in
//! groups of 8, [`super::interleave`]) is recognised by packing its first rows from
//! the file and comparing them with memory, which only holds before any swap. Every
//! later read of the file (a copy-on-write remap, a prefix put back, a dropped page)
//! goes through the handle opened at load, never through the path: a file replaced
//! under a running process (an experiment re-slicing a model of the same name) is
//! then never mixed with the one llama.cpp mapped.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use llama_cpp_sys_2 as sys;

use super::inplace::NotInPlace;
use super::interleave::{Interleaved, GROUP};
use crate::gguf::{GgmlType, GgufFile};

/// One FFN weight as llama.cpp holds it in host memory, in file layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostTensor {
    pub(crate) data: *mut u8,
    /// Bytes between rows (`nb[1]`).
    pub(crate) row_bytes: usize,
    pub(crate) rows: usize,
    /// Bytes of one element (`ffn_down` only; 0 when not an element type).
    pub(crate) elem_bytes: usize,
    /// Byte offset of the data in the GGUF file.
    pub(crate) file_offset: u64,
    pub(crate) len: usize,
    mapped: bool,
    /// Repacked by llama.cpp for its CPU kernels (rows interleaved in groups of 8).
    pub(crate) interleaved: Option<Interleaved>,
}

/// A layer's three FFN weights.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LayerTensors {
    pub(crate) gate: HostTensor,
    pub(crate) up: HostTensor,
    pub(crate) down: HostTensor,
    /// `down` is neuron-major: its rows are the neurons.
    pub(crate) down_rows: bool,
}

impl LayerTensors {
    /// Rows a prefix view must cover in whole multiples of: 8 where llama.cpp holds
    /// gate or up repacked (its kernels take whole groups), else 1.
    pub(crate) fn row_group(&self) -> usize {
        if self.gate.interleaved.is_some() || self.up.interleaved.is_some() || self.down.interleaved.is_some() {
            GROUP
        } else {
            1
        }
    }
}

/// Every layer's FFN weights and `ffn_down` bias as llama.cpp holds them (or why a
/// layer cannot be reordered in place), and the model file, held open.
#[derive(Debug)]
pub(crate) struct HostFfn {
    file: File,
    layers: Vec<Result<LayerTensors, NotInPlace>>,
    biases: Vec<Result<HostTensor, NotInPlace>>,
}

// SAFETY: the raw pointers are fixed when the model loads and only dereferenced under
// the model's FFN-order mutex (super::inplace::FfnOrder); HostFfn itself is never
// changed after it is made.
unsafe impl Send for HostFfn {}
unsafe impl Sync for HostFfn {}

impl HostFfn {
    /// Finds every layer's FFN tensors in `model`, just loaded from `file` (opened
    /// before llama.cpp opened the same path) and still in file order.
    pub(crate) fn detect(model: *const sys::llama_model, gguf: &GgufFile, file: File) -> HostFfn {
        let n_layers = gguf.tensors.iter().filter_map(|t| crate::gguf::split_block_name(&t.name).map(|(l, _)| l + 1)).max().unwrap_or(0);
        let layers = (0..n_layers).map(|l| layer_tensors(model, gguf, &file, l)).collect();
        let biases = (0..n_layers).map(|l| host_tensor(model, gguf, &file, &format!("blk.{l}.ffn_down.bias"))).collect();
        HostFfn { file, layers, biases }
    }

    /// Layer `l`'s FFN weights, or why they cannot be reordered in place.
    pub(crate) fn layer(&self, l: usize) -> Result<&LayerTensors, NotInPlace> {
        match self.layers.get(l) {
            Some(Ok(t)) => Ok(t),
            Some(Err(e)) => Err(e.clone()),
            None => Err(NotInPlace(format!("the model has no layer {l}"))),
        }
    }

    /// Layer `l`'s `ffn_down` bias of `n` F32 values in host memory, or why not.
    pub(crate) fn bias(&self, l: usize, n: usize) -> Result<&HostTensor, NotInPlace> {
        let t = match self.biases.get(l) {
            Some(Ok(t)) => t,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err(NotInPlace(format!("the model has no layer {l}"))),
        };
        if t.elem_bytes != 4 || t.len != 4 * n {
            return Err(NotInPlace(format!("blk.{l}.ffn_down.bias is not {n} F32 values")));
        }
        Ok(t)
    }

    /// Every layer's weights and bias that are in host memory.
    pub(crate) fn host_tensors(&self) -> impl Iterator<Item = &HostTensor> {
        let weights = self.layers.iter().flatten().flat_map(|t| [&t.gate, &t.up, &t.down]);
        weights.chain(self.biases.iter().flatten())
    }

    /// The model file, as opened when the model loaded.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// `len` bytes of the model file from `offset`.
    pub(crate) fn read(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        read_file_range(&self.file, offset, len)
    }

    /// Makes a memory-mapped tensor writable without writing the file: its pages
    /// are mapped again, privately (copy-on-write), from the same file offsets.
    pub(crate) fn make_writable(&self, t: &HostTensor) -> Result<(), NotInPlace> {
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
        // SAFETY: [start, end) lies inside llama.cpp's read-only mapping of this same
        // file (the handle was opened before llama.cpp mapped the path, and the path
        // still named it after the load: Model::load); the tensor is inside the file,
        // the mapping covers it whole, page aligned. MAP_FIXED replaces those pages
        // with a private mapping of the same bytes, so every pointer into the range
        // stays valid and reads the same data.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                end - start,
                libc::PROT_READ | libc::PROT_WRITE,
                // MAP_POPULATE maps every page at once (from the page cache, where
                // llama.cpp's load left them), so that drop_copied_file_pages finds the
                // pages no swap wrote still mapped, and leaves them cached.
                libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_POPULATE,
                self.file.as_raw_fd(),
                (t.file_offset - lead) as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED || p as usize != start {
            return Err(NotInPlace(format!("remapping weights copy-on-write: {}", std::io::Error::last_os_error())));
        }
        Ok(())
    }

    /// A page a swap wrote is anonymous now, and its file page, which nothing maps
    /// any more, stays in the page cache until the kernel reclaims it: under a memory
    /// cgroup it is charged beside its copy, and reclaim may take mapped weight pages
    /// first (which then fault back in during decode). Drops those file pages of the
    /// layer's tensors now: `POSIX_FADV_DONTNEED` leaves pages that are still mapped
    /// alone (the copy-on-write remap populates every page, so only copied ones are
    /// unmapped).
    pub(crate) fn drop_copied_file_pages(&self, t: &LayerTensors) {
        for w in [&t.gate, &t.up, &t.down].into_iter().filter(|w| w.mapped) {
            // SAFETY: posix_fadvise only reads its arguments; an advice on a valid
            // file descriptor changes no memory of this process.
            unsafe {
                libc::posix_fadvise(self.file.as_raw_fd(), w.file_offset as libc::off_t, w.len as libc::off_t, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
}

/// Whether `path` still names the file `file` is open on (same device and inode):
/// false when it was replaced or removed since `file` was opened.
pub(crate) fn names_same_file(path: &Path, file: &File) -> bool {
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn layer_tensors(model: *const sys::llama_model, gguf: &GgufFile, file: &File, l: usize) -> Result<LayerTensors, NotInPlace> {
    let gate = host_tensor(model, gguf, file, &format!("blk.{l}.ffn_gate.weight"))?;
    let up = host_tensor(model, gguf, file, &format!("blk.{l}.ffn_up.weight"))?;
    let down = host_tensor(model, gguf, file, &format!("blk.{l}.ffn_down.weight"))?;
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

fn host_tensor(model: *const sys::llama_model, gguf: &GgufFile, file: &File, name: &str) -> Result<HostTensor, NotInPlace> {
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
            let from_file = read_file_range(file, gguf.data_offset + info.offset, group).map_err(|e| no(&format!("reading its first rows from the file: {e}")))?;
            let mem = std::slice::from_raw_parts(t.data.cast::<u8>(), group);
            interleaved = Some(Interleaved::detect(info.ty, ne0, &from_file, mem).ok_or_else(|| no(why))?);
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

/// `len` bytes of `file` from `offset`.
fn read_file_range(file: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
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
    use super::names_same_file;

    #[test]
    fn a_file_replaced_under_its_name_is_told_from_the_one_held_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, b"first").unwrap();
        let held = std::fs::File::open(&path).unwrap();
        assert!(names_same_file(&path, &held));
        // Written to a temporary name and renamed over, as every selectinfer output is.
        let tmp = dir.path().join("m.gguf.tmp");
        std::fs::write(&tmp, b"second").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert!(!names_same_file(&path, &held));
        std::fs::remove_file(&path).unwrap();
        assert!(!names_same_file(&path, &held));
    }
}
