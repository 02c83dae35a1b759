//! Reproduction runs: an experiment YAML names models, tasks and method grids; the
//! runner prepares every file the cells need, runs each cell as a child
//! `selectinfer eval`, appends one CSV row per cell, and draws the comparison plots.

pub mod config;
pub mod plot;
pub mod report;
pub mod run;
