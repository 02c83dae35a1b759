//! Compacted FFN weights handed to llama.cpp (patch 0003, `llama_set_ffn_compact`).
//!
//! Selective computation gathers, once per prompt, the rows of `ffn_gate`/`ffn_up`
//! and the columns of `ffn_down` of the neurons to compute into small tensors, and
//! llama.cpp's `build_ffn` multiplies those instead of the layer's own weights. The
//! tensors live in one backend buffer owned here: a plain CPU buffer when the
//! model's weights are in host memory, the weights' own buffer type otherwise
//! (CUDA), so the same code serves both.

use std::ffi::CString;

use llama_cpp_sys_2 as sys;

use super::backend::EngineError;
use crate::gguf::GgmlType;

/// One layer's compacted weights, in GGUF layout.
#[derive(Debug, Clone)]
pub struct CompactLayer {
    /// Layer index.
    pub layer: usize,
    /// Neurons kept.
    pub k: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// `[n_embd, k]` gate rows and their type.
    pub gate: (GgmlType, Vec<u8>),
    /// `[n_embd, k]` up rows and their type.
    pub up: (GgmlType, Vec<u8>),
    /// `[k, n_embd]` down columns and their type.
    pub down: (GgmlType, Vec<u8>),
}

/// The shape and types of one layer's compacted weights, known before gathering.
#[derive(Debug, Clone, Copy)]
pub struct CompactShape {
    /// Layer index.
    pub layer: usize,
    /// Neurons kept.
    pub k: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// Types of gate, up and down.
    pub types: [GgmlType; 3],
}

/// The ggml context and backend buffer holding the tensors set on a llama context.
pub(crate) struct CompactBuffers {
    ctx: *mut sys::ggml_context,
    buffer: sys::ggml_backend_buffer_t,
    pub(crate) layers: Vec<usize>,
}

impl CompactBuffers {
    /// Allocates tensors for `shapes`, fills them one layer at a time with `fill`
    /// (so only one layer's gathered bytes exist besides the backend buffer), then
    /// sets them on `lctx`.
    ///
    /// # Safety
    /// `lctx` and `model` must be valid; the returned value must be dropped only
    /// after the layers were cleared on `lctx` (see [`clear`](Self::clear)).
    pub(crate) unsafe fn install(
        lctx: *mut sys::llama_context,
        model: *const sys::llama_model,
        shapes: &[CompactShape],
        mut fill: impl FnMut(&CompactShape) -> Result<CompactLayer, String>,
    ) -> Result<CompactBuffers, EngineError> {
        let fail = |what: String| EngineError::Decode(format!("compacted FFN: {what}"));
        let params = sys::ggml_init_params {
            mem_size: unsafe { sys::ggml_tensor_overhead() } * 3 * shapes.len().max(1) + 1024,
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        };
        let ctx = unsafe { sys::ggml_init(params) };
        if ctx.is_null() {
            return Err(fail("ggml_init failed".into()));
        }
        let mut me = CompactBuffers { ctx, buffer: std::ptr::null_mut(), layers: Vec::new() };
        let mut tensors = Vec::with_capacity(shapes.len());
        let mut buft = unsafe { sys::ggml_backend_cpu_buffer_type() };
        for sh in shapes {
            let name = CString::new(format!("blk.{}.ffn_up.weight", sh.layer)).expect("no NUL");
            let orig = unsafe { sys::llama_model_get_tensor_by_name(model, name.as_ptr()) };
            if orig.is_null() {
                return Err(fail(format!("model has no blk.{}.ffn_up.weight", sh.layer)));
            }
            let obuf = unsafe { (*orig).buffer };
            if !obuf.is_null() {
                // Weights on a GPU (CUDA): keep the compacted copy on the same device.
                // CPU weights, plain or repacked (CPU_REPACK is not a host buffer in
                // ggml's sense but lives on the CPU device), get a plain CPU buffer.
                let obuft = unsafe { sys::ggml_backend_buffer_get_type(obuf) };
                let dev = unsafe { sys::ggml_backend_buft_get_device(obuft) };
                let on_gpu = !dev.is_null()
                    && matches!(
                        unsafe { sys::ggml_backend_dev_type(dev) },
                        sys::GGML_BACKEND_DEVICE_TYPE_GPU | sys::GGML_BACKEND_DEVICE_TYPE_IGPU
                    );
                if on_gpu {
                    buft = obuft;
                }
            }
            let new = |ty: GgmlType, ne0: usize, ne1: usize| unsafe {
                sys::ggml_new_tensor_2d(ctx, ty.0 as sys::ggml_type, ne0 as i64, ne1 as i64)
            };
            let [gt, ut, dt] = sh.types;
            tensors.push([new(gt, sh.n_embd, sh.k), new(ut, sh.n_embd, sh.k), new(dt, sh.k, sh.n_embd)]);
        }
        me.buffer = unsafe { sys::ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft) };
        if me.buffer.is_null() {
            return Err(fail("could not allocate the backend buffer".into()));
        }
        for (sh, t) in shapes.iter().zip(&tensors) {
            let l = fill(sh).map_err(fail)?;
            for (tensor, (ty, bytes)) in t.iter().zip([&l.gate, &l.up, &l.down]) {
                let want = unsafe { sys::ggml_nbytes(*tensor) };
                if want != bytes.len() || ty.0 != unsafe { (**tensor).type_ } as u32 {
                    return Err(fail(format!("layer {}: {} bytes of {ty} given for a tensor of {want}", sh.layer, bytes.len())));
                }
                unsafe { sys::ggml_backend_tensor_set(*tensor, bytes.as_ptr().cast(), 0, want) };
            }
        }
        for (sh, t) in shapes.iter().zip(&tensors) {
            unsafe { sys::llama_set_ffn_compact(lctx, sh.layer as i32, t[0], t[1], t[2]) };
            me.layers.push(sh.layer);
        }
        Ok(me)
    }

    /// Restores the layers' own weights on `lctx`.
    ///
    /// # Safety
    /// `lctx` must be the context the layers were installed on.
    pub(crate) unsafe fn clear(&mut self, lctx: *mut sys::llama_context) {
        for &l in &self.layers {
            unsafe {
                sys::llama_set_ffn_compact(lctx, l as i32, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
            };
        }
        self.layers.clear();
    }
}

impl Drop for CompactBuffers {
    fn drop(&mut self) {
        // SAFETY: both were created in install and are freed once.
        unsafe {
            if !self.buffer.is_null() {
                sys::ggml_backend_buffer_free(self.buffer);
            }
            sys::ggml_free(self.ctx);
        }
    }
}
