//! Reproduction runs: an experiment YAML names models, tasks and method grids; the
//! runner prepares every file the cells need, runs each cell as a child
//! `selectinfer eval` (typed: [`child::EvalCall`]), appends one CSV row per cell (and one per perplexity cell),
//! and writes the report: tables with 95% intervals, and the comparison plots.

pub mod child;
pub mod config;
pub mod intervals;
pub mod perplexity;
pub mod plot;
pub mod report;
pub mod run;
pub mod validate;

/// Where an experiment file's results go unless told otherwise: results/NAME, NAME
/// the file's stem (`experiment`, its path checks, and `tune-check --experiment`).
pub fn default_results_dir(file: &std::path::Path) -> std::path::PathBuf {
    std::path::PathBuf::from("results").join(file.file_stem().unwrap_or_default())
}
