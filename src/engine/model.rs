//! A loaded model.

use std::ffi::CString;
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;

use super::backend::{backend, take_recent_errors, EngineError};
use super::host::{names_same_file, HostFfn};
use super::inplace::FfnOrder;
use super::Token;
use crate::gguf::GgufFile;

/// How to bring the weights into memory.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Memory-map the file (llama.cpp's default) instead of reading it into
    /// anonymous memory.
    pub mmap: bool,
    /// Layers to offload to the GPU (CUDA builds only; 0 on CPU builds).
    pub gpu_layers: u32,
    /// Let llama.cpp repack weights for its CPU kernels (its default). Off, as
    /// llama.cpp's `--no-repack` (patch 0012), every CPU weight stays in the plain
    /// CPU buffer, file-backed where the file is mapped: slower kernels, but pages a
    /// memory cap can evict and fault in again from disk.
    pub repack: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { mmap: true, gpu_layers: if cfg!(feature = "cuda") { 999 } else { 0 }, repack: true }
    }
}

/// A model loaded by llama.cpp, with its header as read by [`GgufFile`].
pub struct Model {
    pub(crate) inner: LlamaModel,
    path: PathBuf,
    gguf: GgufFile,
    /// Where llama.cpp holds the FFN weights, found at load, and the file held open.
    host: HostFfn,
    /// Neuron order of the FFN weights (in-place selective computation), shared by
    /// every session of the model, with a counter of changes.
    order: std::sync::Mutex<(FfnOrder, u64)>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("path", &self.path).finish()
    }
}

impl Model {
    /// Loads `path`. The header is validated in Rust first, so a missing, foreign or
    /// truncated file is a clear error rather than an abort inside llama.cpp.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<Model, EngineError> {
        // Held open for the model's lifetime: every later read of the file (a
        // copy-on-write remap, weights put back) goes through this handle.
        let file = std::fs::File::open(path).map_err(|e| EngineError::Load { path: path.display().to_string(), log: format!(": {e}") })?;
        let gguf = GgufFile::read(path)?;
        let backend = backend()?;
        let mut params = std::pin::pin!(LlamaModelParams::default().with_use_mmap(opts.mmap).with_n_gpu_layers(opts.gpu_layers).with_use_extra_bufts(opts.repack));
        // Held until the model is loaded: llama.cpp reads the pattern while loading.
        let keep_plain = (opts.gpu_layers == 0 && crate::model::ffn_down_neuron_major(&gguf)).then(|| file_layout_pattern(&gguf));
        if let Some(pattern) = &keep_plain {
            // A neuron-major ffn_down is multiplied by out_prod, which llama.cpp's
            // repacked kernels do not run: keep it in file layout (the plain CPU
            // buffer, memory-mapped; patch 0011). Gate and up stay wherever llama.cpp
            // puts them where their rows can be swapped in a repacked layout
            // (engine::interleave), and in file layout otherwise.
            params.as_mut().add_cpu_buft_override(pattern);
        }
        let _ = take_recent_errors();
        let inner = LlamaModel::load_from_file(backend, path, &params)
            .map_err(|_| EngineError::Load { path: path.display().to_string(), log: take_recent_errors() })?;
        if !names_same_file(path, &file) {
            return Err(EngineError::Load { path: path.display().to_string(), log: ": the file was replaced or removed while it loaded".into() });
        }
        let host = HostFfn::detect(raw_model(&inner), &gguf, file);
        let model = Model { inner, path: path.to_path_buf(), gguf, host, order: Default::default() };
        if opts.mmap {
            // Repacked (and device) weights were copied out of the mapping: drop
            // their mapped file pages, which would otherwise stay resident.
            super::pages::release_unused_file_pages(model.raw(), &model.gguf, &model.path);
        }
        Ok(model)
    }
}

/// The buffer-type override pattern of a neuron-major model's weights that must
/// stay in file layout: every `ffn_down`, and the gate / up weights of a type whose
/// repacked rows selectinfer cannot swap (llama.cpp would repack Q8_0 on ARM, Q2_K on
/// AVX-512, ...).
fn file_layout_pattern(gguf: &GgufFile) -> CString {
    let mut alternatives = vec![r"blk\.[0-9]+\.ffn_down\.weight".to_string()];
    for t in &gguf.tensors {
        let gate_up = t.name.starts_with("blk.") && (t.name.ends_with(".ffn_gate.weight") || t.name.ends_with(".ffn_up.weight"));
        if gate_up && !super::interleave::swappable(t.ty) {
            alternatives.push(t.name.chars().flat_map(|c| (r"\^$.|?*+()[]{}".contains(c)).then_some('\\').into_iter().chain([c])).collect());
        }
    }
    CString::new(format!("^({})$", alternatives.join("|"))).expect("tensor names hold no NUL")
}

impl Model {
    /// The model file mapped read-only (to gather weights that llama.cpp holds
    /// repacked or on a device).
    pub fn map_file(&self) -> std::io::Result<memmap2::Mmap> {
        // SAFETY: the model file is not modified while mapped (selectinfer writes
        // new files through temporary names and renames, and never writes a model
        // it has loaded: in-place reordering remaps pages copy-on-write). Mapped from
        // the handle opened at load: the file llama.cpp loaded, even if its name
        // has been given to another since.
        unsafe { memmap2::Mmap::map(self.host.file()) }
    }

    /// The bytes of tensor `name` in the file this model was loaded from (through
    /// the handle opened at load: the same file even if its name has been given to
    /// another since).
    pub fn read_file_tensor(&self, name: &str) -> std::io::Result<Vec<u8>> {
        let t = self.gguf.tensor(name).ok_or_else(|| std::io::Error::other(format!("{} has no {name}", self.path.display())))?;
        let len = t.n_bytes().ok_or_else(|| std::io::Error::other(format!("{name}: size overflows")))?;
        self.host.read(self.gguf.data_offset + t.offset, len as usize)
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's header.
    pub fn gguf(&self) -> &GgufFile {
        &self.gguf
    }

    /// Whether layer `l`'s FFN can be reordered in place (weights in host memory in
    /// file layout, `ffn_down` of an element type); the reason if not.
    pub fn ffn_in_place(&self, l: usize) -> Result<(), String> {
        self.host.layer(l).map(|_| ()).map_err(|e| e.0)
    }

    /// The number of neurons layer `l`'s in-place prefix must be a multiple of: 8
    /// where llama.cpp repacked its gate or up for its CPU kernels (they multiply
    /// whole groups of 8 interleaved rows), else 1.
    pub fn ffn_row_group(&self, l: usize) -> usize {
        self.host.layer(l).map_or(1, |t| t.row_group())
    }

    /// Puts every FFN back in file order and every shifted `ffn_down` bias back to
    /// the file's values (a no-op when nothing was changed).
    pub fn restore_ffn_order(&self) -> Result<(), EngineError> {
        let mut o = self.order.lock().unwrap_or_else(|e| e.into_inner());
        if o.0.is_permuted() {
            o.0.restore(&self.host).map_err(|e| EngineError::Decode(e.0))?;
            o.1 += 1;
        }
        Ok(())
    }

    /// Reorders layer `l`'s FFN, which must be in file order, so that its first
    /// `set.len()` neurons are the file positions `set` (ascending). Returns the
    /// number of neuron swaps.
    pub fn place_ffn_prefix(&self, l: usize, set: &[u32]) -> Result<usize, EngineError> {
        let mut o = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let n = o.0.place_prefix(&self.host, l, set).map_err(|e| EngineError::Decode(e.0))?;
        o.1 += 1;
        Ok(n)
    }

    /// Whether layer `l` has an `ffn_down` bias of `n` F32 values in host memory
    /// that [`Model::shift_ffn_down_bias`] can change; the reason if not.
    pub fn ffn_down_bias_in_host(&self, l: usize, n: usize) -> Result<(), String> {
        self.host.bias(l, n).map(|_| ()).map_err(|e| e.0)
    }

    /// Adds `delta` to layer `l`'s `ffn_down` bias until the next
    /// [`Model::restore_ffn_order`] (the file is never written: its pages are
    /// remapped copy-on-write first). The bias must be the file's.
    pub fn shift_ffn_down_bias(&self, l: usize, delta: &[f32]) -> Result<(), EngineError> {
        let mut o = self.order.lock().unwrap_or_else(|e| e.into_inner());
        o.0.shift_down_bias(&self.host, l, delta).map_err(|e| EngineError::Decode(e.0))?;
        o.1 += 1;
        Ok(())
    }

    /// Adds `delta` (`n_embd` rows of `k`) to the first `k` columns of layer `l`'s
    /// `ffn_down` (F32 or F16, in host memory) until the next
    /// [`Model::restore_ffn_order`]; the file is never written.
    pub fn shift_ffn_down_prefix(&self, l: usize, k: usize, delta: &[f32]) -> Result<(), EngineError> {
        let mut o = self.order.lock().unwrap_or_else(|e| e.into_inner());
        o.0.shift_down_prefix(&self.host, &self.gguf, l, k, delta).map_err(|e| EngineError::Decode(e.0))?;
        o.1 += 1;
        Ok(())
    }

    fn raw(&self) -> *const llama_cpp_sys_2::llama_model {
        raw_model(&self.inner)
    }

    /// Counts changes of the FFN order; views set on a session are valid while it
    /// is unchanged.
    pub(crate) fn ffn_order_epoch(&self) -> u64 {
        self.order.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    /// The bytes llama.cpp holds for weight `name`, when they sit in host memory in
    /// the file's own layout (a memory-mapped or read-in CPU buffer). `None` for
    /// repacked CPU weights and device (GPU) buffers, whose bytes are not the GGUF
    /// layout or not addressable here.
    pub fn host_tensor_bytes(&self, name: &str) -> Option<&[u8]> {
        let info = self.gguf.tensor(name)?;
        let len = info.n_bytes()? as usize;
        let cname = std::ffi::CString::new(name).ok()?;
        // SAFETY: the model outlives the returned slice (borrowed from &self); the
        // tensor's data stays put for the model's lifetime and is only read here.
        unsafe {
            let t = llama_cpp_sys_2::llama_model_get_tensor_by_name(self.inner.as_raw_ptr(), cname.as_ptr());
            let t = t.as_ref()?;
            if t.buffer.is_null() || t.data.is_null() || !llama_cpp_sys_2::ggml_backend_buffer_is_host(t.buffer) {
                return None;
            }
            if t.type_ as u32 != info.ty.0 || llama_cpp_sys_2::ggml_nbytes(t) != len {
                return None;
            }
            Some(std::slice::from_raw_parts(t.data as *const u8, len))
        }
    }

    /// Vocabulary size.
    pub fn n_vocab(&self) -> usize {
        self.inner.n_vocab() as usize
    }

    /// Context length the model was trained with.
    pub fn n_ctx_train(&self) -> u32 {
        self.inner.n_ctx_train()
    }

    /// Tokenises `text`. `add_special` adds BOS (or whatever the vocabulary puts
    /// around a sequence) at the start of a sequence; `parse_special` turns
    /// control-token text such as `<|im_start|>` into those tokens (chat templates).
    pub fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<Token> {
        self.inner.vocab().tokenize(text.as_bytes(), add_special, parse_special).into_iter().map(|t| t.0).collect()
    }

    /// The bytes a token stands for (control tokens render as nothing).
    pub fn token_bytes(&self, token: Token) -> Vec<u8> {
        self.inner.vocab().token_to_piece(LlamaToken(token), false, None::<NonZeroU16>)
    }

    /// Whether `token` ends generation (EOS, end of turn).
    pub fn is_end_of_generation(&self, token: Token) -> bool {
        self.inner.vocab().is_eog(LlamaToken(token))
    }

    /// Renders a conversation with the model's own chat template, ending with the
    /// assistant's opening so that generation continues as the assistant. A model
    /// without a template (the Gemma-3-270M GGUF carries none) gets llama.cpp's
    /// built-in template for its family, if there is one.
    pub fn apply_chat_template(&self, messages: &[(&str, &str)]) -> Result<String, EngineError> {
        let tmpl = match self.inner.chat_template(None) {
            Ok(t) => t,
            Err(_) => {
                let arch = self.gguf.architecture().unwrap_or_default();
                let builtin = builtin_template(arch).ok_or_else(|| {
                    EngineError::ChatTemplate(format!("{} has no chat template and {arch} has no built-in one", self.path.display()))
                })?;
                LlamaChatTemplate::new(builtin).map_err(|e| EngineError::ChatTemplate(e.to_string()))?
            }
        };
        let chat = messages
            .iter()
            .map(|(role, content)| LlamaChatMessage::new(role.to_string(), content.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| EngineError::ChatTemplate(e.to_string()))?;
        self.inner.apply_chat_template(&tmpl, &chat, true).map_err(|e| EngineError::ChatTemplate(e.to_string()))
    }
}

/// The raw pointer of a loaded model.
fn raw_model(model: &LlamaModel) -> *const llama_cpp_sys_2::llama_model {
    // SAFETY: only reads the wrapper's pointer; the model outlives its uses here.
    unsafe { model.as_raw_ptr() }
}

/// llama.cpp's name for the built-in template of an architecture family, used when
/// a GGUF carries no `tokenizer.chat_template`.
fn builtin_template(arch: &str) -> Option<&'static str> {
    match arch {
        "gemma" | "gemma2" | "gemma3" => Some("gemma"),
        "qwen2" | "qwen3" => Some("chatml"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::file_layout_pattern;
    use crate::gguf::{GgmlType, GgufFile, TensorInfo};

    #[test]
    fn the_file_layout_pattern_names_every_down_and_the_gate_up_weights_whose_rows_cannot_be_swapped_repacked() {
        let t = |name: &str, ty| TensorInfo { name: name.into(), dims: vec![256, 8], ty, offset: 0 };
        let g = GgufFile {
            path: "m.gguf".into(),
            version: 3,
            metadata: Vec::new(),
            tensors: vec![
                t("blk.0.ffn_gate.weight", GgmlType::Q4_K),
                t("blk.0.ffn_up.weight", GgmlType::Q8_0),
                t("blk.1.ffn_gate.weight", GgmlType::Q2_K),
                t("blk.1.ffn_up.weight", GgmlType::IQ4_NL),
                t("blk.1.attn_q.weight", GgmlType::Q8_0),
            ],
            alignment: 32,
            data_offset: 0,
            file_size: 0,
        };
        assert_eq!(
            file_layout_pattern(&g).to_str().unwrap(),
            r"^(blk\.[0-9]+\.ffn_down\.weight|blk\.0\.ffn_up\.weight|blk\.1\.ffn_gate\.weight)$"
        );
    }
}
