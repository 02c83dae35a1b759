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

/// Resets this process's peak resident memory (VmHWM) to the current RSS
/// (`/proc/self/clear_refs`, value 5), so that a later [`MemorySnapshot`] shows the
/// peak of what came after.
pub fn reset_peak_rss() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// Returns freed heap memory to the operating system (glibc's `malloc_trim`),
/// so that resident memory reflects what is in use.
pub fn trim_heap() {
    crate::fsutil::os::trim_heap();
}

/// Serves allocations of at least `bytes` from their own memory maps, so that
/// large buffers that come and go (the per-prompt refit's, a few MB each) return
/// to the operating system when freed instead of staying resident in the heap.
/// Process-wide and permanent.
pub fn map_large_allocations(bytes: usize) {
    crate::fsutil::os::map_large_allocations(bytes);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_memory_groups_limit_files_are_found_for_cgroup_v1_and_v2() {
        let v1 = "12:pids:/a\n11:memory:/selectinfer-7\n3:cpu,cpuacct:/a\n";
        let got: Vec<_> = super::cgroup_limits(v1).collect();
        let root = std::path::Path::new(super::CGROUP_V1_MEMORY);
        assert_eq!(got, [root.join("selectinfer-7/memory.limit_in_bytes"), root.join("memory.limit_in_bytes")]);
        let v2: Vec<_> = super::cgroup_limits("0::/user.slice/x.scope\n").collect();
        assert_eq!(v2, [std::path::PathBuf::from("/sys/fs/cgroup/user.slice/x.scope/memory.max"), "/sys/fs/cgroup/memory.max".into()]);
        assert!(super::usable_memory().is_some_and(|b| b > 16 << 20), "this machine's memory, or its group's");
    }

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

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("300MiB"), Ok(300 * 1048576));
        assert_eq!(parse_size("1.5GiB"), Ok(1610612736));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1024"), Ok(1024));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }
}

/// Major page faults of this process so far (field 12 of /proc/self/stat): pages
/// that had to be read from disk, e.g. an mmap'd model under memory pressure.
pub fn major_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may contain spaces; fields after its ')' are plain.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(9)).and_then(|f| f.parse().ok()).unwrap_or(0)
}

pub use crate::fsutil::CGROUP_V1_MEMORY;

/// The memory this process may use: the smallest of its memory cgroup's limit
/// (cgroup v1 `memory.limit_in_bytes`, v2 `memory.max`, where one is set: a
/// container or a group made to simulate a device) and the machine's total.
/// `None` where /proc says neither.
pub fn usable_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().map(|t| field_kib(&t, "MemTotal:")).filter(|&b| b > 0);
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = cgroup_limits(&groups).filter_map(|file| std::fs::read_to_string(file).ok()?.trim().parse::<u64>().ok()).min();
    [total, limit].into_iter().flatten().min()
}

/// The limit files of the memory groups `/proc/self/cgroup` names (`N:memory:/path`
/// for v1, `0::/path` for v2). An unlimited v1 group reads as a huge number and a
/// v2 one as `max`, which parses as none.
/// In a container the group's path is the host's, and the container's own limit sits
/// at the hierarchy's root: both are read (a host's root is unlimited).
fn cgroup_limits(proc_cgroup: &str) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    proc_cgroup.lines().flat_map(|l| {
        let mut f = l.splitn(3, ':');
        let (controllers, path) = (f.nth(1).unwrap_or("-"), f.next().unwrap_or("").trim_start_matches('/'));
        let (root, file) = if controllers.split(',').any(|c| c == "memory") {
            (CGROUP_V1_MEMORY, "memory.limit_in_bytes")
        } else if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max")
        } else {
            return Vec::new();
        };
        let root = std::path::Path::new(root);
        vec![root.join(path).join(file), root.join(file)]
    })
}

/// This process inside a cgroup v1 memory group whose limit is `bytes`: the way to
/// simulate a device smaller than the model. Page cache of files the process reads
/// (an mmap'd model) is charged to the group, so once the group is full the kernel
/// evicts model pages and reads them again from disk (major faults) instead of
/// keeping the whole file cached. Dropping the value leaves and removes the group.
#[derive(Debug)]
pub struct MemoryCap {
    dir: std::path::PathBuf,
    /// The limit in bytes.
    pub bytes: u64,
}

/// Why a memory cap could not be set; never papered over (a capped row that ran
/// uncapped would be a fake).
#[derive(Debug, thiserror::Error)]
#[error("cannot cap memory at {bytes} bytes: {what}")]
pub struct CapError {
    bytes: u64,
    what: String,
}

impl MemoryCap {
    /// Moves this process (all its threads) into a fresh memory group limited to
    /// `bytes`, after dropping clean page cache so that file pages already cached by
    /// other groups (and so charged to them) are read again and charged here.
    pub fn enter(bytes: u64) -> Result<MemoryCap, CapError> {
        let err = |what: String| CapError { bytes, what };
        let held = MemorySnapshot::now().rss_bytes;
        if bytes < held + MIN_CAP_HEADROOM {
            let mib = |b: u64| b.div_ceil(1 << 20);
            return Err(err(format!(
                "the cap must be at least {} MiB: this process holds {} MiB before loading any weights, and llama.cpp needs {} MiB more \
                 for its buffers (a smaller cap gets the process killed for memory)",
                mib(held + MIN_CAP_HEADROOM),
                mib(held),
                mib(MIN_CAP_HEADROOM)
            )));
        }
        let root = std::path::Path::new(CGROUP_V1_MEMORY);
        if !root.join("memory.limit_in_bytes").exists() {
            return Err(err(format!("{} is not a cgroup v1 memory hierarchy (caps need root and cgroup v1 memory controllers)", root.display())));
        }
        sweep_stale_groups(root);
        let dir = root.join(format!("selectinfer-{}", std::process::id()));
        // Made and registered at once: an interrupt the moment the group exists
        // still removes it.
        crate::fsutil::register_made(crate::fsutil::Cleanup::Cgroup(dir.clone()), || std::fs::create_dir(&dir))
            .map_err(|e| err(format!("creating {}: {e} (caps need root and cgroup v1 memory controllers)", dir.display())))?;
        let cap = MemoryCap { dir, bytes };
        let write = |file: &str, value: String| {
            let path = cap.dir.join(file);
            std::fs::write(&path, value).map_err(|e| err(format!("writing {}: {e}", path.display())))
        };
        write("memory.limit_in_bytes", bytes.to_string())?;
        // Without swap accounting the file may be missing; with it, stop the group
        // from spilling anonymous memory to swap instead of evicting model pages.
        if cap.dir.join("memory.memsw.limit_in_bytes").exists() {
            write("memory.memsw.limit_in_bytes", bytes.to_string())?;
        }
        write("cgroup.procs", std::process::id().to_string())?;
        drop_page_cache().map_err(|e| err(format!("dropping the page cache: {e}")))?;
        Ok(cap)
    }

    /// Largest memory the group has been charged (page cache included).
    pub fn max_usage_bytes(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("memory.max_usage_in_bytes")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }
}

/// Room a memory cap must leave above what the process already holds: llama.cpp's
/// context, KV cache and compute buffers of the smallest model.
pub const MIN_CAP_HEADROOM: u64 = 64 << 20;

impl Drop for MemoryCap {
    fn drop(&mut self) {
        crate::fsutil::leave_group(&self.dir);
        crate::fsutil::unregister(&crate::fsutil::Cleanup::Cgroup(self.dir.clone()));
    }
}

/// Removes the groups of selectinfer processes that no longer run (killed for
/// memory under their cap, which leaves no chance to clean up). A group whose
/// process is gone is empty, so removing it is allowed.
fn sweep_stale_groups(root: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("selectinfer-")).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Writes dirty pages back and drops the clean page cache (root only).
pub fn drop_page_cache() -> std::io::Result<()> {
    std::process::Command::new("sync").status()?;
    std::fs::write("/proc/sys/vm/drop_caches", "1")
}

/// Largest memory size accepted (1 PiB): beyond it a size is a typo.
pub const MAX_SIZE: u64 = 1 << 50;

/// A memory size with a unit (`300MiB`, `6GiB`; `--mem-budget`, `--mem-cap`),
/// from 1 byte to [`MAX_SIZE`].
pub fn parse_mem_size(s: &str) -> Result<u64, String> {
    let v = parse_size(s)?;
    if v == 0 {
        return Err(format!("{s} is no memory at all"));
    }
    if v > MAX_SIZE {
        return Err(format!("{s} is more than any machine has (at most 1024TiB)"));
    }
    Ok(v)
}

/// Parses a size such as `300MiB`, `1.5GiB`, `500MB` or a plain byte count.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad size {s:?}: expected e.g. 300MiB"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1048576.0,
        "g" | "gb" => 1e9,
        "gib" => 1073741824.0,
        other => return Err(format!("bad size unit {other:?} in {s:?} (use B, KiB, MiB, GiB, KB, MB, GB)")),
    };
    Ok((v * mult) as u64)
}
