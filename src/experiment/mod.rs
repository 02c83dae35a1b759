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
