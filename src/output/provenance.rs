//! Where a result came from: the commit of the binary and the machine it ran on.

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
mod tests {
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
}
