//! Compacted FFN weights handed to llama.cpp (patch 0003, `llama_set_ffn_compact`).
//!
//! Selective computation gathers, once per prompt, the rows of `ffn_gate`/`ffn_up`
//! and the columns of `ffn_down` of the neurons to compute into small tensors, and
//! llama.cpp's `build_ffn` multiplies those instead of the layer's own weights. The
//! tensors live in one backend buffer owned here: a plain CPU buffer when the
//! model's weights are in host memory, the weights' own buffer type otherwise
//! (CUDA), so the same code serves both. When the weights were reordered in place
//! ([`super::inplace`]), the tensors are prefix views of the layer's own weights
//! instead, and nothing is allocated.

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
    /// `[k, n_embd]` down columns (`[n_embd, k]` rows of a neuron-major down) and
    /// their type.
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
    /// Whether down is neuron-major (`[n_embd, k]`, patch 0006).
    pub down_rows: bool,
}

/// The ggml context and backend buffer holding the tensors set on a llama context.
pub(crate) struct CompactBuffers {
    ctx: *mut sys::ggml_context,
    buffer: sys::ggml_backend_buffer_t,
    pub(crate) layers: Vec<usize>,
    /// For views of the model's own weights: the model's FFN-order epoch they
    /// were made for.
    pub(crate) epoch: Option<u64>,
}

impl CompactBuffers {
    /// A ggml context with room for three tensor headers per layer, no data.
    fn empty(n_layers: usize) -> Result<CompactBuffers, String> {
        let params = sys::ggml_init_params {
            // SAFETY: a constant of the library.
            mem_size: unsafe { sys::ggml_tensor_overhead() } * 3 * n_layers.max(1) + 1024,
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        };
        // SAFETY: no_alloc context of a computed size; freed in Drop.
        let ctx = unsafe { sys::ggml_init(params) };
        if ctx.is_null() {
            return Err("ggml_init failed".into());
        }
        Ok(CompactBuffers { ctx, buffer: std::ptr::null_mut(), layers: Vec::new(), epoch: None })
    }

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
        let mut me = Self::empty(shapes.len()).map_err(fail)?;
        let ctx = me.ctx;
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
            let down = if sh.down_rows { new(dt, sh.n_embd, sh.k) } else { new(dt, sh.k, sh.n_embd) };
            tensors.push([new(gt, sh.n_embd, sh.k), new(ut, sh.n_embd, sh.k), down]);
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

    /// Sets, for each `(layer, k)`, prefix views of the layer's own weights on
    /// `lctx`: the first `k` rows of gate/up and the first `k` columns of down (rows
    /// when `down_rows`: a neuron-major down). No weight is copied; the caller has
    /// put the neurons to compute first ([`super::inplace`]).
    ///
    /// # Safety
    /// As for [`install`](Self::install); the model's weights must stay in that
    /// order while the views are set.
    pub(crate) unsafe fn install_views(
        lctx: *mut sys::llama_context,
        model: *const sys::llama_model,
        layers: &[(usize, usize)],
        down_rows: bool,
    ) -> Result<CompactBuffers, EngineError> {
        let fail = |what: String| EngineError::Decode(format!("compacted FFN views: {what}"));
        let mut me = Self::empty(layers.len()).map_err(fail)?;
        let ctx = me.ctx;
        let mut views = Vec::with_capacity(layers.len());
        for &(l, k) in layers {
            let [gate, up, down] = ["ffn_gate", "ffn_up", "ffn_down"].map(|w| {
                let name = CString::new(format!("blk.{l}.{w}.weight")).expect("no NUL");
                unsafe { sys::llama_model_get_tensor_by_name(model, name.as_ptr()) as *mut sys::ggml_tensor }
            });
            if gate.is_null() || up.is_null() || down.is_null() {
                return Err(fail(format!("model has no FFN weights in layer {l}")));
            }
            let (n_gate, n_down) = unsafe { ((*gate).ne[1], (*down).ne[usize::from(down_rows)]) };
            if k == 0 || k as i64 > n_gate || k as i64 > n_down {
                return Err(fail(format!("layer {l}: {k} neurons of {n_gate}")));
            }
            // SAFETY: each view lies inside its weight (a prefix of rows, or the first
            // k elements of every row), and is bound to the weight's buffer.
            let view = |t: *mut sys::ggml_tensor, ne0: i64, ne1: i64| unsafe {
                let v = sys::ggml_view_2d(ctx, t, ne0, ne1, (*t).nb[1], 0);
                if !v.is_null() && (*t).buffer.is_null() {
                    return std::ptr::null_mut();
                }
                if !v.is_null() && sys::ggml_backend_view_init(v) != sys::GGML_STATUS_SUCCESS {
                    return std::ptr::null_mut();
                }
                v
            };
            let down_view = unsafe { if down_rows { view(down, (*down).ne[0], k as i64) } else { view(down, k as i64, (*down).ne[1]) } };
            let v = unsafe { [view(gate, (*gate).ne[0], k as i64), view(up, (*up).ne[0], k as i64), down_view] };
            if v.iter().any(|t| t.is_null()) {
                return Err(fail(format!("could not view the weights of layer {l}")));
            }
            views.push((l, v));
        }
        for (l, v) in views {
            unsafe { sys::llama_set_ffn_compact(lctx, l as i32, v[0], v[1], v[2]) };
            me.layers.push(l);
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
        // Session::drop and Session::clear_compact_ffn clear the layers first.
        debug_assert!(self.layers.is_empty(), "compacted FFN dropped while still set on a llama context");
        // SAFETY: both were created in install and are freed once.
        unsafe {
            if !self.buffer.is_null() {
                sys::ggml_backend_buffer_free(self.buffer);
            }
            sys::ggml_free(self.ctx);
        }
    }
}
