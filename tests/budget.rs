//! `chat --mem-budget` bounds what the process really holds: the measured peak
//! resident memory, and the memory of a cgroup capped at the budget.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn smollm2_f16(dir: &Path) -> PathBuf {
    let f16 = dir.join("SmolLM2-135M-Instruct.F16.gguf");
    selectinfer::engine::quantize(&common::installed_model("SmolLM2-135M-Instruct.Q4_1.gguf"), &f16, selectinfer::engine::TargetType::F16, 2)
        .unwrap();
    f16
}

const BUDGET: u64 = 300 << 20;

/// `chat` with a 300 MiB budget, n_ctx 512 and phi 0.4, one turn, run through
/// `wrap` (a shell prefix) so that it can start inside a memory group.
fn chat_in(wrap: &str, f16: &Path, cache: &Path) -> (bool, String) {
    let profile = common::repo_root().join("profiles/SmolLM2-135M-Instruct.F16");
    let cmd = format!(
        "{wrap}exec {} chat -m {} --profile {} --task qa --compensate none --mem-budget {BUDGET} --ctx 512 --compute 0.4 --cache-dir {} -n 8 -t 2",
        env!("CARGO_BIN_EXE_selectinfer"),
        f16.display(),
        profile.display(),
        cache.display()
    );
    let mut child = Command::new("sh").arg("-c").arg(cmd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"Name a color.\n").unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The figures of the last "measured peak" line: (peak, predicted with a full KV cache).
fn measured(err: &str) -> (f64, f64) {
    let line = err.lines().rev().find(|l| l.starts_with("chat: measured peak resident memory")).expect("a measurement line");
    let mib = |s: &str| s.trim().trim_end_matches("MiB").trim().parse::<f64>().unwrap();
    let peak = mib(line.split("memory ").nth(1).unwrap().split(" after").next().unwrap());
    let predicted = mib(line.rsplit(") ").next().unwrap());
    (peak, predicted)
}

#[test]
fn the_budget_bounds_the_measured_peak_and_reports_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = smollm2_f16(dir.path());
    let (ok, err) = chat_in("", &f16, &dir.path().join("slices"));
    assert!(ok, "{err}");
    // The full model does not fit 300 MiB at its peak (weights 256.6 MiB plus the
    // runtime), so chat measures, reserves the runtime and slices again.
    assert!(err.contains("choosing again with"), "{err}");
    let (peak, predicted) = measured(&err);
    let budget_mib = BUDGET as f64 / 1048576.0;
    assert!(peak <= budget_mib && predicted <= budget_mib, "peak {peak} MiB, predicted {predicted} MiB, budget {budget_mib} MiB: {err}");
    assert!(err.contains("[prefill"), "a turn was answered: {err}");
}

/// Under a cgroup v1 memory limit of the budget (the page cache of the mapped
/// model is charged to it), the chat runs to the end: nothing is OOM-killed. The
/// slice is made first, uncapped, so that the capped run measures chat alone.
#[test]
#[cfg_attr(not(memory_caps), ignore = "needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")]
fn the_budget_holds_under_a_memory_cap_of_that_size() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = smollm2_f16(dir.path());
    let cache = dir.path().join("slices");
    let (ok, err) = chat_in("", &f16, &cache);
    assert!(ok, "{err}");
    let group = PathBuf::from(format!("/sys/fs/cgroup/memory/selectinfer-budget-test-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap_or_else(|e| panic!("memory caps are expected here but {} cannot be made: {e}", group.display()));
    std::fs::write(group.join("memory.limit_in_bytes"), BUDGET.to_string()).unwrap();
    let _ = std::fs::write(group.join("memory.memsw.limit_in_bytes"), BUDGET.to_string());
    let (ok, err) = chat_in(&format!("echo $$ > {}/cgroup.procs && ", group.display()), &f16, &cache);
    let max_usage: u64 = std::fs::read_to_string(group.join("memory.max_usage_in_bytes")).unwrap().trim().parse().unwrap();
    let _ = std::fs::remove_dir(&group);
    assert!(ok, "the capped chat ran to the end: {err}");
    assert!(err.contains("reusing"), "the slice came from the cache: {err}");
    assert!(!err.contains("choosing again"), "the runtime measured by the first run was reserved from the start: {err}");
    assert!(max_usage <= BUDGET, "group peak {max_usage}");
    let (peak, _) = measured(&err);
    assert!(peak <= BUDGET as f64 / 1048576.0, "{err}");
}

/// `generate --compute` on a file that does not fit the memory its process may use
/// (a cgroup v1 group of 300 MiB for 256.6 MiB of weights, about 320 MiB with the
/// runtime share) holds it the device case's way by default, unrepacked and decoding
/// from a gathered copy, says so, runs to the end under the cap, and generates what
/// the uncapped run does in place (the two layouts decode bit-identically).
#[test]
#[cfg_attr(not(memory_caps), ignore = "needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")]
fn generate_holds_a_file_that_does_not_fit_the_device_way() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = smollm2_f16(dir.path());
    let run = |wrap: &str| {
        let cmd = format!("{wrap}exec {} generate -m {} -p 'The capital of France is' -n 8 --compute 0.4 -t 2", env!("CARGO_BIN_EXE_selectinfer"), f16.display());
        let out = Command::new("sh").arg("-c").arg(cmd).stdin(Stdio::null()).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (ok, text, err) = run("");
    assert!(ok, "{err}");
    assert!(!err.contains("layout copy"), "with room the file is held as llama.cpp holds it: {err}");
    let group = PathBuf::from(format!("/sys/fs/cgroup/memory/selectinfer-holding-test-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap_or_else(|e| panic!("memory caps are expected here but {} cannot be made: {e}", group.display()));
    std::fs::write(group.join("memory.limit_in_bytes"), BUDGET.to_string()).unwrap();
    let _ = std::fs::write(group.join("memory.memsw.limit_in_bytes"), BUDGET.to_string());
    let (ok, capped, capped_err) = run(&format!("echo $$ > {}/cgroup.procs && ", group.display()));
    let _ = std::fs::remove_dir(&group);
    assert!(ok, "the capped generation ran to the end: {capped_err}");
    assert!(capped_err.contains("plan: layout copy, no repacking (default: the file's 256 MiB of weights"), "{capped_err}");
    assert!(capped_err.contains("do not fit the 300 MiB this process may use"), "{capped_err}");
    assert_eq!(capped, text, "the gathered copy decodes what the in-place run decodes");
    assert!(text.trim().len() > 1, "text was generated: {text:?}");
}
