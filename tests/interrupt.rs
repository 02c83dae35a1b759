//! Ctrl-C at several points of `slice`, `convert`, `profile`, `eval --mem-cap` and
//! `experiment` (SmolLM2-135M): the process exits with 130, leaves no partial
//! output, no temporary file and no memory group, and a re-run completes.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn q4() -> String {
    common::installed_model("SmolLM2-135M-Instruct.Q4_1.gguf").to_str().unwrap().to_string()
}

fn spawn(args: &[&str], cwd: &Path) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_selectinfer"));
    c.args(args).current_dir(cwd).stdout(Stdio::null()).stderr(Stdio::piped());
    // A shell that starts the test suite in the background (`scripts/test.sh &`)
    // makes SIGINT ignored, and an ignored signal stays ignored across exec: the
    // "at start" point would then interrupt nothing. Give the child Ctrl-C's
    // default disposition, as a terminal does.
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    c.spawn().unwrap()
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    files(dir).into_iter().filter(|p| p.to_string_lossy().ends_with(".tmp")).collect()
}

/// Waits until `ready` holds while the child runs, then sends SIGINT. Returns
/// false when the child ended first (the point was not reached).
fn interrupt_when(child: &mut Child, mut ready: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while !ready() {
        if child.try_wait().unwrap().is_some() || t0.elapsed() > Duration::from_secs(120) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if child.try_wait().unwrap().is_some() {
        return false;
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    true
}

/// Waits for the child and for every process still running in `dir` or naming it
/// (an experiment's cells), then checks what is left.
fn finish(child: Child, dir: &Path, label: &str) {
    let out = child.wait_with_output().unwrap();
    // 130 from the cleanup handler; a signal that came before main installed it
    // (the "at start" point) ends the process by the default action, with
    // nothing written yet.
    let by_default = out.status.code().is_none() && label.ends_with("at start");
    assert!(out.status.code() == Some(130) || by_default, "{label}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let t0 = Instant::now();
    while processes_naming(dir) > 0 {
        assert!(t0.elapsed() < Duration::from_secs(30), "{label}: children still running");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(temp_files(dir).is_empty(), "{label}: temporary files left: {:?}", temp_files(dir));
}

fn processes_naming(dir: &Path) -> usize {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
                || std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == dir)
        })
        .count()
}

fn size_of_temp(dir: &Path) -> u64 {
    temp_files(dir).iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).max().unwrap_or(0)
}

#[test]
fn interrupted_slice_and_convert_leave_nothing_and_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = q4();
    let out = d.join("out.gguf");
    let o = out.to_str().unwrap();
    for (cmd, args) in [
        ("slice", vec!["slice", "-m", &model, "--random", "--load", "0.5", "-o", o]),
        ("convert", vec!["convert", &model, "--to", "f16", "-o", o]),
    ] {
        let points: [(&str, Box<dyn Fn() -> bool>); 3] = [
            ("at start", Box::new(|| true)),
            ("when the temporary file appears", Box::new(|| !temp_files(d).is_empty())),
            ("with 20 MB written", Box::new(|| size_of_temp(d) > 20 << 20)),
        ];
        for (point, ready) in points {
            let mut child = spawn(&args, d);
            assert!(interrupt_when(&mut child, ready), "{cmd} ended before the point {point}");
            finish(child, d, &format!("{cmd} {point}"));
            assert!(files(d).is_empty(), "{cmd} {point}: left {:?}", files(d));
        }
        let st = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(&args).current_dir(d).output().unwrap();
        assert!(st.status.success(), "{cmd} re-run: {}", String::from_utf8_lossy(&st.stderr));
        assert_eq!(files(d), vec![out.clone()]);
        std::fs::remove_file(&out).unwrap();
    }
}

#[test]
fn interrupted_profile_leaves_no_partial_profile_and_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::write_tiny_qa(d);
    let prof = d.join("prof");
    let model = q4();
    let args = ["profile", "-m", &model, "--task", "qa", "--data", data.to_str().unwrap(), "--split", "all", "--limit", "4", "--gen-tokens", "16", "-t", "2", "-o", prof.to_str().unwrap()];
    // The interrupt points are shares of a whole run timed on this machine (the CPU
    // changes between machines: a fixed 600 ms outlasted a whole run on a fast one):
    // right after start (loading the model) and halfway through (profiling).
    let whole = {
        let full = d.join("full");
        let full_args: Vec<&str> = args.iter().map(|&a| if a == prof.to_str().unwrap() { full.to_str().unwrap() } else { a }).collect();
        let t0 = Instant::now();
        let st = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(&full_args).current_dir(d).output().unwrap();
        assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
        std::fs::remove_dir_all(&full).unwrap();
        t0.elapsed()
    };
    for delay in [Duration::from_millis(50), whole / 2] {
        let mut child = spawn(&args, d);
        let t0 = Instant::now();
        assert!(interrupt_when(&mut child, || t0.elapsed() > delay), "profile ended within {delay:?} (a whole run took {whole:?})");
        finish(child, d, &format!("profile after {delay:?}"));
        // Profiling writes its raw statistics atomically when it ends, then merges them
        // into rankings. On a fast machine the interrupt can land in the merge: then
        // the complete raw file (which `profile merge` turns into rankings) is all
        // that may be there, never a partial or temporary file, and no ranking.
        let left = files(&prof);
        let raw_only = left.iter().all(|f| f.parent() == Some(prof.join("raw").as_path()) && !f.file_name().unwrap().to_string_lossy().starts_with('.'));
        assert!(raw_only, "partial profile: {left:?}");
        if !left.is_empty() {
            let raws = selectinfer::profile::ranking::read_raw_dir(&prof).unwrap_or_else(|e| panic!("left an unreadable raw file: {e}"));
            assert_eq!(raws.len(), left.len(), "every file left is a complete raw profile: {left:?}");
            std::fs::remove_dir_all(&prof).unwrap();
        }
    }
    let st = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(args).current_dir(d).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    assert!(prof.join("task-qa.json").exists() && prof.join("model.json").exists());
}

/// Memory groups of this process tree under /sys/fs/cgroup/memory.
fn groups() -> Vec<String> {
    std::fs::read_dir(selectinfer::memory::CGROUP_V1_MEMORY)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("selectinfer-")).collect())
        .unwrap_or_default()
}

#[test]
#[cfg_attr(not(memory_caps), ignore = "needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")]
fn interrupted_capped_eval_removes_its_memory_group() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::write_tiny_qa(d);
    let csv = d.join("rows.csv");
    let model = common::tiny_model(selectinfer::synth::SynthArch::Llama);
    let args = [
        "eval", "-m", model.to_str().unwrap(), "--task", "qa", "--method", "reference", "--data", data.to_str().unwrap(), "--mem-cap", "2GiB", "--speed-only", "400", "-t", "2", "--out",
        csv.to_str().unwrap(),
    ];
    for wait_ms in [0u64, 300] {
        let mut child = spawn(&args, d);
        let group = format!("selectinfer-{}", child.id());
        let mut entered: Option<Instant> = None;
        let ready = || groups().contains(&group) && entered.get_or_insert_with(Instant::now).elapsed() >= Duration::from_millis(wait_ms);
        assert!(interrupt_when(&mut child, ready), "eval ended {wait_ms} ms after entering its group");
        finish(child, d, &format!("capped eval, {wait_ms} ms in the group"));
        assert!(!groups().contains(&group), "memory group {group} left");
        assert!(!csv.exists(), "a row was written by the interrupted run");
    }
}

#[test]
fn interrupted_experiment_leaves_nothing_partial_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let yaml = d.join("tiny-exp.yaml");
    std::fs::write(
        &yaml,
        format!(
            "threads: 2\nmodels:\n  - {{name: smol, source: {}, profile: prof, profile_prompts: 1, profile_gen_tokens: 2}}\n\
             tasks:\n  - {{task: qa, examples: 1}}\nmethods:\n  - method: reference\n  - {{method: selectinfer, load: 0.5, static: 0.2, compute: 0.3}}\n",
            q4()
        ),
    )
    .unwrap();
    let args = ["experiment", yaml.to_str().unwrap(), "--out-dir", "res"];
    let f16 = d.join("models/smol.F16.gguf");
    let points: [(&str, Box<dyn Fn() -> bool>); 2] = [
        ("while converting", Box::new(|| !temp_files(&d.join("models")).is_empty())),
        ("while profiling or running cells", Box::new(|| f16.exists())),
    ];
    for (point, ready) in points {
        let mut child = spawn(&args, d);
        assert!(interrupt_when(&mut child, ready), "experiment ended before the point {point}");
        finish(child, d, &format!("experiment {point}"));
    }
    let st = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(args).current_dir(d).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let rows = std::fs::read_to_string(d.join("res/results.csv")).unwrap();
    assert_eq!(rows.lines().count(), 3, "a header and two rows: {rows}");
    assert!(temp_files(d).is_empty());
}
