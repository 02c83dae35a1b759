//! Fuzzing without cargo-fuzz (which needs a nightly toolchain): a seeded mutator
//! over the parsers that read files selectinfer did not necessarily write.
//!
//! Targets, each a property "any input gives `Ok` or a clean `Err`, never a panic",
//! plus the consequences a successful parse promises:
//! - `gguf`: bytes -> [`GgufFile::read`] -> model facts, slice metadata, compute plan.
//! - `slice_meta`: the `selectinfer.*` keys of a sliced file, mutated as values
//!   (types, boundaries, list lengths, duplicates) -> [`SliceMeta::from_gguf`] ->
//!   compute plan (which indexes every list by the layer range read from the file).
//! - `ranking`: ranking JSON -> [`read_ranking`] -> fingerprint check -> the
//!   loading mask of every layer (which indexes by every ranked neuron).
//! - `raw`: raw statistics JSON -> [`read_raw_dir`] -> merge; the merged rankings
//!   must pass the ranking checks.
//!
//! `replay_corpus` (in the default run) feeds every file under tests/fuzz/<target>/
//! to its target. The `fuzz_*` tests are `#[ignore]`d long runs:
//! `FUZZ_SECONDS=600 cargo test --release --test fuzz -- --ignored` (docs/fuzzing.md).
//! A panicking input is written to tests/fuzz/<target>/crash-<hash> and fails the run.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use selectinfer::compute::{ComputeOptions, ComputePlan};
use selectinfer::gguf::{GgufFile, Value, ValueType};
use selectinfer::model::ModelInfo;
use selectinfer::profile::ranking::{self, read_ranking, read_raw_dir, ModelFingerprint};
use selectinfer::select::{keep_from_profile, SliceMeta};
use selectinfer::util::rng::SplitMix64;

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz").join(target)
}

/// The sliced seed model every `slice_meta` input edits.
fn sliced_seed() -> &'static GgufFile {
    static G: OnceLock<GgufFile> = OnceLock::new();
    G.get_or_init(|| GgufFile::read(corpus("gguf").join("sliced.gguf")).expect("tests/fuzz/gguf/sliced.gguf"))
}

/// The fingerprint of the seed model that the ranking seeds were made for.
fn seed_fingerprint() -> ModelFingerprint {
    let text = std::fs::read_to_string(corpus("ranking").join("task-qa.json")).expect("ranking seed");
    let r: ranking::Ranking = serde_json::from_str(&text).expect("ranking seed parses");
    r.model
}

fn plan_options() -> [ComputeOptions; 2] {
    [
        ComputeOptions { compute: 0.3, token_share: 0.2, layers: None, no_static: false },
        ComputeOptions { compute: 1.0, token_share: 1.0, layers: Some(0..1), no_static: true },
    ]
}

/// Everything selectinfer does with a header it accepted, short of running it.
fn use_header(g: &GgufFile) {
    for t in &g.tensors {
        let _ = t.n_bytes();
    }
    if let Ok(info) = ModelInfo::from_gguf(g) {
        assert_eq!(info.n_ff.len(), info.n_layer);
        if let Ok(Some(meta)) = SliceMeta::from_gguf(g) {
            // What inspect and compute do with it.
            let _ = meta.source_ffn_bytes.saturating_sub(info.ffn_bytes);
            for o in plan_options() {
                if let Ok(plan) = ComputePlan::for_model(g, &o) {
                    for lp in plan.layers.iter().flatten() {
                        assert!(lp.static_positions.iter().all(|&p| (p as usize) < lp.n_loaded));
                        assert!(plan.computed(lp) <= lp.n_loaded);
                    }
                }
            }
        }
    }
}

fn target_gguf(bytes: &[u8], scratch: &Path) {
    let p = scratch.join("in.gguf");
    std::fs::write(&p, bytes).unwrap();
    if let Ok(g) = GgufFile::read(&p) {
        use_header(&g);
    }
}

/// A slice_meta input: JSON `{key: value}` set on the sliced seed (null removes).
fn target_slice_meta(bytes: &[u8], _scratch: &Path) {
    let Ok(serde_json::Value::Object(edits)) = serde_json::from_slice::<serde_json::Value>(bytes) else { return };
    let mut g = sliced_seed().clone();
    for (k, v) in edits {
        g.metadata.retain(|(key, _)| *key != k);
        if let Some(v) = to_value(&v) {
            g.metadata.push((k, v));
        }
    }
    use_header(&g);
}

fn to_value(v: &serde_json::Value) -> Option<Value> {
    use serde_json::Value as J;
    Some(match v {
        J::Null => return None,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Value::U64(u),
            (_, Some(i), _) => Value::I64(i),
            (_, _, f) => Value::F64(f.unwrap_or(0.0)),
        },
        J::String(s) => Value::String(s.clone()),
        J::Array(items) => {
            let vals: Vec<Value> = items.iter().filter_map(to_value).collect();
            let ty = vals.first().map_or(ValueType::U32, Value::value_type);
            Value::Array(ty, vals.into_iter().filter(|x| x.value_type() == ty).collect())
        }
        J::Object(_) => Value::String("object".into()),
    })
}

fn target_ranking(bytes: &[u8], scratch: &Path) {
    let p = scratch.join("task-qa.json");
    std::fs::write(&p, bytes).unwrap();
    let Ok(r) = read_ranking(&p, scratch) else { return };
    if ranking::check_model(&p, &r.model, &seed_fingerprint()).is_err() {
        return;
    }
    for l in &r.layers {
        for (gamma, delta) in [(0.7, 0.3), (1.0, 0.0), (0.01, 0.01)] {
            let k = keep_from_profile(l, l, gamma, delta);
            let mut s = k.kept.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), k.kept.len(), "a kept neuron twice");
        }
    }
}

fn target_raw(bytes: &[u8], scratch: &Path) {
    let raw = scratch.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(raw.join("a.json"), bytes).unwrap();
    let Ok(raws) = read_raw_dir(scratch) else { return };
    let (tasks, model) = ranking::merge(&raws);
    for r in tasks.iter().chain([&model]) {
        selectinfer::profile::validate::check_ranking(Path::new("merged"), r).expect("a merge of valid raw files is a valid ranking");
    }
}

fn read_raw_dir_of(file: &Path, scratch: &Path) -> Vec<ranking::RawProfile> {
    let dir = scratch.join("seed-raw");
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::copy(file, dir.join("raw/a.json")).unwrap();
    read_raw_dir(&dir).unwrap()
}

type Target = fn(&[u8], &Path);

fn target(name: &str) -> Target {
    match name {
        "gguf" => target_gguf,
        "slice_meta" => target_slice_meta,
        "ranking" => target_ranking,
        "raw" => target_raw,
        _ => unreachable!(),
    }
}

const TARGETS: [&str; 4] = ["gguf", "slice_meta", "ranking", "raw"];

fn seeds(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(corpus(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    v.sort();
    v
}

/// Runs `input` through a target; a panic comes back as its message.
fn run_one(t: Target, input: &[u8], scratch: &Path) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| t(input, scratch))).map_err(|e| {
        e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
    })
}

#[test]
fn replay_corpus() {
    let scratch = tempfile::tempdir().unwrap();
    // The seeds are valid where they should be, so mutations start from inputs that get far.
    assert!(SliceMeta::from_gguf(sliced_seed()).unwrap().is_some());
    let seed = corpus("ranking").join("task-qa.json");
    let r = read_ranking(&seed, &corpus("ranking")).unwrap();
    ranking::check_model(&seed, &r.model, &seed_fingerprint()).unwrap();
    assert_eq!(read_raw_dir_of(&corpus("raw").join("raw.json"), scratch.path()).len(), 1);
    let mut failed = Vec::new();
    for name in TARGETS {
        let all = seeds(name);
        assert!(!all.is_empty(), "no seeds for {name}");
        for (path, bytes) in all {
            if let Err(msg) = run_one(target(name), &bytes, scratch.path()) {
                failed.push(format!("{}: {msg}", path.display()));
            }
        }
    }
    assert!(failed.is_empty(), "inputs that panic:\n{}", failed.join("\n"));
}

/// Interesting integers for overwriting fields.
const EDGES: [u64; 12] = [0, 1, 2, 0x7f, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, 1 << 57, 0x7fff_ffff_ffff_ffff, u64::MAX, 512];

fn mutate_bytes(rng: &mut SplitMix64, input: &[u8], header_len: usize) -> Vec<u8> {
    let mut b = input.to_vec();
    let n = 1 + rng.next_u64() % 4;
    for _ in 0..n {
        if b.is_empty() {
            b.push(0);
        }
        // Mostly inside the header, where the parsing is.
        let span = if rng.next_u64() % 8 == 0 { b.len() } else { header_len.clamp(1, b.len()) };
        let at = (rng.next_u64() % span as u64) as usize;
        match rng.next_u64() % 6 {
            0 => b[at] ^= 1 << (rng.next_u64() % 8),
            1 => b[at] = rng.next_u64() as u8,
            2 => {
                let v = EDGES[(rng.next_u64() % EDGES.len() as u64) as usize].to_le_bytes();
                let w = [1usize, 2, 4, 8][(rng.next_u64() % 4) as usize];
                for (i, x) in v[..w].iter().enumerate() {
                    if at + i < b.len() {
                        b[at + i] = *x;
                    }
                }
            }
            3 => {
                let len = (rng.next_u64() % 16) as usize;
                b.drain(at..(at + len).min(b.len()));
            }
            4 => {
                let len = (rng.next_u64() % 16) as usize;
                let chunk: Vec<u8> = b[at..(at + len).min(b.len())].to_vec();
                b.splice(at..at, chunk);
            }
            _ => b.truncate(at),
        }
    }
    b
}

/// A JSON-aware mutation: one node of the document replaced by an edge value, or
/// an array shortened, lengthened or given a duplicate; else bytes.
fn mutate_json(rng: &mut SplitMix64, input: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(input) else { return mutate_bytes(rng, input, input.len()) };
    let mut nodes = 0usize;
    count_nodes(&v, &mut nodes);
    let pick = (rng.next_u64() % nodes.max(1) as u64) as usize;
    let choice = rng.next_u64();
    let mut i = 0usize;
    edit_node(&mut v, pick, &mut i, choice);
    serde_json::to_vec(&v).unwrap()
}

fn count_nodes(v: &serde_json::Value, n: &mut usize) {
    *n += 1;
    match v {
        serde_json::Value::Array(a) => a.iter().for_each(|x| count_nodes(x, n)),
        serde_json::Value::Object(o) => o.values().for_each(|x| count_nodes(x, n)),
        _ => {}
    }
}

fn edit_node(v: &mut serde_json::Value, pick: usize, i: &mut usize, choice: u64) -> bool {
    use serde_json::Value as J;
    if *i == pick {
        let edge = EDGES[(choice >> 8) as usize % EDGES.len()];
        *v = match (choice % 9, &*v) {
            (0, J::Array(a)) if !a.is_empty() => J::Array(a[..a.len() / 2].to_vec()),
            (1, J::Array(a)) if !a.is_empty() => {
                let mut a = a.clone();
                a.push(a[0].clone());
                J::Array(a)
            }
            (2, J::Array(a)) if a.len() > 1 => {
                let mut a = a.clone();
                a[1] = a[0].clone();
                J::Array(a)
            }
            (3, J::Array(a)) => J::Array(a.iter().cycle().take(a.len() * 5).cloned().collect()),
            (4, _) => J::from(edge),
            (5, _) => J::from(-(edge as i64 % 1000) - 1),
            (6, _) => J::from(edge as f64 * 0.5 + 0.25),
            (7, _) => J::Null,
            _ => J::from(format!("x{edge}")),
        };
        return true;
    }
    *i += 1;
    match v {
        J::Array(a) => a.iter_mut().any(|x| edit_node(x, pick, i, choice)),
        J::Object(o) => o.values_mut().any(|x| edit_node(x, pick, i, choice)),
        _ => false,
    }
}

/// Mutates seeds of `name` for `FUZZ_SECONDS` (default 60); panicking inputs are
/// saved as crash files and fail the test.
fn fuzz(name: &str) {
    let secs: u64 = std::env::var("FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let t = target(name);
    let pool: Vec<Vec<u8>> = seeds(name).into_iter().map(|s| s.1).collect();
    let scratch = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(seed);
    let (t0, mut runs, mut crashes) = (Instant::now(), 0u64, Vec::new());
    while t0.elapsed() < Duration::from_secs(secs) {
        let base = &pool[(rng.next_u64() % pool.len() as u64) as usize];
        let mut input = base.clone();
        for _ in 0..1 + rng.next_u64() % 3 {
            input = match name {
                "gguf" => mutate_bytes(&mut rng, &input, header_len(&input)),
                _ if rng.next_u64() % 10 == 0 => mutate_bytes(&mut rng, &input, input.len()),
                _ => mutate_json(&mut rng, &input),
            };
        }
        runs += 1;
        if let Err(msg) = run_one(t, &input, scratch.path()) {
            let hash = selectinfer::profile::sha256_hex(&input);
            let path = corpus(name).join(format!("crash-{}", &hash[..12]));
            std::fs::write(&path, &input).unwrap();
            crashes.push(format!("{}: {msg}", path.display()));
        }
    }
    eprintln!("fuzz {name}: {runs} inputs in {secs} s (seed {seed}), {} panics", crashes.len());
    assert!(crashes.is_empty(), "inputs that panic:\n{}", crashes.join("\n"));
}

/// Bytes before the tensor data of a GGUF (or all of it when it does not parse).
fn header_len(b: &[u8]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.gguf");
    std::fs::write(&p, b).unwrap();
    GgufFile::read(&p).map_or(b.len(), |g| g.data_offset as usize)
}

#[test]
#[ignore = "long-running fuzzer; FUZZ_SECONDS=600 (docs/fuzzing.md)"]
fn fuzz_gguf() {
    fuzz("gguf");
}

#[test]
#[ignore = "long-running fuzzer; FUZZ_SECONDS=600 (docs/fuzzing.md)"]
fn fuzz_slice_meta() {
    fuzz("slice_meta");
}

#[test]
#[ignore = "long-running fuzzer; FUZZ_SECONDS=600 (docs/fuzzing.md)"]
fn fuzz_ranking() {
    fuzz("ranking");
}

#[test]
#[ignore = "long-running fuzzer; FUZZ_SECONDS=600 (docs/fuzzing.md)"]
fn fuzz_raw() {
    fuzz("raw");
}

/// Writes the seed corpus (run once; the files are committed).
#[test]
#[ignore = "writes tests/fuzz/*: run only to remake the seeds"]
fn make_seeds() {
    use selectinfer::gguf::GgmlType;
    use selectinfer::synth::{write_model, SynthArch, SynthSpec};
    for t in TARGETS {
        std::fs::create_dir_all(corpus(t)).unwrap();
    }
    let spec = SynthSpec { n_layer: 2, n_embd: 32, n_ff: vec![64], n_head: 2, n_head_kv: 1, head_dim: 16, n_words: 4, matrix_type: GgmlType::F16, ..SynthSpec::tiny(SynthArch::Llama) };
    let model = corpus("gguf").join("tiny.gguf");
    write_model(&spec, &model).unwrap();
    let req = selectinfer::select::SliceRequest {
        model: model.clone(),
        output: corpus("gguf").join("sliced.gguf"),
        source: selectinfer::select::SliceSource::Random { seed: 3 },
        load: 0.5,
        static_share: 0.25,
        layers: Some(0..2),
        verify: false,
        source_sha256: None,
        down_layout: Default::default(),
    };
    selectinfer::select::slice_model(&req).unwrap();
    // A header-only copy: every tensor then lies past the end.
    let g = GgufFile::read(&model).unwrap();
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(corpus("gguf").join("header-only.gguf"), &bytes[..g.data_offset as usize]).unwrap();

    // Raw statistics with a fingerprint of tiny.gguf, and their rankings.
    let info = ModelInfo::from_gguf(&g).unwrap();
    let fp = selectinfer::profile::fingerprint(&model, &info).unwrap();
    let mut rng = SplitMix64::new(5);
    let mut sums = || selectinfer::profile::stats::ActivationSums {
        tokens: 40,
        sums: info.n_ff.iter().map(|&n| (0..n).map(|_| (rng.next_u64() % 1000) as f64 / 10.0).collect()).collect(),
        signed: None,
        squares: None,
    };
    let raw = ranking::RawProfile {
        format: ranking::RAW_FORMAT.into(),
        model: fp,
        task: selectinfer::tasks::Task::Qa,
        dataset: "seed".into(),
        data_sha256: String::new(),
        split: selectinfer::tasks::Split::Profile,
        examples: 4,
        gen_tokens: 2,
        template_version: selectinfer::tasks::TEMPLATE_VERSION.into(),
        tool_version: "seed".into(),
        halves: [sums(), sums()],
        down_norms: None,
    };
    std::fs::write(corpus("raw").join("raw.json"), serde_json::to_vec(&raw).unwrap()).unwrap();
    let (tasks, model_rank) = ranking::merge(std::slice::from_ref(&raw));
    std::fs::write(corpus("ranking").join("task-qa.json"), serde_json::to_vec(&tasks[0]).unwrap()).unwrap();
    std::fs::write(corpus("ranking").join("model.json"), serde_json::to_vec(&model_rank).unwrap()).unwrap();

    // slice_meta edits: none (the valid file), then the cases.
    let edits = [
        ("valid", serde_json::json!({})),
        ("layer-end-99", serde_json::json!({"selectinfer.layer_end": 99})),
        ("source-n-ff-10", serde_json::json!({"selectinfer.source_n_ff": [64, 64, 64, 64, 64, 64, 64, 64, 64, 64]})),
        ("kept-99999", serde_json::json!({"selectinfer.blk.1.kept": [99999, 1, 2]})),
        ("load-2", serde_json::json!({"selectinfer.load": 2.0})),
        ("static-minus-1", serde_json::json!({"selectinfer.static": -1.0})),
        ("kept-missing", serde_json::json!({"selectinfer.blk.0.kept": null})),
    ];
    for (name, e) in edits {
        std::fs::write(corpus("slice_meta").join(format!("{name}.json")), serde_json::to_vec(&e).unwrap()).unwrap();
    }
}
