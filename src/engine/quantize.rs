//! llama.cpp's own quantizer (`llama_model_quantize`), the path behind `convert`
//! and the Q4/Q8 baselines.

use std::ffi::CString;
use std::path::Path;

use llama_cpp_sys_2 as sys;

use super::backend::{backend, take_recent_errors, EngineError};

/// The file types `convert` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetType {
    /// All weights F32.
    F32,
    /// Matrices F16 (norms stay F32).
    F16,
    /// Matrices BF16.
    Bf16,
    /// 8-bit, block of 32.
    #[value(name = "q8_0")]
    Q8_0,
    /// 4-bit, block of 32.
    #[value(name = "q4_0")]
    Q4_0,
    /// 4-bit K-quant mix (Q4_K, with Q6_K for half of ffn_down/attn_v), llama.cpp's usual default.
    #[value(name = "q4_k_m")]
    Q4KM,
}

impl TargetType {
    fn ftype(self) -> sys::llama_ftype {
        match self {
            TargetType::F32 => sys::LLAMA_FTYPE_ALL_F32,
            TargetType::F16 => sys::LLAMA_FTYPE_MOSTLY_F16,
            TargetType::Bf16 => sys::LLAMA_FTYPE_MOSTLY_BF16,
            TargetType::Q8_0 => sys::LLAMA_FTYPE_MOSTLY_Q8_0,
            TargetType::Q4_0 => sys::LLAMA_FTYPE_MOSTLY_Q4_0,
            TargetType::Q4KM => sys::LLAMA_FTYPE_MOSTLY_Q4_K_M,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TargetType::F32 => "f32",
            TargetType::F16 => "f16",
            TargetType::Bf16 => "bf16",
            TargetType::Q8_0 => "q8_0",
            TargetType::Q4_0 => "q4_0",
            TargetType::Q4KM => "q4_k_m",
        }
    }
}

/// Converts `input` to `output` with llama.cpp's quantizer. Quantized sources are
/// dequantized and requantized (`allow_requantize`). The output appears only when
/// complete.
pub fn quantize(input: &Path, output: &Path, to: TargetType, threads: i32) -> Result<(), EngineError> {
    backend()?;
    let io = |p: &Path, source| EngineError::Io { path: p.display().to_string(), source };
    // Registered, so that Ctrl-C during the quantizer removes the partial file.
    let tmp = crate::fsutil::TempPath::beside(output);
    let cstr = |p: &Path| CString::new(p.to_string_lossy().as_bytes()).map_err(|e| io(p, std::io::Error::other(e)));
    let (c_in, c_tmp) = (cstr(input)?, cstr(tmp.path())?);
    // SAFETY: default params are plain values; the paths are NUL-terminated and live
    // for the call.
    let rc = unsafe {
        let mut params = sys::llama_model_quantize_default_params();
        params.nthread = threads;
        params.ftype = to.ftype();
        params.allow_requantize = true;
        let _ = take_recent_errors();
        sys::llama_model_quantize(c_in.as_ptr(), c_tmp.as_ptr(), &params)
    };
    if rc != 0 || !tmp.path().exists() {
        return Err(EngineError::Quantize {
            input: input.display().to_string(),
            output: output.display().to_string(),
            log: take_recent_errors(),
        });
    }
    tmp.persist(output).map_err(|e| io(output, e))
}
