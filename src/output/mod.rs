//! Printing records: Markdown tables for people, JSON for scripts, progress on
//! stderr, and what every results row records about where it came from.
//!
//! - [`record`]: one record per measurement printed as a table, JSON Lines or CSV;
//! - [`table`]: Markdown tables and byte counts;
//! - [`median`]: the median of repeated timings;
//! - [`time`]: UTC timestamps;
//! - [`provenance`]: the binary's git commit and the machine;
//! - [`progress`]: progress bars, and progress lines for `selectinfer experiment`.

pub mod median;
pub mod progress;
pub mod provenance;
pub mod record;
pub mod table;
pub mod time;

pub use median::median;
pub use progress::{parse_progress_line, progress_bar, LineTerm, PROGRESS_LINES_ENV, PROGRESS_LINE_PREFIX};
pub use provenance::{git_commit, machine_description};
pub use table::{format_bytes, Table};
pub use time::utc_timestamp;
