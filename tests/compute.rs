//! Selective computation: decode with compacted FFNs against the masked dense engine.

mod common;

use std::path::{Path, PathBuf};

use selectinfer::compute::{ComputeOptions, ComputePlan, SelectiveSession};
use selectinfer::engine::{quantize, LoadOptions, Model, SessionOptions, TargetType, Token, TensorObserver};
use selectinfer::model::ModelInfo;
use selectinfer::synth::SynthArch;

fn opts(observer: Option<Box<dyn TensorObserver>>) -> SessionOptions {
    SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer }
}

fn compute_opts(phi: f64) -> ComputeOptions {
    ComputeOptions { compute: phi, token_share: 0.2, layers: None, no_static: false }
}

/// A random slice of the tiny model at gamma 0.7, delta 0.3, both layers.
fn sliced(src: &Path, name: &str) -> PathBuf {
    common::random_slice(src, &common::shared_dir().join(name), 11)
}

const PROMPT: &str = "the word of a man is what it was";
const CONTINUATION: [&str; 4] = ["the", "one", "said", "there"];

/// Computed positions per layer (`None`: dense).
type Sets = Vec<Option<Vec<u32>>>;

/// Decode logits of the selective session after `PROMPT`, with the computed sets.
fn selective_logits(path: &Path, phi: f64) -> (Vec<Vec<f32>>, Sets) {
    let (logits, sets, _) = selective_logits_with(path, phi, false);
    (logits, sets)
}

/// [`selective_logits`], optionally forcing the compacted path, with the layers
/// that decoded through it.
fn selective_logits_with(path: &Path, phi: f64, force_compact: bool) -> (Vec<Vec<f32>>, Sets, Vec<usize>) {
    let model = Model::load(path, &LoadOptions::default()).unwrap();
    let plan = ComputePlan::for_model(model.gguf(), &compute_opts(phi)).unwrap();
    let mut s = SelectiveSession::new(&model, plan, opts(None)).unwrap();
    if force_compact {
        s.force_compact();
    }
    let prompt = model.tokenize(PROMPT, true, false);
    s.prefill_and_select(&prompt).unwrap();
    let sets = s.current_sets().to_vec();
    let compacted = s.session().compact_layers().to_vec();
    let mut out = Vec::new();
    for w in CONTINUATION {
        let t: Vec<Token> = model.tokenize(w, false, false);
        s.session().decode(&t[..1], false).unwrap();
        out.push(s.session().logits(-1).to_vec());
    }
    (out, sets, compacted)
}

fn masked_logits(path: &Path, sets: Option<Vec<Option<Vec<u32>>>>) -> Vec<Vec<f32>> {
    common::masked_logits(path, PROMPT, &CONTINUATION, sets)
}

use common::max_rel_diff;

/// At phi = gamma nothing is compacted: the session decodes with the plain engine,
/// so this checks the session's bookkeeping, not the compacted FFN.
#[test]
fn phi_equal_to_gamma_runs_the_plain_engine_path() {
    let src = common::tiny_model(SynthArch::Llama);
    let path = sliced(&src, "c-llama-f32.gguf");
    let (sel, sets, compacted) = selective_logits_with(&path, 0.7, false);
    assert!(sets.iter().all(Option::is_none), "nothing to select at phi = gamma");
    assert!(compacted.is_empty(), "nothing installed: {compacted:?}");
    assert_eq!(sel, masked_logits(&path, None));
}

/// The compacted path with every loaded neuron selected (phi = gamma, forced) gives
/// the plain engine's logits bit for bit for float weights: in place, the views
/// cover the whole (unpermuted) tensors, so the same kernels multiply the same
/// numbers in the same order. The Q8_0 slice keeps a Q8_0 ffn_down, which the copy
/// layout stores dequantized as F16: the plain engine multiplies it with
/// activations quantized to Q8_0 blocks, the compacted F16 copy does not, so there
/// they agree up to that activation rounding (relative 1e-2, as the CoreInfer Q8_0
/// test).
#[test]
fn compaction_of_every_loaded_neuron_gives_the_plain_logits() {
    let dir = tempfile::tempdir().unwrap();
    let (f16, q8) = (dir.path().join("llama-f16.gguf"), dir.path().join("llama-q8_0.gguf"));
    quantize(&common::tiny_model(SynthArch::Llama), &f16, TargetType::F16, 2).unwrap();
    quantize(&common::tiny_model(SynthArch::Llama), &q8, TargetType::Q8_0, 2).unwrap();
    let cases = [
        (common::tiny_model(SynthArch::Llama), "c-llama-f32.gguf"),
        (f16, "c-llama-f16.gguf"),
        (q8, "c-llama-q8_0.gguf"),
        (common::tiny_model(SynthArch::Gemma3), "c-gemma3-f32.gguf"),
    ];
    for (src, name) in cases {
        let path = sliced(&src, name);
        let (sel, sets, compacted) = selective_logits_with(&path, 0.7, true);
        assert_eq!(compacted, [0, 1], "{name}: both layers decode through the compacted FFN");
        // round(0.7 * 192) = 134 loaded neurons; the Q8_0 slice keeps 128 (whole 32-blocks).
        let loaded = if name.contains("q8_0") { 128 } else { 134 };
        assert_eq!(ModelInfo::read(&path).unwrap().n_ff, vec![loaded as u64; 2], "{name}");
        let all: Vec<u32> = (0..loaded).collect();
        assert!(sets.iter().all(|s| s.as_ref() == Some(&all)), "{name}: {loaded} loaded neurons, all selected");
        let plain = masked_logits(&path, None);
        if name.contains("q8_0") {
            assert!(max_rel_diff(&sel, &plain) <= 1e-2, "{name}: relative diff {}", max_rel_diff(&sel, &plain));
        } else {
            assert!(sel == plain, "{name}: relative diff {}", max_rel_diff(&sel, &plain));
        }
    }
}

#[test]
fn decode_equals_the_masked_dense_engine_for_f32_f16_and_gemma3() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = dir.path().join("llama-f16.gguf");
    quantize(&common::tiny_model(SynthArch::Llama), &f16, TargetType::F16, 2).unwrap();
    let q8 = dir.path().join("llama-q8_0.gguf");
    quantize(&common::tiny_model(SynthArch::Llama), &q8, TargetType::Q8_0, 2).unwrap();
    let cases = [
        (SynthArch::Llama, sliced(&common::tiny_model(SynthArch::Llama), "c-llama-f32.gguf"), 1e-5),
        (SynthArch::Llama, sliced(&f16, "c-llama-f16.gguf"), 1e-3),
        // Quantized: the slice keeps Q8_0 for all three (ffn_down requantized, which
        // the masked reference of the slice itself does not see); the copy layout's
        // ffn_down is F16, multiplied with unrounded activations where the
        // reference's Q8_0 kernel rounds them to Q8_0 blocks: relative 1e-2.
        (SynthArch::Llama, sliced(&q8, "c-llama-q8_0.gguf"), 1e-2),
        (SynthArch::Gemma3, sliced(&common::tiny_model(SynthArch::Gemma3), "c-gemma3-f32.gguf"), 1e-5),
    ];
    for (arch, path, tol) in cases {
        for phi in [0.4, 0.55] {
            let (sel, sets) = selective_logits(&path, phi);
            let k = (phi * 192.0f64).round() as usize;
            assert!(sets.iter().all(|s| s.as_ref().map(Vec::len) == Some(k)), "{arch:?}: {k} neurons per layer");
            let masked = masked_logits(&path, Some(sets));
            let diff = max_rel_diff(&sel, &masked);
            assert!(diff <= tol, "{arch:?} {} phi {phi}: relative diff {diff}", path.display());
            let dense = masked_logits(&path, None);
            assert!(max_rel_diff(&sel, &dense) > 10.0 * diff.max(1e-7), "computing fewer neurons changed nothing?");
        }
    }
}

#[test]
fn coreinfer_on_an_unsliced_q8_0_model_matches_the_masked_engine_up_to_activation_rounding() {
    let dir = tempfile::tempdir().unwrap();
    let q8 = dir.path().join("q8.gguf");
    quantize(&common::tiny_model(SynthArch::Llama), &q8, TargetType::Q8_0, 2).unwrap();
    let (sel, sets) = selective_logits(&q8, 0.4);
    let masked = masked_logits(&q8, Some(sets));
    // The compacted ffn_down is F16 (dequantized Q8_0 columns, exact); the masked
    // reference multiplies Q8_0 ffn_down with activations quantized to Q8_0 blocks.
    let diff = max_rel_diff(&sel, &masked);
    assert!(diff <= 1e-2, "relative diff {diff}");
    let argmax = |v: &Vec<f32>| (0..v.len()).max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap();
    assert!(sel.iter().zip(&masked).all(|(a, b)| argmax(a) == argmax(b)));
}

#[test]
fn static_neurons_are_always_computed() {
    let path = sliced(&common::tiny_model(SynthArch::Llama), "c-llama-f32.gguf");
    let g = selectinfer::gguf::GgufFile::read(&path).unwrap();
    let plan = ComputePlan::for_model(&g, &compute_opts(0.4)).unwrap();
    let (_, sets) = selective_logits(&path, 0.4);
    for (lp, set) in plan.layers.iter().zip(&sets) {
        let (lp, set) = (lp.as_ref().unwrap(), set.as_ref().unwrap());
        assert_eq!(lp.static_positions, (0..58).collect::<Vec<u32>>(), "round(0.3 * 192) static neurons stored first");
        assert!(lp.static_positions.iter().all(|p| set.contains(p)));
    }
}

#[test]
fn coreinfer_on_an_unsliced_quantized_model() {
    let dir = tempfile::tempdir().unwrap();
    let q8 = dir.path().join("q8.gguf");
    quantize(&common::tiny_model(SynthArch::Llama), &q8, TargetType::Q8_0, 2).unwrap();
    let g = selectinfer::gguf::GgufFile::read(&q8).unwrap();
    let plan = ComputePlan::for_model(&g, &ComputeOptions { layers: Some(0..2), ..compute_opts(0.4) }).unwrap();
    assert!(plan.layers.iter().all(|l| l.as_ref().is_some_and(|l| l.static_positions.is_empty() && l.n_loaded == 192)));
    let model = Model::load(&q8, &LoadOptions::default()).unwrap();
    let mut s = SelectiveSession::new(&model, plan, opts(None)).unwrap();
    let prompt = model.tokenize(PROMPT, true, false);
    let (tokens, stats, sel) = s.generate(&prompt, &Default::default(), |_| true).unwrap();
    assert!(!tokens.is_empty() && stats.generated_tokens == tokens.len());
    assert_eq!(sel.computed_neurons, 2 * 77, "round(0.4 * 192) per layer");
    assert_eq!(s.session().compact_layers(), &[0, 1]);
}

#[test]
fn shares_out_of_order_are_clear_errors() {
    let path = sliced(&common::tiny_model(SynthArch::Llama), "c-llama-f32.gguf");
    let p = path.to_str().unwrap();
    common::assert_clean_failure(&["generate", "-m", p, "-p", "the", "--compute", "0.9"], "exceeds the loaded share (gamma) 0.7");
    common::assert_clean_failure(&["generate", "-m", p, "-p", "the", "--compute", "0.2"], "is below the static share (delta) 0.3");
    common::assert_clean_failure(&["generate", "-m", p, "-p", "the", "--compute", "0.4", "--token-share", "0"], "'0' for '--token-share <TOKEN_SHARE>': 0 is not a share in (0, 1]");
    common::assert_clean_failure(&["generate", "-m", p, "-p", "the", "--compute", "0.001", "--no-static"], "keeps no neuron of layer 0");
    let out = common::selectinfer(&["generate", "-m", p, "-p", "the word", "--compute", "0.2", "--no-static", "-n", "4"]);
    assert!(out.status.success(), "CoreInfer on a sliced file ignores its static set: {:?}", common::text(&out));
}
