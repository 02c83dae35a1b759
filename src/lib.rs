//! selectinfer: make llama.cpp models fit and run fast on small devices by loading
//! and computing only the FFN neurons that matter (SelectInfer, Kabakibo et al. 2026).
//!
//! Data flows through one module per stage:
//!
//! - [`gguf`]: pure-Rust GGUF reading and writing (header, metadata, tensor data).
//! - [`model`]: what a model file says about itself (layers, FFN widths, bytes).
//! - [`engine`]: llama.cpp through llama-cpp-2; the only module with `unsafe`.
//! - [`eval`]: task metrics (SQuAD EM/F1, BLEU, chrF, ROUGE) matching the reference implementations.
//! - [`tasks`]: task datasets, prompt templates and the profiling/evaluation split.
//! - [`profile`]: activation statistics and neuron rankings (the offline profiler).
//! - [`select`]: loading masks and the GGUF rewrite (selective loading).
//! - [`compute`]: dynamic neuron selection per prompt and compacted decode (selective computation).
//! - [`synth`]: random-weight GGUF models for tests and shape benchmarks.
//! - [`cli`]: the `selectinfer` command line, one file per subcommand.
//!
//! Later stages (profile, select, compute, eval, experiment) build on these.

pub mod cli;
pub mod compute;
pub mod engine;
pub mod eval;
pub mod experiment;
pub mod fsutil;
pub mod gguf;
pub mod memory;
pub mod model;
pub mod output;
pub mod profile;
pub mod select;
pub mod synth;
pub mod tasks;
