//! The offline profiler: captured activations, statistics, rankings, bad input.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use selectinfer::engine::{LoadOptions, Model, ObservedTensor, Session, SessionOptions, TensorObserver};
use selectinfer::gguf::{GgufFile, GgufWriter, Value};
use selectinfer::profile::ranking::{self, LayerRanking, RankingKind};
use selectinfer::profile::{run_profile, ProfileRequest};
use selectinfer::synth::SynthArch;
use selectinfer::util::floats::decode_floats;
use selectinfer::tasks::{Split, Task};

/// Keeps a copy of every node it is asked for.
struct Capture {
    names: Vec<String>,
    got: Arc<Mutex<HashMap<String, (Vec<usize>, Vec<f32>)>>>,
}

impl TensorObserver for Capture {
    fn wants(&mut self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
    fn observe(&mut self, t: ObservedTensor<'_>) {
        self.got.lock().unwrap().insert(t.name.to_string(), (t.ne.to_vec(), t.data.to_vec()));
    }
}

fn matrix(g: &GgufFile, name: &str) -> (Vec<f32>, usize) {
    let t = g.tensor(name).unwrap();
    (decode_floats(&g.read_tensor_data(t).unwrap(), t.ty).unwrap(), t.dims[0] as usize)
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// GELU, tanh approximation (what ggml computes).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + ((2.0 / std::f32::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

#[test]
fn captured_activation_equals_act_gate_times_up_of_the_ffn_input() {
    for (arch, node, act) in [(SynthArch::Llama, "ffn_swiglu", silu as fn(f32) -> f32), (SynthArch::Gemma3, "ffn_geglu", gelu)] {
        let path = common::tiny_model(arch);
        let g = GgufFile::read(&path).unwrap();
        let model = Model::load(&path, &LoadOptions::default()).unwrap();
        let got = Arc::new(Mutex::new(HashMap::new()));
        let names = (0..2).flat_map(|l| [format!("ffn_norm-{l}"), format!("{node}-{l}")]).collect();
        let cap = Capture { names, got: got.clone() };
        let mut s = Session::new(&model, SessionOptions { n_ctx: 64, n_batch: 32, threads: 2, observer: Some(Box::new(cap)) }).unwrap();
        let prompt = model.tokenize("the word of a man", true, false);
        s.decode(&prompt, true).unwrap();
        let got = got.lock().unwrap();
        let mut checked = 0;
        for l in 0..2 {
            let (x_ne, x) = &got[&format!("ffn_norm-{l}")];
            let (a_ne, a) = &got[&format!("{node}-{l}")];
            let (gate, n_embd) = matrix(&g, &format!("blk.{l}.ffn_gate.weight"));
            let (up, _) = matrix(&g, &format!("blk.{l}.ffn_up.weight"));
            assert_eq!(x_ne[0], n_embd);
            let n_ff = a_ne[0];
            assert_eq!(a_ne[1], prompt.len(), "every position is computed in layer {l}");
            for t in 0..prompt.len() {
                let xt = &x[t * n_embd..(t + 1) * n_embd];
                for n in 0..n_ff {
                    let dot = |w: &[f32]| w[n * n_embd..(n + 1) * n_embd].iter().zip(xt).map(|(a, b)| a * b).sum::<f32>();
                    let want = act(dot(&gate)) * dot(&up);
                    let have = a[t * n_ff + n];
                    assert!((want - have).abs() <= 2e-3 * (1.0 + want.abs()), "{arch:?} layer {l} token {t} neuron {n}: {have} vs {want}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 2 * prompt.len() * 192);
    }
}

fn write_translate_data(dir: &Path, n: usize) -> std::path::PathBuf {
    let p = dir.join("tiny_translate.jsonl");
    let lines: Vec<String> = (0..n)
        .map(|i| serde_json::json!({"id": format!("t{i}"), "src": format!("das ist {i} wort"), "ref": "that is a word"}).to_string())
        .collect();
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

fn request(model: &Path, data: &Path, out: &Path, task: Task) -> ProfileRequest {
    ProfileRequest {
        model: model.to_path_buf(),
        task,
        data: data.to_path_buf(),
        split: Split::All,
        limit: None,
        max_tokens: None,
        gen_tokens: 4,
        out_dir: out.to_path_buf(),
        threads: 2,
        sequences: 4,
        progress: false,
    }
}

#[test]
fn profile_counts_each_token_once_and_ranks_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let model_path = common::tiny_model(SynthArch::Llama);
    let data = write_translate_data(dir.path(), 4);
    let model = Model::load(&model_path, &LoadOptions::default()).unwrap();
    let prompt_tokens: u64 = selectinfer::tasks::read_examples(&data, Task::Translate)
        .unwrap()
        .iter()
        .map(|e| model.tokenize(&e.prompt(), true, false).len() as u64)
        .sum();

    let out = run_profile(&request(&model_path, &data, &dir.path().join("p1"), Task::Translate)).unwrap();
    let tokens: u64 = out.raw.halves.iter().map(|h| h.tokens).sum();
    // Each prompt token once, plus at most 4 decoded tokens per example (fewer if EOS comes first).
    assert!(tokens >= prompt_tokens && tokens <= prompt_tokens + 4 * 4, "{tokens} vs {prompt_tokens}");
    assert_eq!(out.raw.examples, 4);
    assert!(out.raw.halves[0].tokens > 0 && out.raw.halves[1].tokens > 0, "alternating examples fill both halves");
    assert_eq!(out.raw.halves[0].sums.len(), 2);

    let again = run_profile(&request(&model_path, &data, &dir.path().join("p2"), Task::Translate)).unwrap();
    assert_eq!(out.raw.halves, again.raw.halves, "same prompts, same statistics");
    let written = ranking::merge_dir(&dir.path().join("p1")).unwrap();
    assert_eq!(written.len(), 4, "task and model rankings, by activation and (DIR/contribution/) by contribution");
    let r = ranking::read_ranking(&ranking::task_ranking_path(&dir.path().join("p1"), Task::Translate), dir.path()).unwrap();
    assert_eq!(r.kind, RankingKind::Task);
    // The ranking equals an independent sort of sums / tokens.
    let total = out.raw.total();
    for (l, layer) in r.layers.iter().enumerate() {
        let scores: Vec<f64> = total.sums[l].iter().map(|s| s / total.tokens as f64).collect();
        let mut idx: Vec<usize> = (0..scores.len()).collect();
        idx.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap().then(a.cmp(&b)));
        assert_eq!(layer.order, idx.iter().map(|&i| i as u32).collect::<Vec<_>>());
        assert_eq!(layer, &LayerRanking::from_scores(&scores));
    }
}

#[test]
fn profile_refuses_another_models_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_translate_data(dir.path(), 2);
    let out = dir.path().join("p");
    run_profile(&request(&common::tiny_model(SynthArch::Llama), &data, &out, Task::Translate)).unwrap();
    let err = run_profile(&request(&common::tiny_model(SynthArch::Gemma3), &data, &out, Task::Translate)).unwrap_err();
    assert!(format!("{err:#}").contains("is a profile of tiny-Llama.gguf"), "{err:#}");
}

#[test]
fn profile_bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_model(SynthArch::Llama);
    let m = model.to_str().unwrap();
    let out = dir.path().join("p");
    let o = out.to_str().unwrap();
    common::assert_clean_failure(&["profile", "-m", m, "--task", "poetry", "-o", o], "invalid value 'poetry'");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"src\": \"a\", \"ref\": \"b\"}\n{\"src\": 3}\n").unwrap();
    common::assert_clean_failure(&["profile", "-m", m, "--task", "translate", "--data", bad.to_str().unwrap(), "--split", "all", "-o", o], "bad.jsonl:2:");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    common::assert_clean_failure(&["profile", "-m", m, "--task", "qa", "--data", empty.to_str().unwrap(), "-o", o], "has no examples");

    // A model whose architecture has no gated FFN we know.
    let gpt2 = dir.path().join("gpt2.gguf");
    let meta = vec![
        ("general.architecture".to_string(), Value::String("gpt2".into())),
        ("gpt2.block_count".into(), Value::U32(1)),
        ("gpt2.embedding_length".into(), Value::U32(8)),
        ("gpt2.feed_forward_length".into(), Value::U32(32)),
    ];
    GgufWriter::create(&gpt2, &meta, vec![]).unwrap().finish().unwrap();
    let data = write_translate_data(dir.path(), 2);
    common::assert_clean_failure(
        &["profile", "-m", gpt2.to_str().unwrap(), "--task", "translate", "--data", data.to_str().unwrap(), "-o", o],
        "architecture gpt2 is not supported",
    );
    common::assert_clean_failure(&["profile", "merge", dir.path().join("nothing").to_str().unwrap()], "no raw profile files");
    assert!(!out.exists(), "no profile directory was created by failed runs");
}

#[test]
fn a_token_budget_profiles_examples_spread_over_the_split_and_overlap_compares_two_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_model(SynthArch::Llama);
    let data = write_translate_data(dir.path(), 40);
    let (m, d) = (model.to_str().unwrap(), data.to_str().unwrap());
    let profile = |out: &Path, tokens: &str| {
        let o = common::selectinfer(&["profile", "-m", m, "--task", "translate", "--data", d, "--gen-tokens", "4", "--tokens", tokens, "-t", "2", "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::text(&o).1);
        let raw = ranking::read_raw_dir(out).unwrap().remove(0);
        (raw.examples, raw.halves.iter().map(|h| h.tokens).sum::<u64>())
    };
    let (small, big, all) = (dir.path().join("small"), dir.path().join("big"), dir.path().join("all"));
    let (n_small, t_small) = profile(&small, "300");
    let (n_big, t_big) = profile(&big, "600");
    let (n_all, _) = profile(&all, "all");
    // Examples (spread over the split) whose prompt plus 4 generated tokens reach the budget.
    assert!(t_small >= 300 && n_small >= 2 && n_small < n_big && n_big < n_all, "{n_small} {n_big} {n_all}");
    assert!(t_big >= 600 && t_big < 600 + t_big / n_big as u64 * 2, "{t_big} tokens in {n_big} examples");
    assert_eq!(n_all, 20, "the profiling split of 40 examples");
    // overlap --against: a profile against itself agrees fully, one of other tokens
    // is compared task by task and names both token counts.
    let o = common::selectinfer(&["profile", "overlap", small.to_str().unwrap(), "--against", small.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let row: serde_json::Value = serde_json::from_str(common::text(&o).0.lines().next().unwrap()).unwrap();
    assert_eq!(row["mean"], 1.0);
    let o = common::selectinfer(&["profile", "overlap", small.to_str().unwrap(), "--against", big.to_str().unwrap()]);
    let out = common::text(&o).0;
    assert!(o.status.success() && out.contains(&format!("translate: {t_small} tokens vs {t_big} tokens")), "{out}");
    common::assert_clean_failure(&["profile", "-m", m, "--task", "translate", "--data", d, "--tokens", "0", "-o", dir.path().join("x").to_str().unwrap()], "--tokens");

    // overlap's convergence row, half A against the whole that holds it, equals the
    // share computed here from the raw sums: per layer, the top 40% (rounded) of
    // half A's mean |activation| per token against the whole's, ties by index.
    let raw = ranking::read_raw_dir(&big).unwrap().remove(0);
    let (a, b) = (&raw.halves[0], &raw.halves[1]);
    let top = |scores: Vec<f64>| {
        let k = (scores.len() as f64 * 0.4).round() as usize;
        let mut idx: Vec<usize> = (0..scores.len()).collect();
        idx.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
        idx.truncate(k);
        idx
    };
    let shares: Vec<f64> = (0..a.sums.len())
        .map(|l| {
            let half = top(a.sums[l].iter().map(|s| s / a.tokens as f64).collect());
            let whole = top(a.sums[l].iter().zip(&b.sums[l]).map(|(x, y)| (x + y) / (a.tokens + b.tokens) as f64).collect());
            half.iter().filter(|i| whole.contains(i)).count() as f64 / half.len() as f64
        })
        .collect();
    let o = common::selectinfer(&["profile", "overlap", big.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let name = format!("within: translate half A ({} tokens) vs all ({} tokens)", a.tokens, a.tokens + b.tokens);
    let row: serde_json::Value = common::text(&o).0.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|r| r["comparison"] == name.as_str()).unwrap_or_else(|| panic!("no row {name}"));
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    assert!((row["mean"].as_f64().unwrap() - mean).abs() < 1e-12, "{row} against {mean}");
    assert_eq!(row["min_layer"].as_f64().unwrap(), shares.iter().copied().fold(f64::INFINITY, f64::min));
}
