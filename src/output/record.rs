//! One record type per measurement, printed three ways (llama-bench's printers):
//! a Markdown table for people (each command chooses its columns), JSON Lines
//! with every field, and CSV with every field under a header row. The JSON and CSV
//! printers take any serde record, so both always carry the same fields, and
//! [`read_csv`] / [`read_json_lines`] read them back.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// How a command prints its records (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Markdown table (the default): the columns people read, then a footnote.
    Md,
    /// JSON Lines: one object per record, every field.
    Json,
    /// CSV: a header row of the field names, then one row per record.
    Csv,
}

/// The records as JSON Lines (one object per line, each line ending in `\n`).
pub fn to_json_lines<R: Serialize>(records: &[R]) -> serde_json::Result<String> {
    records.iter().map(|r| serde_json::to_string(r).map(|l| l + "\n")).collect()
}

/// The records as CSV: the field names, then one row per record (an empty field
/// for a missing value). Nested fields are not supported by CSV: a record printed
/// this way is flat.
pub fn to_csv<R: Serialize>(records: &[R]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in records {
        w.serialize(r)?;
    }
    Ok(String::from_utf8(w.into_inner().map_err(|e| anyhow::anyhow!("writing CSV: {e}"))?)?)
}

/// Records printed by [`to_csv`].
pub fn read_csv<R: DeserializeOwned>(text: &str) -> anyhow::Result<Vec<R>> {
    csv::Reader::from_reader(text.as_bytes()).deserialize().enumerate().map(|(i, r)| r.map_err(|e| anyhow::anyhow!("CSV row {}: {e}", i + 1))).collect()
}

/// Records printed by [`to_json_lines`] (blank lines skipped).
pub fn read_json_lines<R: DeserializeOwned>(text: &str) -> anyhow::Result<Vec<R>> {
    text.lines().filter(|l| !l.trim().is_empty()).enumerate().map(|(i, l)| serde_json::from_str(l).map_err(|e| anyhow::anyhow!("JSON line {}: {e}", i + 1))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Rec {
        name: String,
        tps: f64,
        bytes: u64,
        peak: Option<u64>,
        dense: bool,
    }

    #[test]
    fn json_and_csv_read_back_the_same_records() {
        let recs = vec![
            Rec { name: "a, \"quoted\" name".into(), tps: 123.456789012345, bytes: 1 << 40, peak: Some(7), dense: true },
            Rec { name: "b".into(), tps: 0.1 + 0.2, bytes: 0, peak: None, dense: false },
        ];
        let csv = to_csv(&recs).unwrap();
        assert_eq!(csv.lines().next(), Some("name,tps,bytes,peak,dense"));
        assert_eq!(csv.lines().nth(2), Some("b,0.30000000000000004,0,,false"));
        assert_eq!(read_csv::<Rec>(&csv).unwrap(), recs);
        let json = to_json_lines(&recs).unwrap();
        assert_eq!(json.lines().count(), 2);
        assert_eq!(read_json_lines::<Rec>(&json).unwrap(), recs);
        assert!(read_csv::<Rec>("name,tps\nx,notanumber\n").unwrap_err().to_string().contains("CSV row 1"));
    }
}
