//! selectinfer: make llama.cpp models fit and run fast on small devices by loading
//! and computing only the FFN neurons that matter (SelectInfer, Kabakibo et al. 2026).
//!
//! Data flows through one module per stage, each using only the ones listed
//! before it. This list is the order: `tests/layering.rs` reads it, with the
//! exceptions under it, and fails on any `use crate::` (or `crate::` path in code)
//! that runs against it.
//!
//! - [`fsutil`]: atomic file writes (temporary name, then rename), cleanup on
//!   interrupt, and the operating-system calls beside llama.cpp ([`fsutil::os`]).
//! - [`memory`]: resident memory and page faults from /proc; memory caps (cgroup
//!   v1); memory sizes.
//! - [`output`]: Markdown tables, medians, timestamps, the build's commit, progress.
//! - [`gguf`]: pure-Rust GGUF reading and writing (header, metadata, tensor data),
//!   validated before anything is allocated or handed to llama.cpp.
//! - [`util`]: hashing, the seeded generator, float tensor encoding (GGUF's float
//!   types), argmax, the linear algebra of the refits.
//! - [`model`]: what a model file says about itself (layers, FFN widths, bytes).
//! - [`engine`]: llama.cpp through llama-cpp-2; all of its FFI `unsafe`.
//! - [`synth`]: random-weight GGUF models for tests and shape benchmarks.
//! - [`tasks`]: task datasets, prompt templates and the profiling/evaluation split.
//! - [`profile`]: activation statistics and neuron rankings (the offline profiler),
//!   the kept neurons they give, the vote rule of dynamic selection, and the text
//!   passes (chunks, profiling text, NLL) that later stages share.
//! - [`fit`]: what slicing needs measured (activation moments, chained and computed
//!   passes, output sensitivity) and the least-squares solve; hands `select` a
//!   ready compensation.
//! - [`select`]: the GGUF rewrite (selective loading) from rankings and the fit,
//!   selection variants, memory budgets.
//! - [`compute`]: dynamic neuron selection per prompt and compacted decode (selective computation).
//! - [`eval`]: the methods of the comparison, task metrics matching the reference
//!   implementations, bootstrap intervals, the evaluation harness and perplexity.
//! - [`experiment`]: YAML experiments: cells, their child `selectinfer eval` runs,
//!   intervals, the results README and plots.
//! - [`tune`]: a file's speed / memory / quality frontier for one task, measured
//!   through every stage above, and the operating point that meets the user's limits.
//! - [`cli`]: the `selectinfer` command line, one file per subcommand.
//!
//! Imports allowed against this order, each an item `` `from -> to`: why `` here
//! (at most two; the test also fails on one no longer used). None is needed
//! today: the layers below `cli` that once reached up take what they need from a
//! lower stage (thread and memory-size limits from `engine` and `memory`), and an
//! experiment checks its cells' child command lines with the parser `cli` hands
//! it ([`experiment::validate::ChildParser`]).
//!
//! - (none)

pub mod cli;
pub mod compute;
pub mod engine;
pub mod eval;
pub mod experiment;
pub mod fit;
pub mod fsutil;
pub mod gguf;
pub mod memory;
pub mod model;
pub mod output;
pub mod profile;
pub mod select;
pub mod synth;
pub mod tasks;
pub mod tune;
pub mod util;
