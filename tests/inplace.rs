//! Zero-copy selective computation: the loaded FFN reordered in place, decode on
//! prefix views, against the gathered copy, the plain engine and the file itself.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use selectinfer::compute::{ComputeOptions, ComputePlan, Layout, SelectiveSession};
use selectinfer::engine::{quantize, LoadOptions, Model, Session, SessionOptions, TargetType, Token};
use selectinfer::synth::SynthArch;

fn opts() -> SessionOptions {
    SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer: None }
}

fn compute_opts(phi: f64) -> ComputeOptions {
    ComputeOptions { compute: phi, token_share: 0.2, layers: None, no_static: false }
}

/// A random slice (gamma 0.7, delta 0.3, both layers) of the tiny model of `arch`
/// converted to `ty`, shared by the tests of this file.
fn sliced(arch: SynthArch, ty: TargetType, name: &str) -> PathBuf {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _guard = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let out = common::shared_dir().join(format!("inplace-{name}.gguf"));
    if !out.exists() {
        let src = common::shared_dir().join(format!("inplace-{name}-source.gguf"));
        quantize(&common::tiny_model(arch), &src, ty, 2).unwrap();
        common::random_slice(&src, &out, 5);
    }
    out
}

const PROMPTS: [&str; 2] = ["the word of a man is what it was", "one said there was no other way"];
const CONTINUATION: [&str; 3] = ["the", "one", "said"];

/// Per prompt: the prefill's last logits, then the decode logits of the
/// continuation, from one selective session run through both prompts.
fn run(model: &Model, layout: Layout, phi: f64) -> Vec<Vec<Vec<f32>>> {
    let plan = ComputePlan::for_model(model.gguf(), &compute_opts(phi)).unwrap();
    let mut s = SelectiveSession::new(model, plan, opts()).unwrap();
    s.set_layout(layout).unwrap();
    assert_eq!(s.layout(), layout);
    PROMPTS
        .iter()
        .map(|p| {
            s.clear();
            let (_, sel) = s.prefill_and_select(&model.tokenize(p, true, false)).unwrap();
            match layout {
                Layout::InPlace => assert_eq!(sel.compact_bytes, 0, "no copy in place"),
                Layout::Copy => assert!(sel.compact_bytes > 0),
            }
            let mut out = vec![s.session().logits(-1).to_vec()];
            for w in CONTINUATION {
                let t: Vec<Token> = model.tokenize(w, false, false);
                s.session().decode(&t[..1], false).unwrap();
                out.push(s.session().logits(-1).to_vec());
            }
            out
        })
        .collect()
}

fn sha256(path: &Path) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn in_place_decode_is_bit_identical_to_the_gathered_copy_in_both_load_modes() {
    for (arch, ty, name) in [
        (SynthArch::Llama, TargetType::F32, "llama-f32"),
        (SynthArch::Llama, TargetType::F16, "llama-f16"),
        (SynthArch::Gemma3, TargetType::F16, "gemma3-f16"),
    ] {
        let path = sliced(arch, ty, name);
        let before = sha256(&path);
        for mmap in [true, false] {
            let load = LoadOptions { mmap, ..Default::default() };
            let copy = run(&Model::load(&path, &load).unwrap(), Layout::Copy, 0.4);
            let model = Model::load(&path, &load).unwrap();
            let in_place = run(&model, Layout::InPlace, 0.4);
            assert_eq!(in_place, copy, "{name} mmap {mmap}: in place equals the copy, prompt by prompt");
            // The second prompt's prefill ran after the first prompt's reorder was
            // undone: its logits equal a fresh plain engine's.
            let mut plain = Session::new(&model, opts()).unwrap();
            let fresh = Model::load(&path, &load).unwrap();
            let mut reference = Session::new(&fresh, opts()).unwrap();
            for p in PROMPTS {
                let t = fresh.tokenize(p, true, false);
                reference.clear();
                reference.decode(&t, false).unwrap();
                plain.clear();
                plain.decode(&t, false).unwrap();
                assert_eq!(plain.logits(-1), reference.logits(-1), "{name} mmap {mmap}: weights back in file order");
            }
        }
        assert_eq!(sha256(&path), before, "{name}: reordering never writes the model file");
    }
}

#[test]
fn the_layout_is_in_place_for_float_down_weights_and_a_copy_for_repacked_ones() {
    let f16 = sliced(SynthArch::Llama, TargetType::F16, "llama-f16");
    let model = Model::load(&f16, &LoadOptions::default()).unwrap();
    let plan = ComputePlan::for_model(model.gguf(), &compute_opts(0.4)).unwrap();
    assert_eq!(SelectiveSession::new(&model, plan, opts()).unwrap().layout(), Layout::InPlace);

    // An unsliced Q8_0 model: llama.cpp repacks its weights on x86 (and its ffn_down
    // is quantized anyway), so the computed neurons are gathered.
    let dir = tempfile::tempdir().unwrap();
    let q8 = dir.path().join("q8_0.gguf");
    quantize(&common::tiny_model(SynthArch::Llama), &q8, TargetType::Q8_0, 2).unwrap();
    let model = Model::load(&q8, &LoadOptions::default()).unwrap();
    let co = ComputeOptions { layers: Some(0..2), ..compute_opts(0.4) };
    let plan = ComputePlan::for_model(model.gguf(), &co).unwrap();
    let mut s = SelectiveSession::new(&model, plan, opts()).unwrap();
    assert_eq!(s.layout(), Layout::Copy);
    let err = s.set_layout(Layout::InPlace).unwrap_err().to_string();
    assert!(err.contains("layer 0 cannot be reordered in place"), "{err}");
}

#[test]
fn a_session_whose_views_went_stale_refuses_to_decode() {
    let path = sliced(SynthArch::Llama, TargetType::F16, "llama-f16");
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    let plan = ComputePlan::for_model(model.gguf(), &compute_opts(0.4)).unwrap();
    let mut a = SelectiveSession::new(&model, plan.clone(), opts()).unwrap();
    let mut b = SelectiveSession::new(&model, plan, opts()).unwrap();
    let tokens = model.tokenize(PROMPTS[0], true, false);
    a.prefill_and_select(&tokens).unwrap();
    b.prefill_and_select(&model.tokenize(PROMPTS[1], true, false)).unwrap();
    let next: Vec<Token> = model.tokenize("the", false, false);
    let err = a.session().decode(&next[..1], false).unwrap_err().to_string();
    assert!(err.contains("FFN order changed"), "{err}");
    // Selecting again makes it valid.
    a.clear();
    a.prefill_and_select(&tokens).unwrap();
    a.session().decode(&next[..1], false).unwrap();
}
