//! Selection variants (issue #16) against independent computations on the tiny
//! models: the profiler's signed and squared sums and ffn_down norms, contribution
//! rankings, per-layer budgets, bias compensation and the variant records.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use selectinfer::engine::{LoadOptions, Model, ObservedTensor, Session, SessionOptions, TensorObserver};
use selectinfer::gguf::GgufFile;
use selectinfer::model::{FfnActivation, ModelInfo};
use selectinfer::profile::ranking::{self, Importance, RawProfile};
use selectinfer::profile::{run_profile, ProfileRequest};
use selectinfer::select::variant::{layer_ffn_bytes, Budget, Compensation, Secondary, SliceVariant};
use selectinfer::fit::chain::FitText;
use selectinfer::select::{slice_model_with, SliceMeta, SliceRequest, SliceSource};
use selectinfer::synth::SynthArch;
use selectinfer::tasks::{Split, Task};

const PROMPTS: [&str; 3] = ["the 0 word of a man is", "the 1 word of a man is", "the 2 word of a man is"];

/// A qa-less translate profile of the tiny model over exactly [`PROMPTS`] (no
/// generated tokens), so that the test can recompute its statistics.
fn profile(arch: SynthArch) -> (PathBuf, RawProfile) {
    static ONCE: Mutex<()> = Mutex::new(());
    let _guard = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::shared_dir().join(format!("variants-{arch:?}"));
    let data = common::shared_dir().join(format!("variants-{arch:?}.jsonl"));
    if !dir.join("model.json").exists() {
        let lines: Vec<String> = (0..3).map(|i| serde_json::json!({"src": format!("the {i} word of a man is"), "ref": "x"}).to_string()).collect();
        std::fs::write(&data, lines.join("\n")).unwrap();
        let req = ProfileRequest {
            model: common::tiny_model(arch),
            task: Task::Translate,
            data,
            split: Split::All,
            limit: None,
            max_tokens: None,
            gen_tokens: 0,
            out_dir: dir.clone(),
            threads: 2,
            sequences: 4,
            progress: false,
        };
        run_profile(&req).unwrap();
        ranking::merge_dir(&dir).unwrap();
    }
    let raw = ranking::read_raw_dir(&dir).unwrap().remove(0);
    (dir, raw)
}

/// Records sum a and sum a^2 of every activation entering ffn_down, per layer and neuron.
struct Sums {
    prefix: String,
    sums: Arc<Mutex<(Vec<Vec<f64>>, Vec<Vec<f64>>)>>,
}

impl TensorObserver for Sums {
    fn wants(&mut self, name: &str) -> bool {
        name.starts_with(&self.prefix)
    }
    fn observe(&mut self, t: ObservedTensor<'_>) {
        let l: usize = t.name[self.prefix.len()..].parse().unwrap();
        let mut s = self.sums.lock().unwrap();
        let (signed, squares) = &mut *s;
        for row in t.data.chunks_exact(t.ne[0]) {
            for (n, &x) in row.iter().enumerate() {
                signed[l][n] += f64::from(x);
                squares[l][n] += f64::from(x) * f64::from(x);
            }
        }
    }
}

/// Replaces, in each listed layer, the activation of every neuron not kept by its
/// given mean (zero = plain masking): the dense-model reference of compensation.
struct MeanFill {
    prefix: String,
    fill: Vec<Option<Vec<Option<f32>>>>,
}

impl TensorObserver for MeanFill {
    fn wants(&mut self, name: &str) -> bool {
        name.strip_prefix(&self.prefix).and_then(|l| l.parse::<usize>().ok()).is_some_and(|l| self.fill[l].is_some())
    }
    fn observe(&mut self, t: ObservedTensor<'_>) {
        let l: usize = t.name[self.prefix.len()..].parse().unwrap();
        let fill = self.fill[l].as_ref().unwrap();
        for row in t.data.chunks_exact_mut(t.ne[0]) {
            for (x, f) in row.iter_mut().zip(fill) {
                if let Some(v) = f {
                    *x = *v;
                }
            }
        }
    }
}

fn logits(path: &Path, observer: Option<Box<dyn TensorObserver>>) -> Vec<Vec<f32>> {
    let model = Model::load(path, &LoadOptions::default()).unwrap();
    let mut s = Session::new(&model, SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer }).unwrap();
    PROMPTS.iter().flat_map(|p| s.eval_all_logits(&model.tokenize(p, true, false)).unwrap()).collect()
}

fn max_abs_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> (f32, f32) {
    let (mut diff, mut scale) = (0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        for (p, q) in x.iter().zip(y) {
            diff = diff.max((p - q).abs());
            scale = scale.max(p.abs());
        }
    }
    (diff, scale)
}

/// ffn_down of layer `l` of an F32 file, read straight from its bytes: `[row][neuron]`.
fn down_f32(g: &GgufFile, l: usize) -> Vec<Vec<f32>> {
    let t = g.tensor(&format!("blk.{l}.ffn_down.weight")).unwrap();
    assert_eq!(t.ty.name(), "F32");
    let bytes = g.read_tensor_data(t).unwrap();
    let vals: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    vals.chunks_exact(t.dims[0] as usize).map(<[f32]>::to_vec).collect()
}

fn slice(arch: SynthArch, out: &Path, variant: SliceVariant, load: f64) -> anyhow::Result<selectinfer::select::SliceReport> {
    let req = SliceRequest {
        model: common::tiny_model(arch),
        output: out.into(),
        source: SliceSource::Profile { dir: profile(arch).0, task: Task::Translate },
        load,
        static_share: 0.2,
        layers: Some(0..2),
        verify: true,
        source_sha256: None,
        down_layout: Default::default(),
    };
    slice_model_with(&req, &variant, &FitText::default())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn profiler_records_signed_and_squared_sums_and_down_norms() {
    let (_, raw) = profile(SynthArch::Llama);
    let path = common::tiny_model(SynthArch::Llama);
    let g = GgufFile::read(&path).unwrap();
    let info = ModelInfo::from_gguf(&g).unwrap();
    let zeros = || info.n_ff.iter().map(|&n| vec![0.0; n as usize]).collect::<Vec<_>>();
    let sums = Arc::new(Mutex::new((zeros(), zeros())));
    let observer = Sums { prefix: format!("{}-", FfnActivation::Swiglu.node_name()), sums: sums.clone() };
    // The profiler's prompts: the translate template over the profiled lines.
    let data = common::shared_dir().join("variants-Llama.jsonl");
    let prompts: Vec<String> = selectinfer::tasks::read_examples(&data, Task::Translate).unwrap().iter().map(|e| e.prompt()).collect();
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    let mut s = Session::new(&model, SessionOptions { n_ctx: 256, n_batch: 256, threads: 2, observer: Some(Box::new(observer)) }).unwrap();
    for p in &prompts {
        s.eval_all_logits(&model.tokenize(p, true, false)).unwrap();
    }
    let total = raw.total();
    let (signed, squares) = &*sums.lock().unwrap();
    for l in 0..info.n_layer {
        for n in 0..info.n_ff[l] as usize {
            assert!(close(total.signed.as_ref().unwrap()[l][n], signed[l][n]), "signed sum, layer {l} neuron {n}");
            assert!(close(total.squares.as_ref().unwrap()[l][n], squares[l][n]), "squared sum, layer {l} neuron {n}");
        }
        let down = down_f32(&g, l);
        for n in 0..info.n_ff[l] as usize {
            let norm: f64 = down.iter().map(|row| f64::from(row[n]) * f64::from(row[n])).sum();
            assert!(close(raw.down_norms.as_ref().unwrap()[l][n], norm), "norm, layer {l} neuron {n}");
        }
    }
}

#[test]
fn contribution_ranking_is_mean_square_times_down_norm() {
    let (dir, raw) = profile(SynthArch::Llama);
    let r = ranking::read_ranking(&ranking::task_ranking_path(&dir.join("contribution"), Task::Translate), &dir).unwrap();
    assert_eq!(r.importance, Importance::Contribution);
    let total = raw.total();
    for (l, layer) in r.layers.iter().enumerate() {
        let score: Vec<f64> = (0..layer.order.len())
            .map(|n| total.squares.as_ref().unwrap()[l][n] / total.tokens as f64 * raw.down_norms.as_ref().unwrap()[l][n])
            .collect();
        let mut order: Vec<u32> = (0..score.len() as u32).collect();
        order.sort_by(|&a, &b| score[b as usize].partial_cmp(&score[a as usize]).unwrap().then(a.cmp(&b)));
        assert_eq!(layer.order, order, "layer {l}");
    }
    // The activation ranking is the paper's, unchanged by the new statistics.
    let act = ranking::read_ranking(&ranking::task_ranking_path(&dir, Task::Translate), &dir).unwrap();
    assert_eq!(act.importance, Importance::Activation);
    assert_ne!(act.layers[0].order, r.layers[0].order);
    // An old raw file (without the statistics) still merges; only contribution is skipped.
    let old_dir = tempfile::tempdir().unwrap();
    let mut old = raw.clone();
    old.down_norms = None;
    old.halves.iter_mut().for_each(|h| (h.signed, h.squares) = (None, None));
    ranking::write_json(&ranking::raw_dir(old_dir.path()).join("translate-old.json"), &old).unwrap();
    ranking::merge_dir(old_dir.path()).unwrap();
    let old_act = ranking::read_ranking(&ranking::task_ranking_path(old_dir.path(), Task::Translate), old_dir.path()).unwrap();
    assert_eq!(old_act.layers, act.layers);
    assert!(!old_dir.path().join("contribution").exists());
}

#[test]
fn contribution_slice_keeps_the_contribution_ranking_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.gguf");
    let v = SliceVariant { importance: Importance::Contribution, ..SliceVariant::default() };
    slice(SynthArch::Llama, &out, v, 0.5).unwrap();
    let meta = SliceMeta::from_gguf(&GgufFile::read(&out).unwrap()).unwrap().unwrap();
    assert_eq!(meta.variant, v);
    let (pdir, _) = profile(SynthArch::Llama);
    let r = ranking::read_ranking(&ranking::task_ranking_path(&pdir.join("contribution"), Task::Translate), &pdir).unwrap();
    let mut kept = meta.kept[0].clone().unwrap();
    kept.sort_unstable();
    let mut top: Vec<u32> = r.layers[0].order[..96].to_vec();
    top.sort_unstable();
    assert_eq!(kept, top, "delta = 0.2 of the task ranking, then the model ranking, which is the same single task");
}

/// `--secondary task`: the loaded neurons after the static ones come from the task's
/// own ranking, so the slice keeps the task's top gamma*N; the paper's default
/// fills them from the model-wide ranking (here the mean of two tasks).
#[test]
fn secondary_task_slice_keeps_the_tasks_top_neurons() {
    let (_, raw) = profile(SynthArch::Llama);
    let pdir = tempfile::tempdir().unwrap();
    // A second task whose neurons rank in reverse, so that the model-wide ranking
    // differs from the translate ranking.
    let mut qa = raw.clone();
    (qa.task, qa.dataset) = (Task::Qa, "reversed".into());
    qa.halves.iter_mut().for_each(|h| h.sums.iter_mut().for_each(|l| l.reverse()));
    ranking::write_json(&ranking::raw_dir(pdir.path()).join("translate-t.json"), &raw).unwrap();
    ranking::write_json(&ranking::raw_dir(pdir.path()).join("qa-reversed.json"), &qa).unwrap();
    ranking::merge_dir(pdir.path()).unwrap();
    let task = ranking::read_ranking(&ranking::task_ranking_path(pdir.path(), Task::Translate), pdir.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kept_with = |secondary: Secondary| {
        let out = dir.path().join(format!("{secondary:?}.gguf"));
        let req = SliceRequest {
            model: common::tiny_model(SynthArch::Llama),
            output: out.clone(),
            source: SliceSource::Profile { dir: pdir.path().into(), task: Task::Translate },
            load: 0.5,
            static_share: 0.2,
            layers: Some(0..2),
            verify: true,
            source_sha256: None,
            down_layout: Default::default(),
        };
        let v = SliceVariant { secondary, ..SliceVariant::default() };
        slice_model_with(&req, &v, &FitText::default()).unwrap();
        let meta = SliceMeta::from_gguf(&GgufFile::read(&out).unwrap()).unwrap().unwrap();
        assert_eq!(meta.variant, v);
        assert_eq!(SliceVariant::from_gguf(&GgufFile::read(&out).unwrap()).label(), if secondary == Secondary::Task { "secondary=task" } else { "" });
        meta.kept
    };
    let (own, paper) = (kept_with(Secondary::Task), kept_with(Secondary::Model));
    for l in 0..2 {
        let n = task.layers[l].order.len();
        let mut kept = own[l].clone().unwrap();
        kept.sort_unstable();
        let mut top: Vec<u32> = task.layers[l].order[..n / 2].to_vec();
        top.sort_unstable();
        assert_eq!(kept, top, "layer {l}: the translate ranking's top half");
        assert_ne!(paper[l], own[l], "layer {l}: the model-wide ranking fills the paper's slice");
    }
}

#[test]
fn sensitivity_budget_spends_the_same_bytes_by_captured_share() {
    let dir = tempfile::tempdir().unwrap();
    let uniform = dir.path().join("u.gguf");
    let sens = dir.path().join("s.gguf");
    let ru = slice(SynthArch::Llama, &uniform, SliceVariant::default(), 0.6).unwrap();
    let v = SliceVariant { budget: Budget::Sensitivity, budget_floor: 0.3, ..SliceVariant::default() };
    let rs = slice(SynthArch::Llama, &sens, v, 0.6).unwrap();
    let g = GgufFile::read(&common::tiny_model(SynthArch::Llama)).unwrap();
    let per_neuron = layer_ffn_bytes(&g, 2)[0] / 192;
    assert!(rs.ffn_bytes <= ru.ffn_bytes && ru.ffn_bytes - rs.ffn_bytes < per_neuron, "{} vs {}", rs.ffn_bytes, ru.ffn_bytes);
    // Independent: beyond the floor of round(0.3 * 192) = 58 per layer, the kept
    // neurons are the globally largest shares score / layer total (equal bytes per
    // neuron in both layers), i.e. the top 2 * 115 - 2 * 58 of the pooled shares.
    let (pdir, _) = profile(SynthArch::Llama);
    let base = ranking::read_ranking(&ranking::task_ranking_path(&pdir, Task::Translate), &pdir).unwrap();
    let mut pooled: Vec<(f64, usize)> = Vec::new();
    for (l, layer) in base.layers.iter().enumerate() {
        let total: f64 = layer.scores.iter().sum();
        pooled.extend(layer.scores[58..].iter().map(|s| (s / total, l)));
    }
    pooled.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    let extra = 2 * 115 - 2 * 58;
    let expect: Vec<u64> = (0..2).map(|l| 58 + pooled[..extra].iter().filter(|p| p.1 == l).count() as u64).collect();
    assert_eq!(rs.n_ff, expect);
    assert_ne!(rs.n_ff[0], rs.n_ff[1], "the two layers differ in how concentrated they are");
    let meta = SliceMeta::from_gguf(&GgufFile::read(&sens).unwrap()).unwrap().unwrap();
    assert_eq!(meta.variant, v);
    assert_eq!((meta.layer_start, meta.layer_end), (0, 2));
    // The static set is the top 0.2 N of the task ranking in each layer.
    assert_eq!(meta.static_set[0].as_ref().unwrap()[..], base.layers[0].order[..38]);
}

#[test]
fn mean_compensation_equals_the_dense_model_with_dropped_neurons_at_their_mean() {
    // llama's builder loads an optional ffn_down.bias, gemma3's with patch 0009 (where
    // the FFN output then goes through ffn_post_norm: the bias enters before it),
    // qwen2's with patch 0010.
    for (arch, act) in [(SynthArch::Llama, FfnActivation::Swiglu), (SynthArch::Gemma3, FfnActivation::Geglu), (SynthArch::Qwen2, FfnActivation::Swiglu)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("b.gguf");
        let plain = dir.path().join("p.gguf");
        let v = SliceVariant { compensation: Compensation::Mean, ..SliceVariant::default() };
        slice(arch, &out, v, 0.5).unwrap();
        slice(arch, &plain, SliceVariant::default(), 0.5).unwrap();
        let g = GgufFile::read(&out).unwrap();
        let meta = SliceMeta::from_gguf(&g).unwrap().unwrap();
        assert_eq!(meta.variant.compensation, Compensation::Mean);
        let (_, raw) = profile(arch);
        let total = raw.total();
        let src = GgufFile::read(&common::tiny_model(arch)).unwrap();
        let mut fill = Vec::new();
        for l in 0..2 {
            let kept = meta.kept[l].as_ref().unwrap();
            let mean: Vec<f64> = total.signed.as_ref().unwrap()[l].iter().map(|s| s / total.tokens as f64).collect();
            // The stored bias, against W_down[:, dropped] x mean computed here.
            let down = down_f32(&src, l);
            let bias_t = g.tensor(&format!("blk.{l}.ffn_down.bias")).unwrap();
            let bytes = g.read_tensor_data(bias_t).unwrap();
            let bias: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
            for (r, row) in down.iter().enumerate() {
                let want: f64 = (0..row.len() as u32).filter(|n| !kept.contains(n)).map(|n| f64::from(row[n as usize]) * mean[n as usize]).sum();
                assert!(close(f64::from(bias[r]), want), "{arch:?} layer {l} row {r}: {} vs {want}", bias[r]);
            }
            let n_ff = down[0].len();
            fill.push(Some((0..n_ff as u32).map(|n| (!kept.contains(&n)).then_some(mean[n as usize] as f32)).collect()));
        }
        // llama.cpp adds it: the slice equals the dense model with each dropped
        // neuron's activation replaced by its profiled mean.
        let prefix = format!("{}-", act.node_name());
        let reference = logits(&common::tiny_model(arch), Some(Box::new(MeanFill { prefix, fill })));
        let (diff, scale) = max_abs_diff(&logits(&out, None), &reference);
        assert!(diff <= 1e-3 * scale.max(1.0), "{arch:?}: compensated slice vs mean-filled dense: {diff} (scale {scale})");
        let (plain_diff, _) = max_abs_diff(&logits(&plain, None), &reference);
        assert!(plain_diff > 10.0 * diff, "{arch:?}: the bias changes the logits: {plain_diff} vs {diff}");
    }
}

#[test]
fn variants_refuse_what_they_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.gguf");
    let v = SliceVariant { budget: Budget::Sensitivity, budget_floor: 0.8, ..SliceVariant::default() };
    let e = format!("{:#}", slice(SynthArch::Llama, &out, v, 0.5).unwrap_err());
    assert!(e.contains("--budget-floor must be in (0, --load = 0.5]"), "{e}");
    let model = common::tiny_model(SynthArch::Llama);
    let m = model.to_str().unwrap();
    let o = out.to_str().unwrap();
    common::assert_clean_failure(&["slice", "-m", m, "--random", "--budget", "sensitivity", "-o", o], "need a profile");
    assert!(!out.exists());
}

#[test]
fn eval_rows_record_the_variant() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.gguf");
    let v = SliceVariant { importance: Importance::Contribution, compensation: Compensation::Mean, ..SliceVariant::default() };
    slice(SynthArch::Llama, &out, v, 0.5).unwrap();
    let data = common::write_tiny_qa(dir.path());
    let csv = dir.path().join("r.csv");
    let run = |vote: &str| {
        let o = common::selectinfer(&[
            "eval", "-m", out.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--method", "selectinfer", "--compute", "0.4",
            "--vote", vote, "--limit", "2", "--threads", "2", "--out", csv.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::text(&o).1);
    };
    run("signed");
    run("abs");
    let rows: Vec<selectinfer::eval::harness::EvalRow> = selectinfer::eval::harness::parse_rows(&std::fs::read(&csv).unwrap(), &csv).unwrap();
    assert_eq!(rows[0].variant, "importance=contribution,compensation=mean,vote=signed");
    assert_eq!(rows[1].variant, "importance=contribution,compensation=mean");
}

#[test]
fn answer_perplexity_equals_one_prefill_over_prompt_and_answer() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::write_tiny_qa(dir.path());
    let model_path = common::tiny_model(SynthArch::Llama);
    let per = dir.path().join("per.jsonl");
    let csv = dir.path().join("a.csv");
    let args = |extra: &[&str]| {
        let mut v = vec!["perplexity", "-m", model_path.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--answers", "--threads", "2"];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| {
        let o = common::selectinfer(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", common::text(&o).1);
        common::text(&o).0
    };
    run(args(&["--per-example", per.to_str().unwrap(), "--out", csv.to_str().unwrap()]));
    // Independent: one prefill of prompt + answer, the NLL read at the answer positions.
    let model = Model::load(&model_path, &LoadOptions::default()).unwrap();
    let mut s = Session::new(&model, SessionOptions { n_ctx: 256, n_batch: 256, threads: 2, observer: None }).unwrap();
    let examples = selectinfer::tasks::read_examples(&data, Task::Qa).unwrap();
    let eval = Split::Eval.select(&examples);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&per).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), eval.len());
    for (ex, line) in eval.iter().zip(&lines) {
        let prompt = model.tokenize(&ex.prompt(), true, false);
        let answer = model.tokenize(&format!(" {}", ex.references[0]), false, false);
        let all: Vec<i32> = prompt.iter().chain(&answer).copied().collect();
        let logits = s.eval_all_logits(&all).unwrap();
        let want: f64 = (0..answer.len()).map(|j| selectinfer::profile::text::nll(&logits[prompt.len() - 1 + j], answer[j] as usize)).sum();
        assert_eq!(line["tokens"].as_u64().unwrap() as usize, answer.len());
        let got = line["nll"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-3 * want.abs().max(1.0), "{}: {got} vs {want}", ex.id);
    }
    // A run paired with itself differs by exactly zero.
    let out = run(args(&["--paired-with", per.to_str().unwrap()]));
    assert!(out.contains("paired difference to") && out.contains("+0.0000 [95% CI +0.0000, +0.0000]"), "{out}");
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("timestamp,git_commit,model,variant,task,data,examples,shots,load,compute,token_share,tokens,ppl,ppl_lo,ppl_hi"), "{text}");
    common::assert_clean_failure(&["perplexity", "-m", model_path.to_str().unwrap(), "--compute", "0.4"], "--compute applies to --answers only");
}

/// A translate file of `n` examples for the sensitivity text (its profiling split
/// is the first half).
fn sensitivity_data(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("sens.jsonl");
    let lines: Vec<String> = (0..n).map(|i| serde_json::json!({"src": format!("the {i} word of a man is"), "ref": format!("a {} man", i * 7)}).to_string()).collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn output_sensitivity_equals_the_perplexity_of_each_one_layer_slice() {
    use selectinfer::eval::perplexity::perplexity;
    use selectinfer::tasks::evaluation_text;
    use selectinfer::fit::sensitivity::{measure, SensitivityRequest};
    let dir = tempfile::tempdir().unwrap();
    let data = sensitivity_data(dir.path(), 80);
    let (pdir, _) = profile(SynthArch::Llama);
    let model = common::tiny_model(SynthArch::Llama);
    let req = SensitivityRequest {
        model: model.clone(),
        profile: pdir.clone(),
        task: Task::Translate,
        importance: Importance::Activation,
        load: 0.5,
        static_share: 0.2,
        data: vec![data.clone()],
        ctx: 64,
        chunks: 3,
        threads: 2,
        progress: false,
    };
    let s = measure(&req).unwrap();
    // Independent: the profiling half of the file as text, and real one-layer slice files.
    let examples = selectinfer::tasks::read_examples(&data, Task::Translate).unwrap();
    let text = evaluation_text(Split::Profile.select(&examples));
    let whole = perplexity(&Model::load(&model, &LoadOptions::default()).unwrap(), &text, 64, Some(3), 2).unwrap();
    assert_eq!((s.chunks, s.tokens), (3, whole.tokens));
    assert!(close(s.reference_ppl, whole.ppl), "{} vs {}", s.reference_ppl, whole.ppl);
    assert_eq!(s.layers.len(), 2);
    for l in 0..2 {
        let out = dir.path().join(format!("layer{l}.gguf"));
        let req = SliceRequest {
            model: model.clone(),
            output: out.clone(),
            source: SliceSource::Profile { dir: pdir.clone(), task: Task::Translate },
            load: 0.5,
            static_share: 0.2,
            layers: Some(l..l + 1),
            verify: false,
            source_sha256: None,
            down_layout: Default::default(),
        };
        slice_model_with(&req, &SliceVariant::default(), &FitText::default()).unwrap();
        let sliced = perplexity(&Model::load(&out, &LoadOptions::default()).unwrap(), &text, 64, Some(3), 2).unwrap();
        assert!((s.layers[l].ppl - sliced.ppl).abs() <= 1e-3 * sliced.ppl, "layer {l}: masked {} vs sliced file {}", s.layers[l].ppl, sliced.ppl);
        assert!((s.layers[l].cost - (sliced.mean_nll - whole.mean_nll)).abs() < 1e-3, "layer {l}");
        assert!(s.layers[l].cost.abs() > 1e-6, "layer {l}: slicing half the layer changes the output");
    }
}

#[test]
fn output_budget_spends_the_same_bytes_by_measured_cost() {
    use selectinfer::profile::sensitivity::{read_sensitivity, sensitivity_path};
    let dir = tempfile::tempdir().unwrap();
    let data = sensitivity_data(dir.path(), 80);
    let pdir = dir.path().join("profile");
    copy_dir(&profile(SynthArch::Llama).0, &pdir);
    let model = common::tiny_model(SynthArch::Llama);
    let (m, p, d) = (model.to_str().unwrap(), pdir.to_str().unwrap(), data.to_str().unwrap());
    let sliced = dir.path().join("o.gguf");
    let o = sliced.to_str().unwrap();
    let slice_args = ["slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers", "0..2", "--budget", "output", "--budget-floor", "0.3", "--compensate", "none", "-o", o];
    // Without the measurement, a clear error that names the command.
    common::assert_clean_failure(&slice_args, "selectinfer profile sensitivity");
    assert!(!sliced.exists());
    let out = common::selectinfer(&["profile", "sensitivity", "-m", m, "--task", "translate", "--data", d, "--ctx", "64", "--chunks", "3", "--load", "0.5", "--static", "0.2", p]);
    assert!(out.status.success(), "{}", common::text(&out).1);
    let path = sensitivity_path(&pdir, Task::Translate, &common::sha256_of(&model));
    let mut s = read_sensitivity(&path).unwrap();
    assert_eq!((s.load, s.static_share, s.data.clone()), (0.5, 0.2, vec!["sens.jsonl".to_string()]));
    // Set the costs by hand so that the test knows them: layer 0 costs 30x layer 1.
    s.layers[0].cost = 0.3;
    s.layers[1].cost = 0.01;
    std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
    let out = common::selectinfer(&slice_args);
    assert!(out.status.success(), "{}", common::text(&out).1);
    let g = GgufFile::read(&sliced).unwrap();
    let meta = SliceMeta::from_gguf(&g).unwrap().unwrap();
    assert_eq!(meta.variant, SliceVariant { budget: Budget::Output, budget_floor: 0.3, ..SliceVariant::default() });
    assert_eq!(meta.variant.label(), "budget=output/0.3");
    // Independent: each layer's further neurons are worth cost_l x score / (the
    // score mass beyond its top round(0.5 * 192) = 96); beyond the floor of 58 per
    // layer the globally largest 2 * 115 - 2 * 58 worths are kept (equal bytes).
    let base = ranking::read_ranking(&ranking::task_ranking_path(&pdir, Task::Translate), &pdir).unwrap();
    let mut pooled: Vec<(f64, usize)> = Vec::new();
    for (l, layer) in base.layers.iter().enumerate() {
        let dropped: f64 = layer.scores[96..].iter().sum();
        pooled.extend(layer.scores[58..].iter().map(|x| (s.layers[l].cost * x / dropped, l)));
    }
    pooled.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    let expect: Vec<u64> = (0..2).map(|l| 58 + pooled[..114].iter().filter(|p| p.1 == l).count() as u64).collect();
    assert_eq!(ModelInfo::from_gguf(&g).unwrap().n_ff, expect);
    assert!(expect[0] > expect[1], "the costlier layer keeps more: {expect:?}");
    // The slice records the costs it read beside the rankings: sha256 of the ranking
    // hash followed by the sensitivity file's own sha256 (computed here with sha2).
    // Costs measured again are another selection, so the slice no longer matches.
    let file_sha = |p: &Path| -> String {
        use sha2::Digest;
        format!("{:x}", sha2::Sha256::digest(std::fs::read(p).unwrap()))
    };
    let rankings = selectinfer::select::rewrite::profile_sha256(&pdir, Task::Translate).unwrap();
    let recorded = |p: &Path| selectinfer::util::hash::sha256_hex(format!("{rankings}{}", file_sha(p)).as_bytes());
    assert_eq!(meta.profile_sha256, Some(recorded(&path)));
    s.layers[1].cost = 0.02;
    std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
    let now = meta.variant.selection_sha256(&pdir, Task::Translate, &meta.source_sha256, &[]).unwrap();
    assert_eq!(now, recorded(&path));
    assert_ne!(meta.profile_sha256, Some(now));
}
