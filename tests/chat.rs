//! `selectinfer chat` on SmolLM2, driven through stdin and through a pseudo-terminal.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

fn chat(args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_selectinfer"))
        .arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chat");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn q4() -> String {
    common::installed_model("SmolLM2-135M-Instruct.Q4_1.gguf").to_str().unwrap().to_string()
}

/// The second turn answers from the first (the name), and after `/reset` the same
/// question no longer can. Greedy SmolLM2-135M: the phrasing was chosen by hand so
/// that the model repeats the name when it has it.
#[test]
fn two_turns_share_the_conversation_and_reset_clears_it() {
    let m = q4();
    let input = "Remember this: my name is Ada.\nWhat is my name?\n/reset\nWhat is my name?\n";
    let (ok, out, err) = chat(&["-m", &m, "-n", "24", "-t", "2"], input);
    assert!(ok, "{err}");
    let answers: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(answers.len(), 3, "three one-line answers: {out:?}");
    assert_eq!(err.matches("[prefill").count(), 3, "one stats line per answer: {err}");
    assert!(err.contains("conversation cleared"));
    assert!(answers[1].contains("Ada"), "the second turn sees the first: {answers:?}");
    assert!(!answers[2].contains("Ada"), "after /reset the name is gone: {answers:?}");
}

#[test]
fn selective_chat_reports_the_computed_share() {
    let m = q4();
    let (ok, out, err) = chat(&["-m", &m, "-n", "16", "-t", "2", "--compute", "0.4"], "Name a color.\n/stats\n");
    assert!(ok, "{err}");
    assert!(!out.trim().is_empty());
    assert!(err.contains("compute 0.4 ("), "{err}");
    assert!(err.contains("last turn:"), "/stats prints the last turn: {err}");
}

#[test]
fn memory_budget_picks_a_load_share_that_fits() {
    use selectinfer::model::ModelInfo;
    let dir = tempfile::tempdir().unwrap();
    let f16 = dir.path().join("SmolLM2-135M-Instruct.F16.gguf");
    selectinfer::engine::quantize(&common::installed_model("SmolLM2-135M-Instruct.Q4_1.gguf"), &f16, selectinfer::engine::TargetType::F16, 2)
        .unwrap();
    let f16_bytes = std::fs::metadata(&f16).unwrap().len();
    // 60% of the F16 file plus the ~45 MiB that llama.cpp's compute buffers and the
    // process take at n_ctx 256 (measured by chat, which reserves it).
    let budget = (f16_bytes as f64 * 0.6) as u64 + (50 << 20);
    let cache = dir.path().join("slices");
    let profile = common::repo_root().join("profiles/SmolLM2-135M-Instruct.F16");
    let args = [
        "-m", f16.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--task", "qa", "--static", "0.1", "--layers", "0..30", "--compensate", "none",
        "--ctx", "256", "--cache-dir", cache.to_str().unwrap(), "-n", "8", "-t", "2",
    ];
    let budget_s = budget.to_string();
    let (ok, _, err) = chat(&[&args[..], &["--mem-budget", &budget_s]].concat(), "Hello\n");
    assert!(ok, "{err}");
    // The last choice is the one that ran (an earlier round may have measured
    // more than the budget and chosen again).
    let line = err.lines().rev().find(|l| l.contains("load (gamma)")).expect("the chosen share is reported");
    let gamma: f64 = line.split("load (gamma) ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(gamma < 1.0, "{line}");
    let slice = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(&format!(".load{gamma}.")))
        .expect("the chosen slice is cached");
    let info = ModelInfo::read(&slice).unwrap();
    let kv = 30 * 256 * 3 * (64 + 64) * 2;
    assert!(info.total_bytes + kv <= budget, "weights {} + KV {kv} within {budget}", info.total_bytes);

    // A budget below the non-FFN weights is refused with the numbers.
    let (ok, _, err) = chat(&[&args[..], &["--mem-budget", "50MiB"]].concat(), "Hello\n");
    assert!(!ok && err.contains("cannot hold even the non-FFN weights") && err.contains("MiB"), "{err}");
    // Too small for the smallest share once the runtime that the first run
    // measured (remembered in the cache dir) is reserved: refused with the numbers.
    let (ok, _, err) = chat(&[&args[..], &["--mem-budget", "160MiB"]].concat(), "Hello\n");
    assert!(!ok && err.contains("does not fit: at the smallest load share") && err.contains("measured for the runtime"), "{err}");
}

#[test]
fn pseudo_terminal_session_streams_and_exits_on_ctrl_d() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("status");
    let session = format!("si-chat-{}", std::process::id());
    let cmd = format!(
        "{} chat -m {} -n 12 -t 2; echo $? > {}",
        env!("CARGO_BIN_EXE_selectinfer"),
        q4(),
        status.display()
    );
    let tmux = |args: &[&str]| Command::new("tmux").args(args).output().expect("tmux (installed by scripts/setup.sh)");
    assert!(tmux(&["new-session", "-d", "-s", &session, "-x", "200", "-y", "50", &cmd]).status.success());
    let screen = || String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &session]).stdout).into_owned();
    let wait_for = |what: &dyn Fn(&str) -> bool| {
        for _ in 0..300 {
            if what(&screen()) || status.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    // capture-pane drops trailing blanks: the empty prompt shows as a lone ">".
    let prompt_shown = |s: &str| s.lines().any(|l| l.trim_end() == ">");
    wait_for(&prompt_shown);
    assert!(prompt_shown(&screen()), "the prompt appears: {}", screen());
    tmux(&["send-keys", "-t", &session, "Say hello.", "Enter"]);
    wait_for(&|s: &str| s.contains("[prefill"));
    let shown = screen();
    assert!(shown.contains("[prefill"), "an answer and its stats line appear: {shown}");
    tmux(&["send-keys", "-t", &session, "C-d"]);
    for _ in 0..100 {
        if status.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = tmux(&["kill-session", "-t", &session]);
    assert_eq!(std::fs::read_to_string(&status).expect("chat exited").trim(), "0", "Ctrl-D exits with status 0");
}

#[test]
fn task_switch_reslices_from_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = dir.path().join("SmolLM2-135M-Instruct.F16.gguf");
    selectinfer::engine::quantize(&common::installed_model("SmolLM2-135M-Instruct.Q4_1.gguf"), &f16, selectinfer::engine::TargetType::F16, 2)
        .unwrap();
    let cache = dir.path().join("slices");
    let profile = common::repo_root().join("profiles/SmolLM2-135M-Instruct.F16");
    let args = [
        "-m", f16.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--task", "qa", "--load", "0.7", "--compensate", "none", "--cache-dir",
        cache.to_str().unwrap(), "-n", "8", "-t", "2",
    ];
    let (ok, out, err) = chat(&args, "Hello\n/task translate\nGuten Morgen\n");
    assert!(ok, "{err}");
    assert!(err.contains("base task now translate"), "{err}");
    assert_eq!(err.matches("chat: slicing").count(), 2, "one slice per base task: {err}");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 2);
    assert_eq!(err.matches("[prefill").count(), 2, "{err}");
    assert!(!out.trim().is_empty());
    // A second run reuses the cached slices.
    let (ok, _, err) = chat(&args, "Hello\n");
    assert!(ok && err.contains("chat: reusing"), "{err}");
}
