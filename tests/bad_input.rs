//! Bad input to every command: each case must exit with status 1 (error) or 2
//! (usage), never a panic (101), an abort (134), a kill (137) or another signal;
//! name the bad value in its message; and leave the fixture folder exactly as it
//! was (no output, no temporary file, existing CSV and profile files unchanged).
//!
//! The fixture is a tiny random-weight model, a slice of it, a profile of it,
//! and hand-broken copies of each (the cases: slice metadata past the
//! layers, rankings with foreign or repeated neurons, block counts llama.cpp
//! aborts on, dimensions whose byte count wraps).

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use selectinfer::gguf::{GgufFile, GgufWriter, TensorSpec, Value};
use selectinfer::profile::{run_profile, ProfileRequest};
use selectinfer::select::{slice_model, SliceRequest, SliceSource};
use selectinfer::synth::SynthArch;
use selectinfer::tasks::{Split, Task};

struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn p(&self, name: &str) -> String {
        self.root.join(name).to_str().unwrap().to_string()
    }
}

/// Copies `src` to `dst` with its metadata edited.
fn edit_meta(src: &Path, dst: &Path, edit: impl FnOnce(&mut Vec<(String, Value)>)) {
    let g = GgufFile::read(src).unwrap();
    let mut md = g.metadata.clone();
    edit(&mut md);
    let mut w = GgufWriter::create(dst, &md, g.tensors.iter().map(TensorSpec::from).collect()).unwrap();
    for t in &g.tensors {
        w.write_tensor(&g.read_tensor_data(t).unwrap()).unwrap();
    }
    w.finish().unwrap();
}

fn set(md: &mut Vec<(String, Value)>, key: &str, v: Value) {
    md.retain(|(k, _)| k != key);
    md.push((key.to_string(), v));
}

fn list(md: &[(String, Value)], key: &str) -> Vec<u32> {
    md.iter().find(|(k, _)| k == key).unwrap().1.as_u64_list().unwrap().into_iter().map(|x| x as u32).collect()
}

/// Copies a profile folder with `task-qa.json` (and with `raw`, the raw file)
/// edited as JSON.
fn edit_profile(src: &Path, dst: &Path, file: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    std::fs::create_dir_all(dst.join("raw")).unwrap();
    for f in ["task-qa.json", "model.json"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    for e in std::fs::read_dir(src.join("raw")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join("raw").join(e.file_name())).unwrap();
    }
    let path = if file == "raw" { std::fs::read_dir(dst.join("raw")).unwrap().next().unwrap().unwrap().path() } else { dst.join(file) };
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let root = common::shared_dir().join("bad-input");
        std::fs::create_dir_all(root.join("a-folder")).unwrap();
        let tiny = root.join("tiny.gguf");
        std::fs::copy(common::tiny_model(SynthArch::Llama), &tiny).unwrap();
        let qa = common::write_tiny_qa(&root);
        let sliced = root.join("sliced.gguf");
        let req = SliceRequest {
            model: tiny.clone(),
            output: sliced.clone(),
            source: SliceSource::Random { seed: 1 },
            load: 0.5,
            static_share: 0.25,
            layers: Some(0..2),
            verify: false,
            source_sha256: None,
            down_layout: Default::default(),
        };
        slice_model(&req).unwrap();
        let prof = root.join("prof");
        run_profile(&ProfileRequest {
            model: tiny.clone(),
            task: Task::Qa,
            data: qa,
            split: Split::All,
            limit: None,
            max_tokens: None,
            gen_tokens: 2,
            out_dir: prof.clone(),
            threads: 2,
            sequences: 4,
            progress: false,
        })
        .unwrap();
        selectinfer::profile::ranking::merge_dir(&prof).unwrap();
        std::fs::write(root.join("results.csv"), "model,method\nold,row\n").unwrap();
        std::fs::write(root.join("notes.txt"), "not a model\n").unwrap();
        selectinfer::engine::quantize(&tiny, &root.join("tiny-bf16.gguf"), selectinfer::engine::TargetType::Bf16, 2).unwrap();

        // Broken slices (the cases).
        let s = |name: &str, edit: &dyn Fn(&mut Vec<(String, Value)>)| edit_meta(&sliced, &root.join(name), edit);
        s("slice-end-99.gguf", &|md| set(md, "selectinfer.layer_end", Value::U32(99)));
        s("slice-nff-10.gguf", &|md| set(md, "selectinfer.source_n_ff", Value::u32s([192; 10])));
        s("slice-kept-long.gguf", &|md| {
            let mut k = list(md, "selectinfer.blk.1.kept");
            k.extend([190, 191]);
            set(md, "selectinfer.blk.1.kept", Value::u32s(k));
        });
        s("slice-kept-99999.gguf", &|md| {
            let mut k = list(md, "selectinfer.blk.1.kept");
            k[50] = 99999;
            set(md, "selectinfer.blk.1.kept", Value::u32s(k));
        });
        s("slice-kept-twice.gguf", &|md| {
            let mut k = list(md, "selectinfer.blk.0.kept");
            k[60] = k[59];
            set(md, "selectinfer.blk.0.kept", Value::u32s(k));
        });
        s("slice-static-not-prefix.gguf", &|md| {
            let k = list(md, "selectinfer.blk.0.kept");
            set(md, "selectinfer.blk.0.static", Value::u32s([k[70], k[71]]));
        });
        s("slice-load-2.gguf", &|md| set(md, "selectinfer.load", Value::F64(2.0)));
        s("slice-static-neg.gguf", &|md| set(md, "selectinfer.static", Value::F64(-1.0)));
        s("slice-stray-key.gguf", &|md| set(md, "selectinfer.blk.7.kept", Value::u32s([1, 2])));
        // Broken models.
        let m = |name: &str, edit: &dyn Fn(&mut Vec<(String, Value)>)| edit_meta(&tiny, &root.join(name), edit);
        m("blocks-0.gguf", &|md| set(md, "llama.block_count", Value::U32(0)));
        m("blocks-1000.gguf", &|md| set(md, "llama.block_count", Value::U32(1000)));
        m("blocks-3.gguf", &|md| set(md, "llama.block_count", Value::U32(3)));
        m("ffn-width-wrong.gguf", &|md| set(md, "llama.feed_forward_length", Value::U32(100)));
        // A dimension of token_embd.weight raised by 2^57: its byte count wraps around.
        let mut bytes = std::fs::read(&tiny).unwrap();
        let name = b"token_embd.weight";
        let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len() + 4;
        let d0 = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        bytes[at..at + 8].copy_from_slice(&(d0 + (1u64 << 57)).to_le_bytes());
        std::fs::write(root.join("dims-wrap.gguf"), &bytes).unwrap();
        std::fs::write(root.join("truncated.gguf"), &bytes[..bytes.len() / 2]).unwrap();

        // Broken profiles.
        let r = |name: &str, file: &str, edit: &dyn Fn(&mut serde_json::Value)| edit_profile(&prof, &root.join(name), file, edit);
        r("prof-10-layers", "task-qa.json", &|v| {
            let l = v["layers"][0].clone();
            v["layers"] = serde_json::Value::Array(vec![l; 10]);
        });
        r("prof-99999", "task-qa.json", &|v| v["layers"][1]["order"][3] = 99999.into());
        r("prof-100-entries", "task-qa.json", &|v| {
            let order: Vec<serde_json::Value> = v["layers"][0]["order"].as_array().unwrap()[..100].to_vec();
            v["layers"][0]["order"] = order.into();
            let scores: Vec<serde_json::Value> = v["layers"][0]["scores"].as_array().unwrap()[..100].to_vec();
            v["layers"][0]["scores"] = scores.into();
        });
        r("prof-twice", "task-qa.json", &|v| v["layers"][0]["order"][5] = v["layers"][0]["order"][4].clone());
        r("prof-other-model", "task-qa.json", &|v| v["model"]["sha256"] = "0123456789abcdef".into());
        r("prof-shape", "task-qa.json", &|v| v["model"]["n_ff"] = serde_json::json!([100, 100]));
        r("prof-raw-1-layer", "raw", &|v| {
            for h in 0..2 {
                let first = v["halves"][h]["sums"][0].clone();
                v["halves"][h]["sums"] = serde_json::Value::Array(vec![first]);
            }
        });
        r("prof-raw-negative", "raw", &|v| v["halves"][0]["sums"][1][7] = (-3.5).into());
        let bad_json = root.join("prof-not-json");
        std::fs::create_dir_all(&bad_json).unwrap();
        std::fs::copy(prof.join("model.json"), bad_json.join("model.json")).unwrap();
        std::fs::write(bad_json.join("task-qa.json"), "{\"format\": ").unwrap();

        // Experiments whose mistakes only show across fields.
        let yaml = |name: &str, threads: i32, method: &str| {
            let text = format!(
                "threads: {threads}\nmodels:\n  - {{name: m, synth: llama-3.2-1b, profile: {}}}\ntasks:\n  - {{task: qa, examples: 2}}\nmethods:\n  - {method}\n",
                root.join("exp-profile").display()
            );
            std::fs::write(root.join(name), text).unwrap();
        };
        yaml("exp-static-over-load.yaml", 2, "{method: selectinfer, load: 0.5, static: 0.6, compute: 0.5}");
        yaml("exp-compute-over-load.yaml", 2, "{method: selectinfer, load: 0.5, static: 0.3, compute: 0.6}");
        yaml("exp-compute-under-static.yaml", 2, "{method: selectinfer, load: 0.7, static: 0.5, compute: 0.4}");
        yaml("exp-layers-past.yaml", 2, "{method: selectinfer, layers: \"4..20\"}");
        yaml("exp-threads-0.yaml", 0, "{method: reference}");
        yaml("exp-loading-under-static.yaml", 2, "{method: coreinfer-loading, load: 0.2, compute: 0.2}");
        Fixture { root }
    })
}

/// Every file under `dir` with its sha256.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                out.insert(rel + "/", String::new());
                stack.push(p);
            } else {
                out.insert(rel, selectinfer::profile::file_sha256(&p).unwrap());
            }
        }
    }
    out
}

/// Runs one case; returns what is wrong with its outcome, if anything.
fn check(f: &Fixture, args: &[String], needle: &str, stdin: &[u8]) -> Option<String> {
    let before = snapshot(&f.root);
    let mut child = Command::new(env!("CARGO_BIN_EXE_selectinfer"))
        .args(args)
        .current_dir(&f.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let after = snapshot(&f.root);
    let mut problems = Vec::new();
    match out.status.code() {
        Some(1 | 2) => {}
        other => problems.push(format!("exit status {other:?} ({})", out.status)),
    }
    if stderr.contains("panicked") || stderr.contains("GGML_ASSERT") {
        problems.push("panic or assert".into());
    }
    if !stderr.contains(needle) {
        problems.push(format!("no {needle:?} in the message"));
    }
    if before != after {
        let changed: Vec<&String> = before.keys().chain(after.keys()).filter(|k| before.get(*k) != after.get(*k)).collect();
        problems.push(format!("files changed: {changed:?}"));
    }
    (!problems.is_empty()).then(|| format!("{args:?}: {}\n  stderr: {}", problems.join("; "), stderr.trim()))
}

fn run_cases(cases: &[(&str, Vec<String>, &str)]) {
    let f = fixture();
    let failures: Vec<String> = cases.iter().filter_map(|(_, args, needle)| check(f, args, needle, b"")).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

fn args(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

#[test]
fn bad_model_files_are_refused_by_every_command() {
    let f = fixture();
    let out = f.p("out.gguf");
    let mut cases = Vec::new();
    for (file, needle) in [
        ("missing.gguf", "No such file"),
        ("notes.txt", "not a GGUF file"),
        ("truncated.gguf", "truncated"),
        ("blocks-0.gguf", "block_count is 0"),
        ("blocks-1000.gguf", "block_count is 1000"),
        ("blocks-3.gguf", "layer 2 has no tensors"),
        ("ffn-width-wrong.gguf", "n_ff 100"),
        ("dims-wrap.gguf", "overflow"),
    ] {
        let m = f.p(file);
        cases.push(("inspect", args(&["inspect", &m]), needle));
        if matches!(file, "blocks-0.gguf" | "blocks-1000.gguf" | "dims-wrap.gguf") {
            cases.push(("generate", args(&["generate", "-m", &m, "-p", "hi", "-n", "2"]), needle));
            cases.push(("slice", args(&["slice", "-m", &m, "--random", "-o", &out]), needle));
            cases.push(("convert", args(&["convert", &m, "--to", "q8_0", "-o", &out]), needle));
        }
    }
    cases.push(("bench", args(&["bench", "-m", &f.p("blocks-1000.gguf"), "--reps", "1", "--gen", "2"]), "block_count is 1000"));
    cases.push(("perplexity", args(&["perplexity", "-m", &f.p("dims-wrap.gguf")]), "overflow"));
    run_cases(&cases);
}

#[test]
fn broken_slice_metadata_is_refused_with_the_key_named() {
    let f = fixture();
    let mut cases = Vec::new();
    for (file, needle) in [
        ("slice-end-99.gguf", "0..99"),
        ("slice-nff-10.gguf", "source_n_ff has 10 entries"),
        ("slice-kept-long.gguf", "blk.1.kept has 98 entries"),
        ("slice-kept-99999.gguf", "neuron 99999"),
        ("slice-kept-twice.gguf", "twice"),
        ("slice-static-not-prefix.gguf", "blk.0.static is not the first"),
        ("slice-load-2.gguf", "(gamma) is 2"),
        ("slice-static-neg.gguf", "(delta) is -1"),
        ("slice-stray-key.gguf", "selectinfer.blk.7.kept"),
    ] {
        let m = f.p(file);
        cases.push(("inspect", args(&["inspect", &m, "--json"]), needle));
        if matches!(file, "slice-end-99.gguf" | "slice-nff-10.gguf" | "slice-kept-99999.gguf") {
            cases.push(("generate", args(&["generate", "-m", &m, "-p", "hi", "-n", "2", "--compute", "0.3"]), needle));
            cases.push(("bench", args(&["bench", "-m", &m, "--reps", "1", "--gen", "2", "--compute-list", "0.3"]), needle));
            cases.push((
                "eval",
                args(&["eval", "-m", &m, "--task", "qa", "--method", "selectinfer", "--compute", "0.3", "--data", &f.p("tiny_qa.jsonl"), "--out", &f.p("results.csv")]),
                needle,
            ));
            cases.push(("chat", args(&["chat", "-m", &m, "--compute", "0.3"]), needle));
        }
    }
    run_cases(&cases);
}

#[test]
fn broken_profiles_are_refused_by_slice_and_merge() {
    let f = fixture();
    let tiny = f.p("tiny.gguf");
    let out = f.p("out.gguf");
    let slice = |prof: &str| args(&["slice", "-m", &tiny, "--profile", &f.p(prof), "--task", "qa", "--load", "0.5", "--static", "0.2", "-o", &out]);
    let cases = vec![
        ("10 layers", slice("prof-10-layers"), "10 layers ranked, but the model has 2"),
        ("index 99999", slice("prof-99999"), "neuron 99999, outside 0..192"),
        ("100 entries", slice("prof-100-entries"), "ranks 100 neurons, but the layer has 192"),
        ("twice", slice("prof-twice"), "twice"),
        ("other model", slice("prof-other-model"), "is a profile of"),
        ("shape", slice("prof-shape"), "ranks 192 neurons, but the layer has 100"),
        ("not json", slice("prof-not-json"), "task-qa.json"),
        ("missing", slice("no-such-profile"), "missing"),
        ("merge 1 layer", args(&["profile", "merge", &f.p("prof-raw-1-layer")]), "has sums of 1 layers, but the model has 2"),
        ("merge negative", args(&["profile", "merge", &f.p("prof-raw-negative")]), "sum -3.5"),
        ("overlap 1 layer", args(&["profile", "overlap", &f.p("prof-raw-1-layer")]), "has sums of 1 layers"),
        ("chat ranking", args(&["chat", "-m", &tiny, "--profile", &f.p("prof-99999"), "--task", "qa", "--load", "0.5", "--cache-dir", &f.p("a-folder")]), "99999"),
    ];
    run_cases(&cases);
}

#[test]
fn options_that_would_abort_or_mislead_are_refused() {
    let f = fixture();
    let (tiny, sliced, qa, csv) = (f.p("tiny.gguf"), f.p("sliced.gguf"), f.p("tiny_qa.jsonl"), f.p("results.csv"));
    let gen = |extra: &[&str]| [args(&["generate", "-m", &tiny, "-p", "hi", "-n", "2"]), args(extra)].concat();
    let bench = |extra: &[&str]| [args(&["bench", "-m", &tiny]), args(extra)].concat();
    let eval = |extra: &[&str]| [args(&["eval", "-m", &tiny, "--task", "qa", "--method", "reference", "--data", &qa, "--out", &csv]), args(extra)].concat();
    let cases = vec![
        ("prompt-tokens 0", bench(&["--prompt-tokens", "0"]), "--prompt-tokens"),
        ("reps 0", bench(&["--reps", "0"]), "--reps"),
        ("gen 0", bench(&["--gen", "0"]), "--gen"),
        ("gen 1", bench(&["--gen", "1"]), "at least 2"),
        ("compute-list 1.5", bench(&["--compute-list", "1.0,1.5"]), "1.5 is not a share"),
        ("prompt-tokens beyond ctx", bench(&["--prompt-tokens", "100000", "--reps", "1", "--gen", "2"]), "exceed the context"),
        ("bench threads 0", bench(&["--threads", "0"]), "--threads"),
        ("bench format xml", bench(&["-o", "xml"]), "invalid value 'xml'"),
        ("bench json and csv", bench(&["--json", "-o", "csv"]), "cannot be used with"),
        ("temp NaN", gen(&["--temp", "NaN"]), "NaN"),
        ("temp inf", gen(&["--temp", "inf"]), "inf"),
        ("temp -1", gen(&["--temp=-1"]), "-1 is not a temperature"),
        ("threads -3", gen(&["--threads=-3"]), "\"-3\" is not a thread count"),
        ("ctx 0", gen(&["--ctx", "0"]), "context length"),
        ("n 0", args(&["generate", "-m", &tiny, "-p", "hi", "-n", "0"]), "at least 1"),
        ("compute 1.5", gen(&["--compute", "1.5"]), "1.5 is not a share"),
        ("token-share 0", gen(&["--compute", "0.5", "--token-share", "0"]), "0 is not a share"),
        ("compute-layers sliced", args(&["generate", "-m", &sliced, "-p", "hi", "--compute", "0.3", "--compute-layers", "0..1"]), "--compute-layers applies to a file that is not sliced"),
        ("compute over load", args(&["generate", "-m", &sliced, "-p", "hi", "--compute", "0.9"]), "exceeds the loaded share"),
        ("compute-layers past", gen(&["--compute", "0.5", "--compute-layers", "0..9"]), "outside the model's 2 layers"),
        ("empty prompt", args(&["generate", "-m", &tiny, "-p", ""]), "the prompt is empty"),
        ("mem-budget overflow", args(&["chat", "-m", &tiny, "--mem-budget", "99999999999GiB"]), "more than any machine"),
        ("mem-budget 0", args(&["chat", "-m", &tiny, "--mem-budget", "0"]), "no memory at all"),
        ("chat load 1.5", args(&["chat", "-m", &tiny, "--load", "1.5"]), "1.5 is not a share"),
        ("chat static over load", args(&["chat", "-m", &tiny, "--static", "0.9", "--load", "0.5"]), "--static (delta) 0.9 exceeds --load (gamma) 0.5"),
        ("chat load on sliced", args(&["chat", "-m", &sliced, "--load", "0.5"]), "already sliced"),
        ("slice load 0", args(&["slice", "-m", &tiny, "--random", "--load", "0", "-o", &f.p("o.gguf")]), "0 is not a share"),
        ("slice static over load", args(&["slice", "-m", &tiny, "--random", "--load", "0.5", "--static", "0.9", "-o", &f.p("o.gguf")]), "--static (delta) must be in [0, --load = 0.5]"),
        ("slice layers past", args(&["slice", "-m", &tiny, "--random", "--layers", "1..5", "-o", &f.p("o.gguf")]), "outside the model's 2 layers"),
        ("slice sliced", args(&["slice", "-m", &sliced, "--random", "-o", &f.p("o.gguf")]), "already sliced"),
        ("slice bf16 neurons", args(&["slice", "-m", &f.p("tiny-bf16.gguf"), "--random", "--down-layout", "neurons", "-o", &f.p("o.gguf")]), "neuron-major ffn_down of BF16 is not supported"),
        ("perplexity chunks 0", args(&["perplexity", "-m", &tiny, "--chunks", "0"]), "--chunks"),
        ("perplexity ctx 0", args(&["perplexity", "-m", &tiny, "--ctx", "0"]), "context length"),
        ("perplexity missing data", args(&["perplexity", "-m", &tiny, "--data", &f.p("none.txt")]), "none.txt"),
        ("eval mem-cap 0", eval(&["--mem-cap", "0"]), "no memory at all"),
        ("eval mem-cap 1MiB", eval(&["--mem-cap", "1MiB"]), "the cap must be at least"),
        ("eval limit 0", eval(&["--limit", "0"]), "--limit"),
        ("eval shots", eval(&["--shots", "50"]), "for 50 shots"),
        ("eval missing data", [args(&["eval", "-m", &tiny, "--task", "qa", "--method", "reference", "--data", &f.p("none.jsonl"), "--out", &csv])].concat(), "none.jsonl"),
        ("eval method vs file", eval(&["--compute", "0.5"]), "reference"),
        ("profile limit 0", args(&["profile", "-m", &tiny, "--task", "qa", "--data", &qa, "--limit", "0", "-o", &f.p("p")]), "--limit"),
        ("profile -o file", args(&["profile", "-m", &tiny, "--task", "qa", "--data", &qa, "-o", &f.p("notes.txt")]), "is not a folder"),
        ("overlap top 2", args(&["profile", "overlap", &f.p("prof"), "--top", "2"]), "2 is not a share"),
        ("synth type", args(&["synth", "--shape", "llama-3.2-1b", "--type", "q4", "-o", &f.p("s.gguf")]), "--type must be"),
        ("convert threads", args(&["convert", &tiny, "--to", "f16", "-o", &f.p("c.gguf"), "-t", "0"]), "--threads"),
    ];
    run_cases(&cases);
}

#[test]
fn outputs_that_are_not_regular_files_are_refused() {
    let f = fixture();
    let (tiny, qa, csv) = (f.p("tiny.gguf"), f.p("tiny_qa.jsonl"), f.p("results.csv"));
    let cases = vec![
        ("convert /dev/null", args(&["convert", &tiny, "--to", "f16", "-o", "/dev/null"]), "/dev/null is not a regular file"),
        ("convert /dev/full", args(&["convert", &tiny, "--to", "q8_0", "-o", "/dev/full"]), "/dev/full is not a regular file"),
        ("slice /dev/full", args(&["slice", "-m", &tiny, "--random", "-o", "/dev/full"]), "/dev/full is not a regular file"),
        ("slice folder", args(&["slice", "-m", &tiny, "--random", "-o", &f.p("a-folder")]), "is a folder"),
        ("convert missing folder", args(&["convert", &tiny, "--to", "q8_0", "-o", &f.p("no-dir/x.gguf")]), "does not exist"),
        ("slice missing folder", args(&["slice", "-m", &tiny, "--random", "-o", &f.p("no-dir/x.gguf")]), "does not exist"),
        ("synth /dev/null", args(&["synth", "--shape", "llama-3.2-1b", "-o", "/dev/null"]), "not a regular file"),
        (
            "eval outputs missing folder",
            args(&["eval", "-m", &tiny, "--task", "qa", "--method", "reference", "--data", &qa, "--limit", "1", "--out", &csv, "--outputs", &f.p("no-dir/o.jsonl")]),
            "does not exist",
        ),
        ("eval out folder", args(&["eval", "-m", &tiny, "--task", "qa", "--method", "reference", "--data", &qa, "--out", &f.p("a-folder")]), "is a folder"),
        ("perplexity out /dev/null", args(&["perplexity", "-m", &tiny, "--out", "/dev/null"]), "not a regular file"),
    ];
    run_cases(&cases);
}

#[test]
fn experiment_dry_run_catches_cross_field_mistakes() {
    let f = fixture();
    let exp = |file: &str| args(&["experiment", &f.p(file), "--dry-run", "--out-dir", &f.p("exp-out")]);
    let cases = vec![
        ("static over load", exp("exp-static-over-load.yaml"), "static (delta) 0.6 exceeds load (gamma) 0.5"),
        ("compute over load", exp("exp-compute-over-load.yaml"), "compute (phi) 0.6 exceeds load (gamma) 0.5"),
        ("compute under static", exp("exp-compute-under-static.yaml"), "compute (phi) 0.4 is below static (delta) 0.5"),
        ("layers past", exp("exp-layers-past.yaml"), "layers 4..20 go past the 16 layers"),
        ("threads 0", exp("exp-threads-0.yaml"), "threads is 0"),
        ("loading under static", exp("exp-loading-under-static.yaml"), "static (delta) 0.3 exceeds load (gamma) 0.2"),
        ("missing file", exp("no-such.yaml"), "no-such.yaml"),
    ];
    run_cases(&cases);
}

/// One bad line refuses that turn only: the conversation goes on.
#[test]
fn chat_refuses_a_bad_turn_and_keeps_the_session() {
    let f = fixture();
    let mut input = b"\xff\xfe not utf-8\n".to_vec();
    input.extend(vec![b'a'; 300 * 1024]);
    input.extend(b"\n/stats\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_selectinfer"))
        .args(["chat", "-m", &f.p("tiny.gguf"), "-n", "2", "--ctx", "64"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("not valid UTF-8; turn refused"), "{stderr}");
    assert!(stderr.contains("more than the 262144 a turn may have; turn refused"), "{stderr}");
    assert!(stderr.contains("no turn yet"), "/stats still answers after the refused turns: {stderr}");
}

/// Bundled data (data/...) is found from the binary's repository when run elsewhere.
#[test]
fn bundled_data_is_found_from_another_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_selectinfer"))
        .args(["perplexity", "-m", &fixture().p("tiny.gguf"), "--ctx", "64", "--chunks", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("perplexity "), "{stdout}");
}
