//! What a GGUF file says about its model, read without running it.
//!
//! First stage of the data flow: every later stage (profile, select, compute, eval)
//! starts from a [`ModelInfo`]: the architecture, the FFN width of every layer, its
//! activation, and how the weight bytes split between FFN and the rest. The FFN
//! bytes are those of `ffn_gate`, `ffn_up` and `ffn_down` (weights and biases): the
//! tensors selective loading can shrink.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::gguf::{GgmlType, GgufError, GgufFile, TensorInfo};

/// The gated FFN activation of an architecture: what `ffn_<act>-<layer>` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FfnActivation {
    /// silu(gate) * up, node `ffn_swiglu`.
    Swiglu,
    /// gelu(gate) * up, node `ffn_geglu`.
    Geglu,
}

impl FfnActivation {
    /// The architectures whose FFN selectinfer knows, and their activation.
    pub fn of_architecture(arch: &str) -> Option<FfnActivation> {
        match arch {
            "llama" | "qwen2" | "qwen3" | "mistral" => Some(FfnActivation::Swiglu),
            "gemma" | "gemma2" | "gemma3" => Some(FfnActivation::Geglu),
            _ => None,
        }
    }

    /// The activation's formula.
    pub fn label(self) -> &'static str {
        match self {
            FfnActivation::Swiglu => "SwiGLU: silu(gate) * up",
            FfnActivation::Geglu => "GeGLU: gelu(gate) * up",
        }
    }

    /// Name of the graph node that holds the activation entering `ffn_down`, as
    /// llama.cpp's graph callback sees it (without the `-<layer>` suffix).
    pub fn node_name(self) -> &'static str {
        match self {
            FfnActivation::Swiglu => "ffn_swiglu",
            FfnActivation::Geglu => "ffn_geglu",
        }
    }
}

/// Count and bytes of the tensors of one type.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TypeBytes {
    /// ggml type name.
    #[serde(rename = "type")]
    pub ty: String,
    /// Number of tensors.
    pub count: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Facts about a model file; `selectinfer inspect --json` prints this.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    /// `general.name`, if set.
    pub name: Option<String>,
    /// `general.architecture`.
    pub architecture: String,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Hidden size.
    pub n_embd: u64,
    /// FFN width of each layer.
    pub n_ff: Vec<u64>,
    /// Gated FFN activation, when the architecture is one selectinfer supports.
    pub ffn_activation: Option<FfnActivation>,
    /// Vocabulary size (`tokenizer.ggml.tokens`).
    pub n_vocab: Option<u64>,
    /// Tensor count and bytes by type, largest first.
    pub tensor_types: Vec<TypeBytes>,
    /// Types of the FFN weight matrices (gate, up, down), e.g. `["Q4_K", "Q6_K"]`.
    pub ffn_types: Vec<String>,
    /// Bytes of ffn_gate/ffn_up/ffn_down weights and biases.
    pub ffn_bytes: u64,
    /// Bytes of every other tensor.
    pub non_ffn_bytes: u64,
    /// Bytes of all tensor data.
    pub total_bytes: u64,
    /// Size of the file (header and padding included).
    pub file_size: u64,
}

/// Errors from reading model facts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The file is not a readable GGUF.
    #[error(transparent)]
    Gguf(#[from] GgufError),
    /// A required metadata key is missing or has the wrong type.
    #[error("{path}: metadata key {key} is missing or not {expected}")]
    MissingKey {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// What it should have been.
        expected: &'static str,
    },
    /// `feed_forward_length` has neither one value nor one per layer.
    #[error("{path}: {key} has {found} entries for {n_layer} layers")]
    FfnLength {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// Entries found.
        found: usize,
        /// Layers.
        n_layer: usize,
    },
}

/// The bool key (read by llama.cpp through patch 0006) of a file whose `ffn_down`
/// tensors are neuron-major: `[n_embd, n_ff]`, one row per neuron.
pub const NEURON_MAJOR_KEY: &str = "selectinfer.ffn_down_neuron_major";

/// Whether `g` stores `ffn_down` neuron-major ([`NEURON_MAJOR_KEY`]).
pub fn ffn_down_neuron_major(g: &GgufFile) -> bool {
    matches!(g.get(NEURON_MAJOR_KEY), Some(crate::gguf::Value::Bool(true)))
}

pub use crate::gguf::split_block_name;

/// True for the tensors selective loading slices: `blk.N.ffn_{gate,up,down}.{weight,bias}`.
pub fn is_ffn_tensor(name: &str) -> bool {
    split_block_name(name).is_some_and(|(_, rest)| {
        let base = rest.strip_suffix(".weight").or_else(|| rest.strip_suffix(".bias"));
        matches!(base, Some("ffn_gate" | "ffn_up" | "ffn_down"))
    })
}

impl ModelInfo {
    /// Reads a model file's header.
    pub fn read(path: impl AsRef<Path>) -> Result<ModelInfo, ModelError> {
        ModelInfo::from_gguf(&GgufFile::read(path)?)
    }

    /// Model facts from an already-read header.
    pub fn from_gguf(g: &GgufFile) -> Result<ModelInfo, ModelError> {
        let path = g.path.display().to_string();
        let missing = |key: &str, expected| ModelError::MissingKey { path: path.clone(), key: key.to_string(), expected };
        let architecture = g.architecture().ok_or_else(|| missing("general.architecture", "a string"))?.to_string();
        let key = |k: &str| format!("{architecture}.{k}");
        let n_layer = g.get_u64(&key("block_count")).ok_or_else(|| missing(&key("block_count"), "an integer"))?;
        if n_layer == 0 || n_layer > crate::gguf::validate::MAX_LAYERS {
            let what = format!("{} is {n_layer}; llama.cpp supports 1 to {} layers", key("block_count"), crate::gguf::validate::MAX_LAYERS);
            return Err(GgufError::Malformed { path: g.path.clone(), what }.into());
        }
        let n_layer = n_layer as usize;
        let n_embd = g.get_u64(&key("embedding_length")).ok_or_else(|| missing(&key("embedding_length"), "an integer"))?;
        let ff_key = key("feed_forward_length");
        let ff = g.get(&ff_key).and_then(|v| v.as_u64_list()).ok_or_else(|| missing(&ff_key, "an integer or integer array"))?;
        let n_ff = match ff.len() {
            1 => vec![ff[0]; n_layer],
            n if n == n_layer => ff,
            found => return Err(ModelError::FfnLength { path, key: ff_key, found, n_layer }),
        };

        let mut by_type: BTreeMap<GgmlType, (usize, u64)> = BTreeMap::new();
        let (mut ffn_bytes, mut non_ffn_bytes) = (0, 0);
        let mut ffn_types = Vec::new();
        for t in &g.tensors {
            let bytes = tensor_bytes(t);
            let e = by_type.entry(t.ty).or_default();
            e.0 += 1;
            e.1 += bytes;
            if is_ffn_tensor(&t.name) {
                ffn_bytes += bytes;
                if t.name.ends_with(".weight") && !ffn_types.contains(&t.ty.name()) {
                    ffn_types.push(t.ty.name());
                }
            } else {
                non_ffn_bytes += bytes;
            }
        }
        let mut tensor_types: Vec<TypeBytes> =
            by_type.into_iter().map(|(ty, (count, bytes))| TypeBytes { ty: ty.name(), count, bytes }).collect();
        tensor_types.sort_by(|a, b| b.bytes.cmp(&a.bytes));

        Ok(ModelInfo {
            name: g.get_str("general.name").map(str::to_string),
            ffn_activation: FfnActivation::of_architecture(&architecture),
            architecture,
            n_layer,
            n_embd,
            n_ff,
            n_vocab: g.get("tokenizer.ggml.tokens").and_then(|v| v.as_array()).map(|a| a.len() as u64),
            tensor_types,
            ffn_types,
            ffn_bytes,
            non_ffn_bytes,
            total_bytes: ffn_bytes + non_ffn_bytes,
            file_size: g.file_size,
        })
    }

    /// The activation, or an error naming the architecture when selectinfer cannot
    /// profile or slice it.
    pub fn require_gated_ffn(&self) -> Result<FfnActivation, String> {
        self.ffn_activation.ok_or_else(|| {
            format!(
                "architecture {} is not supported: selectinfer needs a gated FFN (supported: llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3)",
                self.architecture
            )
        })
    }
}

fn tensor_bytes(t: &TensorInfo) -> u64 {
    // GgufFile::read has already refused tensors it cannot size.
    t.n_bytes().unwrap_or(0)
}

/// Bytes of the F16 KV cache for `n_ctx` tokens.
pub fn kv_cache_bytes(g: &GgufFile, info: &ModelInfo, n_ctx: u64) -> u64 {
    let arch = &info.architecture;
    let n_head = g.get_u64(&format!("{arch}.attention.head_count")).unwrap_or(1).max(1);
    let n_head_kv = g.get_u64(&format!("{arch}.attention.head_count_kv")).unwrap_or(n_head);
    let head_k = g.get_u64(&format!("{arch}.attention.key_length")).unwrap_or(info.n_embd / n_head);
    let head_v = g.get_u64(&format!("{arch}.attention.value_length")).unwrap_or(info.n_embd / n_head);
    info.n_layer as u64 * n_ctx * n_head_kv * (head_k + head_v) * 2
}
