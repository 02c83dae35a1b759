//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use std::sync::atomic::Ordering;

use selectinfer::engine::{LoadOptions, Model, Session, SessionOptions, TensorObserver, Token};
use selectinfer::model::ModelInfo;
use selectinfer::fit::mask::NeuronMask;
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

/// Decode logits of `continuation` after `prompt` on the dense engine, with every
/// neuron outside `sets` (per layer; `None`: dense) zeroed through the eval callback
/// after the (dense) prefill: the reference for selective computation.
pub fn masked_logits(path: &Path, prompt: &str, continuation: &[&str], sets: Option<Vec<Option<Vec<u32>>>>) -> Vec<Vec<f32>> {
    let model = Model::load(path, &LoadOptions::default()).unwrap();
    let act = ModelInfo::read(path).unwrap().ffn_activation.unwrap();
    let mask = sets.map(|s| NeuronMask::new(act, s));
    let switch = mask.as_ref().map(NeuronMask::switch);
    if let Some(sw) = &switch {
        sw.store(false, Ordering::Relaxed);
    }
    let observer = mask.map(|m| Box::new(m) as Box<dyn TensorObserver>);
    let mut s = Session::new(&model, SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer }).unwrap();
    s.decode(&model.tokenize(prompt, true, false), false).unwrap();
    if let Some(sw) = &switch {
        sw.store(true, Ordering::Relaxed);
    }
    continuation
        .iter()
        .map(|w| {
            let t: Vec<Token> = model.tokenize(w, false, false);
            s.decode(&t[..1], false).unwrap();
            s.logits(-1).to_vec()
        })
        .collect()
}

/// The largest absolute difference between `a` and `b`, relative to `a`'s largest value.
pub fn max_rel_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    let scale = a.iter().flatten().fold(1f32, |m, x| m.max(x.abs()));
    a.iter().flatten().zip(b.iter().flatten()).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max) / scale
}

/// A translate file of 80 examples (its profiling split is the first half), in
/// `dir`, and a profile of the tiny model of `arch` made from it: (model, profile, data).
pub fn translate_profile(dir: &Path, arch: SynthArch) -> (PathBuf, PathBuf, PathBuf) {
    let data = dir.join("t.jsonl");
    let lines: Vec<String> =
        (0..80).map(|i| serde_json::json!({"src": format!("the {i} word of a man is"), "ref": format!("a {} man", i * 7)}).to_string()).collect();
    std::fs::write(&data, lines.join("\n")).unwrap();
    let profile = dir.join("profile");
    let model = tiny_model(arch);
    let req = selectinfer::profile::ProfileRequest {
        model: model.clone(),
        task: selectinfer::tasks::Task::Translate,
        data: data.clone(),
        split: selectinfer::tasks::Split::Profile,
        limit: Some(6),
        max_tokens: None,
        gen_tokens: 0,
        out_dir: profile.clone(),
        threads: 2,
        sequences: 4,
        progress: false,
    };
    selectinfer::profile::run_profile(&req).unwrap();
    selectinfer::profile::ranking::merge_dir(&profile).unwrap();
    (model, profile, data)
}

/// A slice of the translate profile's model with load 0.6, static 0.2 over layers
/// 0..2 and the extra `slice` arguments, written to `dir/name`: the paper's selection
/// (`--compensate none`) unless `extra` names a compensation.
pub fn translate_slice(dir: &Path, model: &Path, profile: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut args = vec!["slice", "-m", model.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--task", "translate"];
    args.extend(["--load", "0.6", "--static", "0.2", "--layers", "0..2", "-o", out.to_str().unwrap()]);
    if !extra.contains(&"--compensate") {
        args.extend(["--compensate", "none"]);
    }
    args.extend(extra);
    let o = selectinfer(&args);
    assert!(o.status.success(), "{}", text(&o).1);
    out
}

/// The file's sha256, in hex.
pub fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// Layer `l`'s `ffn_down` bias as llama.cpp holds it in host memory.
pub fn down_bias_in_memory(model: &Model, l: usize) -> Vec<f32> {
    model.host_tensor_bytes(&format!("blk.{l}.ffn_down.bias")).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Every activation row entering ffn_down during the prompt's prefill by a plain
/// session of `model`, per layer, rows of the layer's width one after another.
pub fn prompt_ffn_rows(model: &Model, prompt: &str) -> Vec<Vec<f32>> {
    prompt_ffn_rows_batched(model, prompt, 64)
}

/// [`prompt_ffn_rows`] with the prompt decoded in batches of `n_batch` tokens.
pub fn prompt_ffn_rows_batched(model: &Model, prompt: &str, n_batch: u32) -> Vec<Vec<f32>> {
    prompt_rows(model, prompt, n_batch, false)
}

/// The rows of the prompt's last `n_batch` tokens (all of a shorter prompt), decoded
/// as one batch after the tokens before them (what `--decode-refit` fits).
pub fn prompt_ffn_rows_last_batch(model: &Model, prompt: &str, n_batch: u32) -> Vec<Vec<f32>> {
    prompt_rows(model, prompt, n_batch, true)
}

fn prompt_rows(model: &Model, prompt: &str, n_batch: u32, last_batch: bool) -> Vec<Vec<f32>> {
    type Shared = std::sync::Arc<std::sync::Mutex<(bool, Vec<Vec<f32>>)>>;
    struct Rows(Shared, String);
    impl TensorObserver for Rows {
        fn wants(&mut self, name: &str) -> bool {
            name.starts_with(&self.1)
        }
        fn observe(&mut self, t: selectinfer::engine::ObservedTensor<'_>) {
            let l: usize = t.name[self.1.len()..].parse().unwrap();
            let mut r = self.0.lock().unwrap();
            if r.0 {
                r.1[l].extend_from_slice(t.data);
            }
        }
    }
    let info = ModelInfo::from_gguf(model.gguf()).unwrap();
    let rows: Shared = std::sync::Arc::new(std::sync::Mutex::new((!last_batch, vec![Vec::new(); info.n_layer])));
    let prefix = format!("{}-", info.ffn_activation.unwrap().node_name());
    let mut s = Session::new(model, SessionOptions { n_ctx: 128, n_batch, threads: 2, observer: Some(Box::new(Rows(rows.clone(), prefix))) }).unwrap();
    let tokens = model.tokenize(prompt, true, false);
    if last_batch {
        s.prefill_last_batch_whole(&tokens, |_| rows.lock().unwrap().0 = true).unwrap();
    } else {
        s.decode(&tokens, false).unwrap();
    }
    drop(s);
    let r = rows.lock().unwrap().1.clone();
    r
}

/// Every file under `dir`, recursively, with its bytes (to check that a command
/// changed nothing, or only what it should).
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// A random slice of `model` at gamma 0.7, delta 0.3 over its two layers, written
/// to `out` once per test binary: tests of one binary run in parallel and share
/// these files, so one writes and the others wait.
#[allow(dead_code)]
pub fn random_slice(model: &Path, out: &Path, seed: u64) -> PathBuf {
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    if !out.exists() {
        let req = selectinfer::select::SliceRequest {
            model: model.into(),
            output: out.into(),
            source: selectinfer::select::SliceSource::Random { seed },
            load: 0.7,
            static_share: 0.3,
            layers: Some(0..2),
            verify: true,
            source_sha256: None,
            down_layout: Default::default(),
        };
        selectinfer::select::slice_model(&req).unwrap_or_else(|e| panic!("{}: {e:#}", out.display()));
    }
    out.into()
}
