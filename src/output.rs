//! Printing records: Markdown tables for people, JSON for scripts.

/// A Markdown table built row by row.
#[derive(Debug, Clone)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Appends a row (missing cells print empty).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// GitHub-flavoured Markdown with padded columns.
    pub fn to_markdown(&self) -> String {
        let n = self.header.len();
        let width = |i: usize| {
            self.rows.iter().filter_map(|r| r.get(i)).chain(std::iter::once(&self.header[i])).map(|c| c.chars().count()).max().unwrap_or(0).max(3)
        };
        let widths: Vec<usize> = (0..n).map(width).collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..n).map(|i| format!("{:<w$}", cells.get(i).map_or("", |s| s.as_str()), w = widths[i])).collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut out = line(&self.header);
        out.push_str(&format!("|{}|\n", widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|")));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// The median (mean of the middle two for an even count; 0 for none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Bytes in binary units with two decimals: `1.50 MiB`.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_table_pads_columns() {
        let mut t = Table::new(["a", "bb"]);
        t.row(["long cell", "x"]);
        assert_eq!(t.to_markdown(), "| a         | bb  |\n|-----------|-----|\n| long cell | x   |\n");
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(3 << 30), "3.00 GiB");
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The git commit of the sources this binary was built from, with `-dirty` when
/// its tracked sources (src/, Cargo files, patches/, vendor/) had uncommitted
/// changes (`unknown` when built outside a git checkout); embedded by `build.rs`.
pub fn git_commit() -> String {
    env!("SELECTINFER_GIT_COMMIT").to_string()
}

/// CPU model and core count, e.g. `Intel(R) Xeon(R) Processor x2`.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find_map(|l| l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{cpu} x{cores}")
}

#[cfg(test)]
mod time_tests {
    #[test]
    fn git_commit_is_the_build_time_head_with_a_dirty_marker() {
        let c = super::git_commit();
        let git = |args: &[&str]| {
            let o = std::process::Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
            o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let Some(head) = git(&["rev-parse", "--short", "HEAD"]) else {
            return assert_eq!(c, "unknown", "built outside a git checkout");
        };
        // cargo test rebuilt the crate for the current HEAD and sources just now.
        let changed = git(&["status", "--porcelain", "--untracked-files=no", "--", "src"]).unwrap();
        assert!(c == head || c == format!("{head}-dirty"), "{c} vs HEAD {head}");
        assert!(changed.is_empty() || c.ends_with("-dirty"), "src/ has changes ({changed}) but the commit is {c}");
    }

    #[test]
    fn timestamp_has_iso_shape() {
        let t = super::utc_timestamp();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }
}

/// Set by `selectinfer experiment` for its children: progress bars print
/// [`PROGRESS_LINE_PREFIX`]`POS LEN` lines on stderr instead of drawing.
pub const PROGRESS_LINES_ENV: &str = "SELECTINFER_PROGRESS_LINES";

/// Prefix of a progress line (see [`PROGRESS_LINES_ENV`]).
pub const PROGRESS_LINE_PREFIX: &str = "selectinfer-progress: ";

/// A "terminal" that turns each drawn bar into one stderr line.
#[derive(Debug)]
pub struct ProgressLines;

impl indicatif::TermLike for ProgressLines {
    fn width(&self) -> u16 {
        200
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        if !s.trim().is_empty() {
            eprintln!("{PROGRESS_LINE_PREFIX}{}", s.trim());
        }
        Ok(())
    }
    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Parses a progress line written under [`PROGRESS_LINES_ENV`]: (position, length).
pub fn parse_progress_line(line: &str) -> Option<(u64, u64)> {
    let (pos, len) = line.strip_prefix(PROGRESS_LINE_PREFIX)?.trim().split_once(' ')?;
    Some((pos.parse().ok()?, len.parse().ok()?))
}
