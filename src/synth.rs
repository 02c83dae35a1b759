//! Random-weight GGUF models with real architectures.
//!
//! Tests need models that llama.cpp loads and runs without any download; speed and
//! memory benchmarks need real models' shapes. Both come from here: a
//! [`SynthSpec`] names an architecture and its dimensions, and [`write_model`]
//! writes a GGUF with seeded random weights and a small SentencePiece-style
//! vocabulary (control tokens, the 256 byte tokens, a few words), so that text can
//! be tokenised and generated. Outputs are meaningless text: never quote task
//! scores from these models.

use std::path::Path;

use crate::util::floats::encode_floats;
use crate::util::rng::SplitMix64;
use crate::gguf::{GgmlType, GgufError, GgufWriter, TensorSpec, Value};

/// Architectures [`write_model`] can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SynthArch {
    /// llama: SwiGLU FFN, RMS norm, grouped-query attention.
    Llama,
    /// gemma3: GeGLU FFN, pre- and post-norms, q/k norms.
    Gemma3,
    /// qwen2: SwiGLU FFN, llama-like layout (attention biases optional, omitted).
    Qwen2,
}

/// Real models' dimensions, for speed and memory benchmarks with random weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// Llama-3.2-1B: 16 layers, n_embd 2048, n_ff 8192, 32/8 heads, vocab 128256, tied output.
    #[value(name = "llama-3.2-1b")]
    Llama32_1b,
    /// Llama-3.2-3B (the paper's model): 28 layers, n_embd 3072, n_ff 8192, 24/8 heads, vocab 128256, tied output.
    #[value(name = "llama-3.2-3b")]
    Llama32_3b,
    /// Qwen2.5-3B: 36 layers, n_embd 2048, n_ff 11008, 16/2 heads, vocab 151936, tied output.
    #[value(name = "qwen2.5-3b")]
    Qwen25_3b,
}

impl Shape {
    /// The spec of this shape with weights stored as `matrix_type`.
    pub fn spec(self, matrix_type: GgmlType, seed: u64) -> SynthSpec {
        let (arch, n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab) = match self {
            Shape::Llama32_1b => (SynthArch::Llama, 16, 2048, 8192, 32, 8, 64, 128_256),
            Shape::Llama32_3b => (SynthArch::Llama, 28, 3072, 8192, 24, 8, 128, 128_256),
            Shape::Qwen25_3b => (SynthArch::Qwen2, 36, 2048, 11008, 16, 2, 128, 151_936),
        };
        SynthSpec {
            arch,
            n_layer,
            n_embd,
            n_ff: vec![n_ff],
            n_head,
            n_head_kv,
            head_dim,
            n_words: n_vocab - N_CONTROL - 256,
            matrix_type,
            seed,
            tied_output: true,
        }
    }
}

/// Dimensions and storage of a synthetic model.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSpec {
    /// Architecture.
    pub arch: SynthArch,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Hidden size.
    pub n_embd: u64,
    /// FFN width of each layer (one entry: all layers).
    pub n_ff: Vec<u64>,
    /// Attention heads.
    pub n_head: u64,
    /// Key/value heads.
    pub n_head_kv: u64,
    /// Head size (gemma3 sets it explicitly; llama uses n_embd / n_head).
    pub head_dim: u64,
    /// Extra word tokens beyond the 3 control and 256 byte tokens.
    pub n_words: usize,
    /// Type of the 2-D weight matrices (F32, F16 or BF16); norms are always F32.
    pub matrix_type: GgmlType,
    /// Seed of the weights.
    pub seed: u64,
    /// Use the token embedding as the output head (no `output.weight`).
    pub tied_output: bool,
}

impl SynthSpec {
    /// A tiny model (2 layers, n_embd 64, n_ff 192) for unit tests.
    pub fn tiny(arch: SynthArch) -> SynthSpec {
        SynthSpec {
            arch,
            n_layer: 2,
            n_embd: 64,
            n_ff: vec![192],
            n_head: 4,
            n_head_kv: 2,
            head_dim: 16,
            n_words: 40,
            matrix_type: GgmlType::F32,
            seed: 1,
            tied_output: false,
        }
    }

    fn ff(&self, layer: usize) -> u64 {
        if self.n_ff.len() == 1 {
            self.n_ff[0]
        } else {
            self.n_ff[layer]
        }
    }
}

/// Control tokens: `<unk>` 0, `<s>` 1, `</s>` 2; then bytes `<0x00>`.. at 3..259.
const N_CONTROL: usize = 3;
const WORDS: &[&str] = &[
    "the", "a", "of", "and", "to", "in", "is", "it", "that", "was", "for", "on", "are", "with", "as", "at", "be", "this",
    "have", "from", "or", "one", "had", "by", "word", "but", "not", "what", "all", "were", "we", "when", "your", "can",
    "said", "there", "use", "an", "each", "which", "she", "do", "how", "their", "if", "will", "up", "other", "about",
    "out", "many", "then", "them", "these", "so", "some", "her", "would", "make", "like",
];

/// The vocabulary as (text, score, token type) triples.
fn vocabulary(n_words: usize) -> Vec<(String, f32, i32)> {
    // llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte.
    let mut v = vec![("<unk>".to_string(), 0.0, 2), ("<s>".to_string(), 0.0, 3), ("</s>".to_string(), 0.0, 3)];
    for b in 0..=255u8 {
        v.push((format!("<0x{b:02X}>"), 0.0, 6));
    }
    for (i, w) in WORDS.iter().cycle().take(n_words).enumerate() {
        // Repeats (when n_words exceeds the list) get a suffix to stay unique.
        let text = if i < WORDS.len() { format!("\u{2581}{w}") } else { format!("\u{2581}{w}{}", i / WORDS.len()) };
        v.push((text, -(i as f32) - 1.0, 1));
    }
    v
}

/// The `general.description` every synthetic model carries (kept by slicing and
/// quantizing, which copy metadata).
pub const SYNTHETIC_DESCRIPTION: &str = "selectinfer synthetic model: random weights, for tests and speed/memory benchmarks only";

/// Whether a file was written by [`write_model`] (or derived from one).
pub fn is_synthetic(g: &crate::gguf::GgufFile) -> bool {
    g.get_str("general.description") == Some(SYNTHETIC_DESCRIPTION)
}

struct Planned {
    spec: TensorSpec,
    /// 0 for norms (filled with 1.0), else the uniform range of the weights.
    scale: f32,
}

fn plan(spec: &SynthSpec, n_vocab: u64) -> Vec<Planned> {
    let e = spec.n_embd;
    let hd = spec.head_dim;
    let (q_out, kv_out) = (hd * spec.n_head, hd * spec.n_head_kv);
    let mat = spec.matrix_type;
    let norm = |name: String, n: u64| Planned { spec: TensorSpec { name, dims: vec![n], ty: GgmlType::F32 }, scale: 0.0 };
    let matrix = |name: String, cols: u64, rows: u64| Planned {
        spec: TensorSpec { name, dims: vec![cols, rows], ty: mat },
        scale: 1.0 / (cols as f32).sqrt(),
    };
    let mut t = vec![matrix("token_embd.weight".into(), e, n_vocab)];
    // Embeddings get a larger range so that the first norm sees varied input.
    t[0].scale = 1.0;
    for l in 0..spec.n_layer {
        let b = |s: &str| format!("blk.{l}.{s}.weight");
        t.push(norm(b("attn_norm"), e));
        t.push(matrix(b("attn_q"), e, q_out));
        t.push(matrix(b("attn_k"), e, kv_out));
        t.push(matrix(b("attn_v"), e, kv_out));
        t.push(matrix(b("attn_output"), q_out, e));
        if spec.arch == SynthArch::Gemma3 {
            t.push(norm(b("attn_q_norm"), hd));
            t.push(norm(b("attn_k_norm"), hd));
            t.push(norm(b("post_attention_norm"), e));
        }
        t.push(norm(b("ffn_norm"), e));
        let ff = spec.ff(l);
        t.push(matrix(b("ffn_gate"), e, ff));
        t.push(matrix(b("ffn_up"), e, ff));
        t.push(matrix(b("ffn_down"), ff, e));
        if spec.arch == SynthArch::Gemma3 {
            t.push(norm(b("post_ffw_norm"), e));
        }
    }
    t.push(norm("output_norm.weight".into(), e));
    if spec.arch != SynthArch::Gemma3 && !spec.tied_output {
        t.push(matrix("output.weight".into(), e, n_vocab));
    }
    t
}

fn metadata(spec: &SynthSpec, vocab: &[(String, f32, i32)]) -> Vec<(String, Value)> {
    let arch = match spec.arch {
        SynthArch::Llama => "llama",
        SynthArch::Gemma3 => "gemma3",
        SynthArch::Qwen2 => "qwen2",
    };
    let k = |s: &str| format!("{arch}.{s}");
    let ff = if spec.n_ff.len() == 1 {
        Value::U32(spec.n_ff[0] as u32)
    } else {
        Value::u32s(spec.n_ff.iter().map(|&n| n as u32))
    };
    let mut m = vec![
        ("general.architecture".to_string(), Value::String(arch.into())),
        ("general.name".into(), Value::String(format!("synthetic-{arch}-random"))),
        ("general.description".into(), Value::String(SYNTHETIC_DESCRIPTION.into())),
        (k("block_count"), Value::U32(spec.n_layer as u32)),
        (k("context_length"), Value::U32(4096)),
        (k("embedding_length"), Value::U32(spec.n_embd as u32)),
        (k("feed_forward_length"), ff),
        (k("attention.head_count"), Value::U32(spec.n_head as u32)),
        (k("attention.head_count_kv"), Value::U32(spec.n_head_kv as u32)),
        (k("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        (k("rope.freq_base"), Value::F32(10000.0)),
    ];
    match spec.arch {
        SynthArch::Llama => m.push((k("rope.dimension_count"), Value::U32(spec.head_dim as u32))),
        SynthArch::Qwen2 => {}
        SynthArch::Gemma3 => {
            m.push((k("attention.key_length"), Value::U32(spec.head_dim as u32)));
            m.push((k("attention.value_length"), Value::U32(spec.head_dim as u32)));
            m.push((k("attention.sliding_window"), Value::U32(16)));
        }
    }
    m.extend([
        ("tokenizer.ggml.model".to_string(), Value::String("llama".into())),
        ("tokenizer.ggml.tokens".into(), Value::strings(vocab.iter().map(|v| v.0.clone()))),
        ("tokenizer.ggml.scores".into(), Value::f32s(vocab.iter().map(|v| v.1))),
        ("tokenizer.ggml.token_type".into(), Value::i32s(vocab.iter().map(|v| v.2))),
        ("tokenizer.ggml.unknown_token_id".into(), Value::U32(0)),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(1)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(2)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(true)),
    ]);
    m
}

/// Writes the model to `path` (atomically). Matrices are uniform in
/// ±1/sqrt(fan-in), embeddings in ±1, norms are 1.
pub fn write_model(spec: &SynthSpec, path: &Path) -> Result<(), GgufError> {
    let vocab = vocabulary(spec.n_words);
    let n_vocab = vocab.len() as u64;
    debug_assert!(vocab.len() > N_CONTROL + 256);
    let tensors = plan(spec, n_vocab);
    let mut w = GgufWriter::create(path, &metadata(spec, &vocab), tensors.iter().map(|p| p.spec.clone()).collect())?;
    let mut rng = SplitMix64::new(spec.seed);
    for p in &tensors {
        let n: u64 = p.spec.dims.iter().product();
        let values: Vec<f32> =
            if p.scale == 0.0 { vec![1.0; n as usize] } else { (0..n).map(|_| rng.next_signed() * p.scale).collect() };
        let bytes = encode_floats(&values, p.spec.ty).ok_or_else(|| GgufError::Malformed {
            path: path.to_path_buf(),
            what: format!("synthetic models store F32, F16 or BF16, not {}", p.spec.ty),
        })?;
        w.write_tensor(&bytes)?;
    }
    w.finish()
}
