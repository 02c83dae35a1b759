//! selectinfer: make llama.cpp models fit and run fast on small devices by loading
//! and computing only the FFN neurons that matter (SelectInfer, Kabakibo et al. 2026).
//!
//! Data flows through one module per stage, each using only the ones listed
//! before it (and the shared helpers at the end):
//!
//! - [`gguf`]: pure-Rust GGUF reading and writing (header, metadata, tensor data),
//!   validated before anything is allocated or handed to llama.cpp.
//! - [`model`]: what a model file says about itself (layers, FFN widths, bytes).
//! - [`engine`]: llama.cpp through llama-cpp-2; the only module with `unsafe`.
//! - [`synth`]: random-weight GGUF models for tests and shape benchmarks.
//! - [`tasks`]: task datasets, prompt templates and the profiling/evaluation split.
//! - [`profile`]: activation statistics and neuron rankings (the offline profiler).
//! - [`select`]: loading masks and the GGUF rewrite (selective loading), memory budgets.
//! - [`compute`]: dynamic neuron selection per prompt and compacted decode (selective computation).
//! - [`eval`]: the methods of the comparison, task metrics matching the reference
//!   implementations, bootstrap intervals, the evaluation harness and perplexity.
//! - [`experiment`]: YAML experiments: cells, their child `selectinfer eval` runs,
//!   intervals, the results README and plots.
//! - [`cli`]: the `selectinfer` command line, one file per subcommand.
//!
//! Shared by several stages:
//!
//! - [`util`]: hashing, the seeded generator, float tensor encoding, argmax.
//! - [`output`]: Markdown tables, medians, timestamps, the build's commit, progress.
//! - [`memory`]: resident memory and page faults from /proc; memory caps (cgroup v1).
//! - [`fsutil`]: atomic file writes (temporary name, then rename).

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
pub mod util;
