//! The llama.cpp engine: every `unsafe` call of selectinfer lives in this module.
//!
//! The rest of the crate sees safe types: [`Model`] (a loaded GGUF), [`Session`] (a
//! context with its KV cache, decoding and greedy generation), [`Sequences`] (several
//! sequences decoded side by side), [`TensorObserver`]
//! (the graph evaluation callback, used by the profiler), and [`quantize`] (llama.cpp's
//! own quantizer, used by `convert`).

mod backend;
mod callback;
mod compact;
mod gather;
mod host;
mod inplace;
mod interleave;
mod model;
mod pages;
mod quantize;
mod sequences;
mod session;

pub use backend::{set_verbose, EngineError};
pub use callback::{ObservedTensor, TensorObserver};
pub use compact::{CompactLayer, CompactShape};
pub use interleave::swappable as repackable;
pub use gather::{encode_columns, encode_transposed, gather_columns, gather_rows, requantize_columns, transpose_columns};
pub use model::{LoadOptions, Model};
pub use quantize::{quantize, TargetType};
pub use sequences::Sequences;
pub use session::{default_threads, MAX_THREADS, GenerateOptions, GenerateStats, Session, SessionOptions};

/// A token id of the model's vocabulary.
pub type Token = i32;

/// ggml's element count per block and bytes per block for a type id, as the linked
/// llama.cpp reports them; tests compare these with [`crate::gguf::GgmlType::layout`].
pub fn ggml_type_layout(type_id: u32) -> (u64, u64) {
    // SAFETY: both functions index a static table by type id; ids below
    // GGML_TYPE_COUNT are valid (removed types report block size 0).
    unsafe {
        let t = type_id as llama_cpp_sys_2::ggml_type;
        (llama_cpp_sys_2::ggml_blck_size(t) as u64, llama_cpp_sys_2::ggml_type_size(t) as u64)
    }
}

/// Dequantizes `n` elements of type `type_id` stored in `bytes` with ggml's own
/// `to_float`, so every quantized format llama.cpp reads can be sliced.
/// Returns `None` when the type has no `to_float` or `bytes` is too short.
pub fn dequantize(type_id: u32, bytes: &[u8], n: usize) -> Option<Vec<f32>> {
    let (blck, size) = ggml_type_layout(type_id);
    if blck == 0 || n as u64 % blck != 0 || (bytes.len() as u64) < n as u64 / blck * size {
        return None;
    }
    // SAFETY: the traits table is static; to_float reads n / blck blocks from
    // `bytes` (checked above) and writes n floats into `out`.
    unsafe {
        let traits = llama_cpp_sys_2::ggml_get_type_traits(type_id as llama_cpp_sys_2::ggml_type);
        let to_float = traits.as_ref()?.to_float?;
        let mut out = vec![0f32; n];
        to_float(bytes.as_ptr().cast(), out.as_mut_ptr(), n as i64);
        Some(out)
    }
}

/// Types [`quantize_rows`] handles: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K..Q6_K.
const QUANTIZABLE: [u32; 10] = [2, 3, 6, 7, 8, 10, 11, 12, 13, 14];

/// Whether [`quantize_rows`] can produce type `type_id`.
pub fn can_quantize(type_id: u32) -> bool {
    QUANTIZABLE.contains(&type_id)
}

/// Quantizes `data` (rows of `n_per_row` floats) to type `type_id` with ggml's own
/// quantizer. `None` when the type cannot be quantized this way (no quantizer, an
/// importance matrix required, or rows that are not whole blocks).
pub fn quantize_rows(type_id: u32, data: &[f32], n_per_row: usize) -> Option<Vec<u8>> {
    let (blck, size) = ggml_type_layout(type_id);
    if blck == 0 || n_per_row == 0 || n_per_row as u64 % blck != 0 || data.len() % n_per_row != 0 {
        return None;
    }
    let t = type_id as llama_cpp_sys_2::ggml_type;
    // SAFETY: type ids below GGML_TYPE_COUNT index static tables; ggml_quantize_chunk
    // reads nrows * n_per_row floats and writes nrows rows of n_per_row / blck blocks
    // into `out`, sized for exactly that.
    unsafe {
        // ggml_quantize_chunk aborts on a type outside its list: only the legacy and
        // K-quant types (which need no importance matrix) are passed to it.
        if !QUANTIZABLE.contains(&type_id) || llama_cpp_sys_2::ggml_quantize_requires_imatrix(t) {
            return None;
        }
        let nrows = data.len() / n_per_row;
        let mut out = vec![0u8; nrows * (n_per_row / blck as usize) * size as usize];
        llama_cpp_sys_2::ggml_quantize_init(t);
        let written = llama_cpp_sys_2::ggml_quantize_chunk(t, data.as_ptr(), out.as_mut_ptr().cast(), 0, nrows as i64, n_per_row as i64, std::ptr::null());
        (written == out.len()).then_some(out)
    }
}
