//! Resident memory of this process, read from /proc (Linux).
//!
//! `llama_model_size` counts tensor bytes in the file, not what is resident; these
//! figures are what the operating system reports: VmRSS (resident now), VmHWM (peak
//! resident), and from smaps_rollup the split into file-backed pages (a memory-mapped
//! model) and anonymous memory (a model read with --no-mmap, repacked weights, KV
//! cache, compute buffers).

use serde::Serialize;

/// A snapshot of resident memory, in bytes. Fields are 0 where /proc lacks them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MemorySnapshot {
    /// VmRSS.
    pub rss_bytes: u64,
    /// VmHWM (peak RSS).
    pub peak_rss_bytes: u64,
    /// Rss_File of smaps_rollup (resident file-backed pages, e.g. an mmap'd model).
    pub rss_file_bytes: u64,
    /// Rss_Anon of smaps_rollup.
    pub rss_anon_bytes: u64,
}

fn field_kib(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

impl MemorySnapshot {
    /// Reads the current process's figures.
    pub fn now() -> MemorySnapshot {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        MemorySnapshot {
            rss_bytes: field_kib(&status, "VmRSS:"),
            peak_rss_bytes: field_kib(&status, "VmHWM:"),
            rss_file_bytes: field_kib(&rollup, "Rss_File:").max(field_kib(&status, "RssFile:")),
            rss_anon_bytes: field_kib(&rollup, "Rss_Anon:").max(field_kib(&status, "RssAnon:")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_fields() {
        let s = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 10 kB\n";
        assert_eq!(field_kib(s, "VmRSS:"), 1024 * 1024);
        assert_eq!(field_kib(s, "VmHWM:"), 2048 * 1024);
        assert_eq!(field_kib(s, "Missing:"), 0);
        let now = MemorySnapshot::now();
        assert!(now.rss_bytes > 0 && now.peak_rss_bytes >= now.rss_bytes);
    }
}

/// Major page faults of this process so far (field 12 of /proc/self/stat): pages
/// that had to be read from disk, e.g. an mmap'd model under memory pressure.
pub fn major_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may contain spaces; fields after its ')' are plain.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(9)).and_then(|f| f.parse().ok()).unwrap_or(0)
}
