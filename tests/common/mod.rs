//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use selectinfer::synth::{write_model, SynthArch, SynthSpec};

/// A directory that lives for the whole test binary (models are written once).
pub fn shared_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir")).path()
}

/// A tiny random-weight model of `arch` stored as F32, written once per test binary.
pub fn tiny_model(arch: SynthArch) -> PathBuf {
    static LLAMA: OnceLock<PathBuf> = OnceLock::new();
    static GEMMA3: OnceLock<PathBuf> = OnceLock::new();
    static QWEN2: OnceLock<PathBuf> = OnceLock::new();
    let cell = match arch {
        SynthArch::Llama => &LLAMA,
        SynthArch::Gemma3 => &GEMMA3,
        SynthArch::Qwen2 => &QWEN2,
    };
    cell.get_or_init(|| {
        let path = shared_dir().join(format!("tiny-{arch:?}.gguf"));
        write_model(&SynthSpec::tiny(arch), &path).expect("write tiny model");
        path
    })
    .clone()
}

/// Runs the `selectinfer` binary.
pub fn selectinfer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(args).output().expect("run selectinfer")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A model installed by scripts/setup.sh, or a panic saying how to get it.
pub fn installed_model(file: &str) -> PathBuf {
    let p = repo_root().join("models").join(file);
    assert!(p.exists(), "{} is missing: run scripts/setup.sh (the README's test command does)", p.display());
    p
}

/// Lists the files in `dir` (to check that nothing partial was left behind).
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Runs `selectinfer args` and asserts a clean failure: non-zero exit, no panic,
/// and `needle` in the error output.
pub fn assert_clean_failure(args: &[&str], needle: &str) {
    let out = selectinfer(args);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: expected {needle:?} in {stderr:?}");
}

/// Eight qa examples whose evaluation split is the last four, written to `dir`.
pub fn write_tiny_qa(dir: &Path) -> PathBuf {
    let p = dir.join("tiny_qa.jsonl");
    let lines: Vec<String> = (0..8)
        .map(|i| serde_json::json!({"id": format!("q{i}"), "context": "the word of a man", "question": "what is it", "answers": ["the word"]}).to_string())
        .collect();
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}
