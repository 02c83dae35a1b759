//! llama.cpp's graph evaluation callback, behind a safe trait.
//!
//! The scheduler calls the callback twice per node it visits: with `ask = true` to
//! learn whether we want the node (answer by name, as llama.cpp's eval-callback
//! example does; wanting few nodes keeps the graph fast), then with `ask = false`
//! once a wanted node is computed. We hand the observer the node's values as f32;
//! on host buffers they are the tensor's own memory, so writes are seen by the rest
//! of the graph (the tests use this to zero neurons as a reference for slicing).

use std::ffi::{c_void, CStr};

use llama_cpp_sys_2 as sys;

/// A computed graph node handed to a [`TensorObserver`].
#[derive(Debug)]
pub struct ObservedTensor<'a> {
    /// Node name, e.g. `ffn_swiglu-5`.
    pub name: &'a str,
    /// ggml dimensions, fastest-varying first: `[n_ff, n_tokens, 1, 1]` for an FFN activation.
    pub ne: [usize; 4],
    /// The values, row-major over `ne` (`ne[0]` contiguous).
    pub data: &'a mut [f32],
    /// The model being decoded. The graph's nodes before this one are computed and
    /// no llama.cpp thread runs meanwhile, so an observer may change the weights of
    /// layers that the rest of this decode call no longer reads (the prompt refit
    /// installs each finished layer this way).
    pub model: &'a super::Model,
}

/// Receives the graph nodes it asks for while llama.cpp decodes.
pub trait TensorObserver: Send {
    /// Whether to receive the node called `name` (e.g. `ffn_norm-3`).
    fn wants(&mut self, name: &str) -> bool;
    /// The computed node. Writes to `t.data` change what the graph computes next.
    fn observe(&mut self, t: ObservedTensor<'_>);
}

/// Owned by a [`super::Session`]; its address is the callback's user data.
pub(crate) struct CallbackState {
    pub(crate) observer: Box<dyn TensorObserver>,
    scratch: Vec<f32>,
    /// The session's model, which outlives the session that owns this state.
    model: *const super::Model,
}

impl CallbackState {
    pub(crate) fn new(observer: Box<dyn TensorObserver>, model: &super::Model) -> Box<CallbackState> {
        Box::new(CallbackState { observer, scratch: Vec::new(), model })
    }
}

/// The `cb_eval` function handed to llama.cpp.
///
/// # Safety
/// `user_data` must point to a live `CallbackState` that nothing else uses during
/// the decode call; `t` is a valid tensor for the duration of the call.
pub(crate) unsafe extern "C" fn eval_callback(t: *mut sys::ggml_tensor, ask: bool, user_data: *mut c_void) -> bool {
    // SAFETY: guaranteed by the caller (Session keeps the state boxed and alive).
    let state = unsafe { &mut *(user_data as *mut CallbackState) };
    // SAFETY: the Session that owns the state borrows the model for its lifetime.
    let model = unsafe { &*state.model };
    let tensor = unsafe { &mut *t };
    let name = unsafe { CStr::from_ptr(tensor.name.as_ptr()) }.to_string_lossy();
    if ask {
        return state.observer.wants(&name);
    }
    // Only contiguous F32 nodes carry activations we can read as rows.
    if tensor.type_ != sys::GGML_TYPE_F32 || !unsafe { sys::ggml_is_contiguous(t) } {
        return true;
    }
    let ne = tensor.ne.map(|n| n as usize);
    let n: usize = ne.iter().product();
    let host = !tensor.buffer.is_null() && unsafe { sys::ggml_backend_buffer_is_host(tensor.buffer) };
    if host {
        // SAFETY: a contiguous host F32 tensor holds n floats at `data`.
        let data = unsafe { std::slice::from_raw_parts_mut(tensor.data as *mut f32, n) };
        state.observer.observe(ObservedTensor { name: &name, ne, data, model });
    } else {
        let mut scratch = std::mem::take(&mut state.scratch);
        scratch.resize(n, 0.0);
        let bytes = n * std::mem::size_of::<f32>();
        // SAFETY: copies the whole tensor to and from a buffer of its size.
        unsafe { sys::ggml_backend_tensor_get(t, scratch.as_mut_ptr() as *mut c_void, 0, bytes) };
        state.observer.observe(ObservedTensor { name: &name, ne, data: &mut scratch, model });
        unsafe { sys::ggml_backend_tensor_set(t, scratch.as_ptr() as *const c_void, 0, bytes) };
        state.scratch = scratch;
    }
    true
}
