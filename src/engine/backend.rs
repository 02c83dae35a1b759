//! Process-wide llama.cpp state: backend initialisation and its log.
//!
//! llama.cpp logs through one global callback. We keep its messages quiet unless
//! `--verbose` asks for them, but remember the last errors so that a failed load can
//! say why (llama.cpp returns only a null pointer).

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use llama_cpp_2::llama_backend::LlamaBackend;

/// Errors from the engine; each names what it was doing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// llama.cpp's backend could not be initialised.
    #[error("could not initialise llama.cpp: {0}")]
    Backend(String),
    /// llama.cpp refused to load a model.
    #[error("llama.cpp could not load {path}{log}")]
    Load {
        /// The file.
        path: String,
        /// llama.cpp's last error messages.
        log: String,
    },
    /// A context could not be created.
    #[error("llama.cpp could not create a context ({what}){log}")]
    Context {
        /// What was asked for.
        what: String,
        /// llama.cpp's last error messages.
        log: String,
    },
    /// Tokenisation or detokenisation failed.
    #[error("tokenizer: {0}")]
    Tokenize(String),
    /// A decode call failed.
    #[error("decode failed: {0}")]
    Decode(String),
    /// The prompt does not fit the context.
    #[error("{needed} tokens do not fit a context of {n_ctx}")]
    ContextFull {
        /// Tokens in the context after this step.
        needed: usize,
        /// Context size.
        n_ctx: usize,
    },
    /// The chat template could not be applied.
    #[error("chat template: {0}")]
    ChatTemplate(String),
    /// llama.cpp's quantizer failed.
    #[error("llama.cpp could not convert {input} to {output}{log}")]
    Quantize {
        /// Source file.
        input: String,
        /// Target file.
        output: String,
        /// llama.cpp's last error messages.
        log: String,
    },
    /// The model file failed validation before reaching llama.cpp.
    #[error(transparent)]
    Gguf(#[from] crate::gguf::GgufError),
    /// An I/O error around an engine call.
    #[error("cannot write {path}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

static VERBOSE: AtomicBool = AtomicBool::new(false);
static RECENT_ERRORS: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
const KEPT_ERRORS: usize = 8;

/// Sends llama.cpp's log to stderr (`true`) or keeps it quiet (`false`, the default).
pub fn set_verbose(verbose: bool) {
    VERBOSE.store(verbose, Ordering::Relaxed);
}

/// The initialised backend; the first call installs the log callback.
pub(crate) fn backend() -> Result<&'static LlamaBackend, EngineError> {
    BACKEND
        .get_or_init(|| {
            // SAFETY: the callback is a plain function with no user data.
            unsafe { llama_cpp_sys_2::llama_log_set(Some(log_callback), std::ptr::null_mut()) };
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| EngineError::Backend(e.clone()))
}

/// Drains the remembered llama.cpp errors as `": msg; msg"` (empty when none).
pub(crate) fn take_recent_errors() -> String {
    let mut q = RECENT_ERRORS.lock().unwrap_or_else(|e| e.into_inner());
    if q.is_empty() {
        return String::new();
    }
    let joined = q.drain(..).collect::<Vec<_>>().join("; ");
    format!(": {joined}")
}

unsafe extern "C" fn log_callback(level: llama_cpp_sys_2::ggml_log_level, text: *const c_char, _: *mut c_void) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string valid for this call.
    let msg = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    if VERBOSE.load(Ordering::Relaxed) {
        eprint!("{msg}");
    }
    if level == llama_cpp_sys_2::GGML_LOG_LEVEL_ERROR {
        let mut q = RECENT_ERRORS.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() == KEPT_ERRORS {
            q.pop_front();
        }
        q.push_back(msg.trim().to_string());
    }
}
