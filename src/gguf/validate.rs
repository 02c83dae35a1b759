//! What a GGUF file must satisfy before llama.cpp sees it.
//!
//! llama.cpp returns an error for most malformed files, but aborts the process
//! (`GGML_ASSERT`, SIGABRT) on some that parse: a block count of 0 or beyond
//! `LLAMA_MAX_LAYERS`, dimensions whose byte count wraps around, a layer whose
//! tensors are missing. These checks run when a file is read ([`super::GgufFile::read`]
//! and [`crate::model::ModelInfo::from_gguf`]), so every command refuses such a file
//! with a message naming the key or tensor, before any llama.cpp call.

use super::{GgufFile, TensorInfo};
use super::split_block_name;

/// llama.cpp's `LLAMA_MAX_LAYERS` (src/llama-hparams.h): per-layer arrays have this size.
pub const MAX_LAYERS: u64 = 512;

/// The size in bytes of `t`, or why it cannot be sized: every dimension must be
/// at least 1 and below 2^63 (ggml stores them as int64), the element count must
/// fit in int64 (gguf.cpp's overflow check), and the byte count must not wrap.
pub fn tensor_size(t: &TensorInfo) -> Result<u64, String> {
    if let Some(d) = t.dims.iter().find(|&&d| d == 0 || d > i64::MAX as u64) {
        return Err(format!("tensor {} has dimension {d} (dims {:?})", t.name, t.dims));
    }
    let elements = t.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).filter(|&n| n <= i64::MAX as u64);
    if elements.is_none() {
        return Err(format!("tensor {}: dims {:?} overflow the element count", t.name, t.dims));
    }
    t.n_bytes().ok_or_else(|| match t.ty.layout() {
        None => format!("tensor {} has type {}, which this build cannot size", t.name, t.ty),
        Some(l) if t.dims[0] % l.block_elems != 0 => {
            format!("tensor {} ({}): a row of {} elements is not whole blocks of {}", t.name, t.ty, t.dims[0], l.block_elems)
        }
        Some(_) => format!("tensor {}: dims {:?} overflow the byte count", t.name, t.dims),
    })
}

/// The layer checks of [`check_layers`] for a model file: run when its header
/// has `general.architecture` and `<arch>.block_count` (any model llama.cpp
/// would load); other GGUF files pass.
pub fn check_model(g: &GgufFile) -> Result<(), String> {
    let Some(arch) = g.architecture() else { return Ok(()) };
    let key = |k: &str| format!("{arch}.{k}");
    let Some(count) = g.get(&key("block_count")) else { return Ok(()) };
    let n_layer = count.as_u64().ok_or_else(|| format!("{} is {count:?}, not a layer count", key("block_count")))?;
    if n_layer == 0 || n_layer > MAX_LAYERS {
        return Err(format!("{} is {n_layer}; llama.cpp supports 1 to {MAX_LAYERS} layers", key("block_count")));
    }
    let (Some(n_embd), Some(ff)) = (g.get_u64(&key("embedding_length")), g.get(&key("feed_forward_length")).and_then(|v| v.as_u64_list())) else {
        return Ok(());
    };
    let n_ff = match ff.len() {
        1 => vec![ff[0]; n_layer as usize],
        n if n as u64 == n_layer => ff,
        n => return Err(format!("{} has {n} entries for {n_layer} layers", key("feed_forward_length"))),
    };
    check_layers(&g.tensors, &key("block_count"), n_layer, n_embd, &n_ff)
}

/// Checks the block count against the tensors: `n_layer` in 1..=[`MAX_LAYERS`],
/// every `blk.N.*` tensor with N below it, and every layer with tensors. `n_ff`
/// (one width per layer) must, for the FFN tensors present,
/// match their shapes (`ffn_up`/`ffn_gate` `[n_embd, n_ff]`, `ffn_down` `[n_ff, n_embd]`).
pub fn check_layers(tensors: &[TensorInfo], key: &str, n_layer: u64, n_embd: u64, n_ff: &[u64]) -> Result<(), String> {
    if n_layer == 0 || n_layer > MAX_LAYERS {
        return Err(format!("{key} is {n_layer}; llama.cpp supports 1 to {MAX_LAYERS} layers"));
    }
    if n_embd == 0 || n_embd > i64::MAX as u64 {
        return Err(format!("embedding_length is {n_embd}"));
    }
    let mut has_tensors = vec![false; n_layer as usize];
    for t in tensors {
        let Some((l, rest)) = split_block_name(&t.name) else { continue };
        if l as u64 >= n_layer {
            return Err(format!("tensor {} belongs to layer {l}, but {key} is {n_layer}", t.name));
        }
        has_tensors[l] = true;
        // ffn_down is [n_ff, n_embd], or [n_embd, n_ff] when stored neuron-major.
        let want = match rest {
            "ffn_up.weight" | "ffn_gate.weight" => Some([n_embd, n_ff[l]]),
            "ffn_down.weight" if t.dims == [n_embd, n_ff[l]] => None,
            "ffn_down.weight" => Some([n_ff[l], n_embd]),
            _ => None,
        };
        if let Some(want) = want {
            if t.dims != want {
                return Err(format!("tensor {} has dims {:?}, but n_embd {n_embd} and n_ff {} of layer {l} make {want:?}", t.name, t.dims, n_ff[l]));
            }
        }
    }
    // (A file with no per-layer tensors at all is left to the architecture check.)
    if let Some(l) = has_tensors.iter().position(|&h| !h).filter(|_| has_tensors.contains(&true)) {
        return Err(format!("{key} is {n_layer}, but layer {l} has no tensors (blk.{l}.*)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgmlType;

    fn t(name: &str, dims: &[u64], ty: GgmlType) -> TensorInfo {
        TensorInfo { name: name.into(), dims: dims.to_vec(), ty, offset: 0 }
    }

    #[test]
    fn sizes_that_wrap_are_refused() {
        assert_eq!(tensor_size(&t("a", &[64, 2], GgmlType::F32)), Ok(512));
        assert!(tensor_size(&t("a", &[49152 + (1 << 57), 576], GgmlType::F16)).unwrap_err().contains("overflow"));
        assert!(tensor_size(&t("a", &[1 << 62, 1 << 2], GgmlType::F32)).unwrap_err().contains("overflow"));
        assert!(tensor_size(&t("a", &[0, 4], GgmlType::F32)).unwrap_err().contains("dimension 0"));
        assert!(tensor_size(&t("a", &[33, 4], GgmlType::Q4_0)).unwrap_err().contains("whole blocks"));
    }

    #[test]
    fn block_count_must_match_the_tensors() {
        let ts = vec![t("blk.0.ffn_up.weight", &[8, 16], GgmlType::F32), t("blk.1.attn_norm.weight", &[8], GgmlType::F32)];
        assert!(check_layers(&ts, "llama.block_count", 2, 8, &[16, 16]).is_ok());
        assert!(check_layers(&ts, "llama.block_count", 0, 8, &[]).unwrap_err().contains("is 0"));
        assert!(check_layers(&ts, "llama.block_count", 1000, 8, &[16; 1000]).unwrap_err().contains("1 to 512"));
        assert!(check_layers(&ts, "llama.block_count", 1, 8, &[16]).unwrap_err().contains("layer 1"));
        assert!(check_layers(&ts, "llama.block_count", 3, 8, &[16; 3]).unwrap_err().contains("layer 2 has no tensors"));
        assert!(check_layers(&ts, "llama.block_count", 2, 8, &[10, 16]).unwrap_err().contains("dims [8, 16]"));
    }
}
