//! Markdown tables, and byte counts written for people.

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
    fn bytes_use_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(3 << 30), "3.00 GiB");
    }
}
