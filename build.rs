//! Build script: embeds the git commit of the source tree as `SELECTINFER_GIT_COMMIT`
//! (short hash; `-dirty` when tracked files that go into the binary, those under
//! `SOURCES`, have uncommitted changes; `unknown` without git or a repository), so
//! results rows name the binary that ran rather than whatever HEAD is when it runs. Also sets the cfg `memory_caps` where this
//! machine can cap memory (root and a cgroup v1 memory hierarchy), so the test that
//! needs caps is `#[ignore]`d, visibly, elsewhere.

use std::process::Command;

/// What the binary is built from: watched for reruns and checked for changes.
const SOURCES: [&str; 6] = ["src", "build.rs", "Cargo.toml", "Cargo.lock", "patches", "vendor"];

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    // Rerun when HEAD moves (checkout, commit), the index changes (add, commit) or
    // the sources change (edits make or clear the dirty marker).
    for p in SOURCES {
        println!("cargo::rerun-if-changed={p}");
    }
    let head = git(&["rev-parse", "--short", "HEAD"]);
    // HEAD's reflog changes with every commit, also when the branch ref is packed.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for p in ["HEAD", "logs/HEAD", "index", "packed-refs"].into_iter().chain(branch.as_deref()) {
        // A missing path would rerun this script on every build: watch only files that exist.
        if let Some(path) = git(&["rev-parse", "--git-path", p]).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo::rerun-if-changed={path}");
        }
    }
    // Without optional locks `git status` does not rewrite the index, which would
    // make the next build rerun this script.
    let commit = match (head, git(&[&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--"][..], &SOURCES].concat())) {
        (Some(h), Some(changes)) if !changes.is_empty() => format!("{h}-dirty"),
        (Some(h), Some(_)) => h,
        _ => "unknown".into(),
    };
    println!("cargo::rustc-env=SELECTINFER_GIT_COMMIT={commit}");

    println!("cargo::rustc-check-cfg=cfg(memory_caps)");
    let root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0")));
    if root && std::path::Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
        println!("cargo::rustc-cfg=memory_caps");
    }
}
