//! Selective loading: rewrite a GGUF so that unloaded FFN neurons never reach memory.
//!
//! After profiling and the fit in the data flow: takes a model and a profile (or a
//! seed, for the random ablation), decides per layer which neurons to keep
//! ([`crate::profile::keep`]), has them compensated ([`crate::fit::compensate`]),
//! and writes a new GGUF ([`rewrite`]) in which `ffn_gate`/`ffn_up` keep only those rows and
//! `ffn_down` only those columns. The selection is recorded in the file's metadata
//! ([`meta::SliceMeta`]) so later stages work from the file alone.

pub mod budget;
pub mod meta;
pub mod rewrite;
pub mod variant;
pub mod validate;

pub use crate::profile::keep::{default_layer_range, keep_from_profile, keep_random, LayerKeep};
pub use meta::SliceMeta;
pub use rewrite::{slice_model, slice_model_with, DownLayout, SliceReport, SliceRequest, SliceSource};
