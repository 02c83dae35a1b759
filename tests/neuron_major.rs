//! A neuron-major `ffn_down` (`slice --down-layout neurons`, patches 0005/0006): the
//! same model function as llama.cpp's layout, and selective computation in place,
//! with no copy, on quantized weights too.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use common::{masked_logits, max_rel_diff};
use selectinfer::compute::{ComputeOptions, ComputePlan, Layout, SelectiveSession};
use selectinfer::engine::{quantize, LoadOptions, Model, Session, SessionOptions, TargetType, Token};
use selectinfer::gguf::{GgmlType, GgufFile};
use selectinfer::select::{slice_model, DownLayout, SliceMeta, SliceRequest, SliceSource};
use selectinfer::synth::{write_model, SynthArch, SynthSpec};

const PROMPT: &str = "the word of a man is what it was";
const CONTINUATION: [&str; 3] = ["the", "one", "said"];

fn opts() -> SessionOptions {
    SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer: None }
}

/// The tiny model of `arch` (hidden size 64), or one with a hidden size of 256
/// (`wide`), whose rows are whole K-quant blocks.
fn source(arch: SynthArch, wide: bool, ty: TargetType, name: &str) -> PathBuf {
    let out = common::shared_dir().join(format!("nm-src-{name}.gguf"));
    if out.exists() {
        return out;
    }
    let f32_model = if wide {
        let spec = SynthSpec { n_embd: 256, n_ff: vec![512], head_dim: 64, ..SynthSpec::tiny(arch) };
        let p = common::shared_dir().join(format!("nm-wide-{arch:?}.gguf"));
        if !p.exists() {
            write_model(&spec, &p).unwrap();
        }
        p
    } else {
        common::tiny_model(arch)
    };
    quantize(&f32_model, &out, ty, 2).unwrap();
    out
}

/// A random slice (gamma 0.7, delta 0.3, both layers) of `src` in `layout`.
fn sliced(src: &Path, layout: DownLayout, name: &str) -> PathBuf {
    sliced_at(src, layout, &format!("nm-{name}-{}.gguf", layout.name()), 0.7)
}

/// A random slice (gamma `load`, delta 0.3, both layers) of `src` in `layout`,
/// written once to the shared folder as `file`.
fn sliced_at(src: &Path, layout: DownLayout, file: &str, load: f64) -> PathBuf {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _guard = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let out = common::shared_dir().join(file);
    if !out.exists() {
        let req = SliceRequest {
            model: src.into(),
            output: out.clone(),
            source: SliceSource::Random { seed: 5 },
            load,
            static_share: 0.3,
            layers: Some(0..2),
            verify: true,
            source_sha256: None,
            down_layout: layout,
        };
        slice_model(&req).unwrap_or_else(|e| panic!("{file}: {e:#}"));
    }
    out
}

/// Prefill logits of `PROMPT` then decode logits of `CONTINUATION` on the plain engine.
fn plain_logits(path: &Path) -> Vec<Vec<f32>> {
    let model = Model::load(path, &LoadOptions::default()).unwrap();
    let mut s = Session::new(&model, opts()).unwrap();
    s.decode(&model.tokenize(PROMPT, true, false), false).unwrap();
    let mut out = vec![s.logits(-1).to_vec()];
    for w in CONTINUATION {
        let t: Vec<Token> = model.tokenize(w, false, false);
        s.decode(&t[..1], false).unwrap();
        out.push(s.logits(-1).to_vec());
    }
    out
}

/// Decode logits of the selective session at `phi` in `layout`, with the computed
/// sets and the bytes of copied weights.
fn selective(model: &Model, layout: Layout, phi: f64, force_compact: bool) -> (Vec<Vec<f32>>, Vec<Option<Vec<u32>>>, usize) {
    let co = ComputeOptions { compute: phi, token_share: 0.2, layers: None, no_static: false };
    let plan = ComputePlan::for_model(model.gguf(), &co).unwrap();
    let mut s = SelectiveSession::new(model, plan, opts()).unwrap();
    if force_compact {
        s.force_compact();
    }
    s.set_layout(layout).unwrap();
    let (_, sel) = s.prefill_and_select(&model.tokenize(PROMPT, true, false)).unwrap();
    let sets = s.current_sets().to_vec();
    let out = CONTINUATION
        .iter()
        .map(|w| {
            let t: Vec<Token> = model.tokenize(w, false, false);
            s.session().decode(&t[..1], false).unwrap();
            s.session().logits(-1).to_vec()
        })
        .collect();
    (out, sets, sel.compact_bytes)
}

fn down_type(path: &Path) -> GgmlType {
    GgufFile::read(path).unwrap().tensor("blk.0.ffn_down.weight").unwrap().ty
}

#[test]
fn a_neuron_major_slice_computes_what_the_column_slice_computes() {
    // F32/F16 are transposed exactly, so only the summation order differs (and the
    // F16 column kernel rounds activations to F16, which out_prod does not).
    for (arch, ty, name, tol) in [
        (SynthArch::Llama, TargetType::F32, "llama-f32", 1e-5),
        (SynthArch::Llama, TargetType::F16, "llama-f16", 2e-3),
        (SynthArch::Gemma3, TargetType::F16, "gemma3-f16", 2e-3),
    ] {
        let src = source(arch, false, ty, name);
        let (cols, rows) = (sliced(&src, DownLayout::Columns, name), sliced(&src, DownLayout::Neurons, name));
        let g = GgufFile::read(&rows).unwrap();
        let down = g.tensor("blk.0.ffn_down.weight").unwrap();
        assert_eq!(down.dims, vec![64, 134], "{name}: [n_embd, kept] (round(0.7 * 192) = 134)");
        assert_eq!(SliceMeta::from_gguf(&g).unwrap().unwrap().down_layout, DownLayout::Neurons);
        let diff = max_rel_diff(&plain_logits(&cols), &plain_logits(&rows));
        assert!(diff <= tol, "{name}: relative diff {diff}");
    }
}

#[test]
fn quantized_neuron_major_rows_keep_32_element_types_and_k_quants_take_llama_cpp_fallback() {
    // Q8_0 stays; Q4_K_M's K-quant ffn_down (Q4_K / Q6_K, or a fallback llama.cpp
    // already chose for rows of 192) becomes Q5_0 / Q8_0, at hidden size 64 and 256.
    let q8 = sliced(&source(SynthArch::Llama, false, TargetType::Q8_0, "llama-q8_0"), DownLayout::Neurons, "llama-q8_0");
    assert_eq!(down_type(&q8), GgmlType::Q8_0);
    for (wide, name) in [(false, "llama-q4_k_m"), (true, "wide-q4_k_m")] {
        let src = source(SynthArch::Llama, wide, TargetType::Q4KM, name);
        let nm = sliced(&src, DownLayout::Neurons, name);
        let g = (GgufFile::read(&src).unwrap(), GgufFile::read(&nm).unwrap());
        for l in 0..2 {
            let t = format!("blk.{l}.ffn_down.weight");
            let (from, to) = (g.0.tensor(&t).unwrap().ty, g.1.tensor(&t).unwrap().ty);
            let want = match from {
                GgmlType::Q4_K | GgmlType::Q5_K => GgmlType::Q5_0,
                GgmlType::Q6_K => GgmlType::Q8_0,
                other => other,
            };
            assert_eq!(to, want, "{name} {t}: {from}");
        }
    }
}

#[test]
fn in_place_on_quantized_neuron_major_slices_is_exact_and_copies_nothing() {
    for (arch, wide, ty, name) in [
        (SynthArch::Llama, false, TargetType::Q8_0, "llama-q8_0"),
        (SynthArch::Llama, false, TargetType::Q4_0, "llama-q4_0"),
        (SynthArch::Gemma3, false, TargetType::Q8_0, "gemma3-q8_0"),
        (SynthArch::Llama, true, TargetType::Q4KM, "wide-q4_k_m"),
        (SynthArch::Gemma3, true, TargetType::Q4KM, "wide-gemma3-q4_k_m"),
    ] {
        let path = sliced(&source(arch, wide, ty, name), DownLayout::Neurons, name);
        let before = std::fs::read(&path).unwrap();
        for mmap in [true, false] {
            let load = LoadOptions { mmap, ..Default::default() };
            let model = Model::load(&path, &load).unwrap();
            let plan = ComputePlan::for_model(model.gguf(), &ComputeOptions { compute: 0.4, token_share: 0.2, layers: None, no_static: false }).unwrap();
            assert_eq!(SelectiveSession::new(&model, plan, opts()).unwrap().layout(), Layout::InPlace, "{name}: in place by default");
            let (in_place, sets, copied) = selective(&model, Layout::InPlace, 0.4, false);
            assert_eq!(copied, 0, "{name}: no copy of the computed neurons");
            let (copy, copy_sets, copy_bytes) = selective(&Model::load(&path, &load).unwrap(), Layout::Copy, 0.4, false);
            assert!(copy_bytes > 0);
            assert_eq!(sets, copy_sets, "{name}: same selection");
            assert_eq!(in_place, copy, "{name} mmap {mmap}: prefix views equal the gathered rows bit for bit");
            // The masked dense engine on the same file: zeroed activations instead of
            // skipped rows, so only the float summation order differs.
            let masked = masked_logits(&path, PROMPT, &CONTINUATION, Some(sets));
            let diff = max_rel_diff(&in_place, &masked);
            assert!(diff <= 1e-4, "{name} mmap {mmap}: relative diff {diff} to the masked engine");
            let dense = masked_logits(&path, PROMPT, &CONTINUATION, None);
            assert!(max_rel_diff(&in_place, &dense) > 10.0 * diff.max(1e-7), "{name}: computing fewer neurons changed nothing?");
            // phi = gamma through the compacted path: full-width views, the plain engine's numbers.
            let (all, _, _) = selective(&model, Layout::InPlace, 0.7, true);
            assert_eq!(all, plain_logits(&path)[1..].to_vec(), "{name} mmap {mmap}: every loaded neuron = plain engine");
        }
        assert!(std::fs::read(&path).unwrap() == before, "{name}: reordering never writes the model file");
    }
}

#[test]
fn a_neuron_major_slice_is_refused_where_it_cannot_be_told_apart() {
    // 0.7 * 192 = 134 neurons; a load keeping 64 (the hidden size) would give a square
    // ffn_down whose layout the shape cannot tell.
    let src = source(SynthArch::Llama, false, TargetType::F16, "llama-f16");
    let out = common::shared_dir().join("nm-square.gguf");
    let req = SliceRequest {
        model: src,
        output: out.clone(),
        source: SliceSource::Random { seed: 5 },
        load: 64.0 / 192.0,
        static_share: 0.0,
        layers: Some(0..2),
        verify: true,
        source_sha256: None,
        down_layout: DownLayout::Neurons,
    };
    let err = format!("{:#}", slice_model(&req).unwrap_err());
    assert!(err.contains("equal to the hidden size"), "{err}");
    assert!(!out.exists());
}

#[test]
fn the_avx512_and_avx2_out_prod_loops_give_the_same_logits_bit_for_bit() {
    // Patch 0008 picks its 512-bit loop at run time where the CPU has AVX-512 F/BW/VL;
    // SELECTINFER_OUT_PROD_NO_AVX512 keeps the AVX2 loop. A child process (this test,
    // re-run) decodes each slice both ways: the two must agree to the bit, since every
    // sum takes the same fused multiply-adds in the same order.
    const CHILD: &str = "SELECTINFER_TEST_OUT_PROD_LOGITS";
    let cases = [
        (SynthArch::Llama, false, TargetType::F16, "llama-f16"),
        (SynthArch::Llama, false, TargetType::Q8_0, "llama-q8_0"),
        (SynthArch::Llama, false, TargetType::Q4_0, "llama-q4_0"),
        (SynthArch::Gemma3, true, TargetType::Q4KM, "wide-gemma3-q4_k_m"),
    ];
    if let Ok(out) = std::env::var(CHILD) {
        let mut bytes = Vec::new();
        for (arch, wide, ty, name) in cases {
            let path = sliced(&source(arch, wide, ty, name), DownLayout::Neurons, name);
            let model = Model::load(&path, &LoadOptions::default()).unwrap();
            for row in selective(&model, Layout::InPlace, 0.4, false).0 {
                bytes.extend(row.iter().flat_map(|x| x.to_le_bytes()));
            }
        }
        std::fs::write(out, bytes).unwrap();
        return;
    }
    // Each child makes its own (deterministic) slices in its own temporary folder.
    let wide = sliced(&source(SynthArch::Gemma3, true, TargetType::Q4KM, "wide-gemma3-q4_k_m"), DownLayout::Neurons, "wide-gemma3-q4_k_m");
    assert_eq!(down_type(&wide), GgmlType::Q5_0, "the Q5_0 loop is covered");
    let run = |no_avx512: bool| {
        let out = common::shared_dir().join(format!("nm-out-prod-logits-{no_avx512}.bin"));
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "the_avx512_and_avx2_out_prod_loops_give_the_same_logits_bit_for_bit", "--test-threads", "1"]);
        cmd.env(CHILD, &out).env_remove("SELECTINFER_OUT_PROD_NO_AVX512");
        if no_avx512 {
            cmd.env("SELECTINFER_OUT_PROD_NO_AVX512", "1");
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "child run (no_avx512 = {no_avx512}) failed");
        std::fs::read(out).unwrap()
    };
    let (avx512, avx2) = (run(false), run(true));
    assert!(!avx2.is_empty());
    assert!(avx512 == avx2, "the 512-bit loop changed the logits");
    #[cfg(target_arch = "x86_64")]
    if !std::arch::is_x86_feature_detected!("avx512bw") {
        eprintln!("note: this CPU has no AVX-512 BW, so both runs took the AVX2 loop");
    }
}

#[test]
fn one_token_out_prod_kernels_equal_the_dequantizing_prefill_path() {
    // A decoded token runs patch 0005/0008's fused one-row loops; the same token inside
    // a prefill batch runs the multi-row path, which dequantizes each row first.
    // Prompt + continuation fed at once (all logits, so that the last layer too runs
    // every token) must give the logits of feeding the continuation token by token,
    // up to float summation order.
    for (arch, wide, ty, name, want) in [
        (SynthArch::Llama, false, TargetType::F16, "llama-f16", GgmlType::F16),
        (SynthArch::Llama, false, TargetType::Q8_0, "llama-q8_0", GgmlType::Q8_0),
        (SynthArch::Llama, false, TargetType::Q4_0, "llama-q4_0", GgmlType::Q4_0),
        (SynthArch::Llama, true, TargetType::Q4KM, "wide-q4_k_m", GgmlType::Q8_0),
        (SynthArch::Gemma3, true, TargetType::Q4KM, "wide-gemma3-q4_k_m", GgmlType::Q5_0),
    ] {
        let path = sliced(&source(arch, wide, ty, name), DownLayout::Neurons, name);
        let g = GgufFile::read(&path).unwrap();
        assert!(
            (0..2).any(|l| g.tensor(&format!("blk.{l}.ffn_down.weight")).unwrap().ty == want),
            "{name}: covers a {want} ffn_down"
        );
        let model = Model::load(&path, &LoadOptions::default()).unwrap();
        let stepwise = plain_logits(&path);
        let mut tokens = model.tokenize(PROMPT, true, false);
        for (k, w) in CONTINUATION.iter().enumerate() {
            tokens.push(model.tokenize(w, false, false)[0]);
            let mut s = Session::new(&model, opts()).unwrap();
            s.decode(&tokens, true).unwrap(); // all logits: the last layer too runs every token
            let diff = max_rel_diff(&[s.logits(-1).to_vec()], &stepwise[k + 1..k + 2]);
            assert!(diff <= 1e-4, "{name}, token {k}: relative diff {diff} between prefill and decode");
            let moved = max_rel_diff(&stepwise[k..k + 1], &stepwise[k + 1..k + 2]);
            assert!(moved > 10.0 * diff.max(1e-7), "{name}, token {k}: the logits hardly move ({moved}), nothing was checked");
        }
    }
}

/// A neuron-major slice of a type llama.cpp repacks for its CPU kernels (Q4_K rows
/// in multiples of 8 on AVX2 / AVX-512 / ARM): its ffn_down stays in file layout
/// (patch 0011: out_prod reads it), its gate and up are repacked, and --compute
/// reorders both in place (engine::interleave swaps rows of the repacked groups):
/// no copy, the computed count rounded up to whole groups of 8, and decode equal to
/// the gathered copy of the same neurons (unrepacked kernels: only the summation
/// order differs).
#[test]
fn a_neuron_major_slice_of_a_repacked_type_is_reordered_in_place() {
    let src = source(SynthArch::Llama, true, TargetType::Q4KM, "wide-q4_k_m");
    // 0.75 x 512 = 384 kept neurons: rows in whole groups of 8, as repacking needs.
    let slice = |layout: DownLayout| sliced_at(&src, layout, &format!("nm-repack-{}.gguf", layout.name()), 0.75);
    let (neurons, columns) = (slice(DownLayout::Neurons), slice(DownLayout::Columns));
    let model = Model::load(&neurons, &LoadOptions::default()).unwrap();
    for l in 0..2 {
        assert_eq!(model.ffn_in_place(l), Ok(()), "layer {l}");
    }
    let repacked = model.host_tensor_bytes("blk.0.ffn_gate.weight").is_none();
    assert!(model.host_tensor_bytes("blk.0.ffn_down.weight").is_some(), "the neuron-major ffn_down stays in file layout");
    eprintln!("this CPU {} Q4_K weights", if repacked { "repacks" } else { "does not repack" });
    let group = if repacked { 8 } else { 1 };
    for l in 0..2 {
        assert_eq!(model.ffn_row_group(l), group, "layer {l}");
    }
    let plan = ComputePlan::for_model(model.gguf(), &ComputeOptions { compute: 0.4, token_share: 0.2, layers: None, no_static: false }).unwrap();
    assert_eq!(SelectiveSession::new(&model, plan, opts()).unwrap().layout(), Layout::InPlace);
    let (in_place, sets, copied) = selective(&model, Layout::InPlace, 0.4, false);
    assert_eq!(copied, 0);
    // round(0.4 x 512) = 205 computed, 208 in whole groups of 8.
    for set in sets.iter().flatten() {
        assert_eq!(set.len(), if repacked { 208 } else { 205 });
    }
    // The same neurons gathered into a copy (plain Q4_K rows), decoded the same way.
    let copy_model = Model::load(&neurons, &LoadOptions::default()).unwrap();
    let (copy, copy_sets, copy_bytes) = selective_sets(&copy_model, &sets);
    assert!(copy_bytes > 0);
    assert_eq!(copy_sets, sets);
    let diff = max_rel_diff(&in_place, &copy);
    assert!(diff <= 2e-3, "repacked in place against the copy: relative diff {diff}");
    let dense = max_rel_diff(&in_place, &selective(&model, Layout::InPlace, 0.75, false).0);
    assert!(dense > 10.0 * diff.max(1e-6), "phi 0.4 hardly differs from every neuron ({dense}): nothing was checked");
    // The column layout of the same widths: repacked gate/up and a repacked
    // ffn_down, whose columns cannot be swapped: a copy.
    let plain = Model::load(&columns, &LoadOptions::default()).unwrap();
    assert_eq!(plain.host_tensor_bytes("blk.0.ffn_gate.weight").is_none(), repacked);
}

/// Decode with the copy layout computing exactly `sets` (the first prompt's sets of
/// another session): the selection is redone on the same prompt, then checked.
fn selective_sets(model: &Model, sets: &[Option<Vec<u32>>]) -> (Vec<Vec<f32>>, Vec<Option<Vec<u32>>>, usize) {
    let n = sets.iter().flatten().map(Vec::len).max().unwrap();
    let n_orig = 512.0;
    let (out, got, bytes) = selective(model, Layout::Copy, n as f64 / n_orig, false);
    (out, got, bytes)
}

/// Where llama.cpp holds each FFN tensor (repacked or not) is found once, when the
/// model loads, and the file is read through the handle opened then: a selection
/// that moves a repacked tensor's first rows (no static neurons) is put back and made
/// again over prompts, and a file renamed over the model's path after it loaded (as
/// an experiment re-slicing a model of the same name does) changes nothing, where a
/// remap by path would have read the new file's bytes.
#[test]
fn in_place_rows_are_put_back_over_prompts_even_after_the_file_is_replaced() {
    let src = source(SynthArch::Llama, true, TargetType::Q4KM, "wide-q4_k_m");
    let slice = sliced_at(&src, DownLayout::Neurons, "nm-repack-neurons.gguf", 0.75);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    std::fs::copy(&slice, &path).unwrap();
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    let other = dir.path().join("other.gguf.tmp");
    std::fs::copy(&src, &other).unwrap();
    std::fs::rename(&other, &path).unwrap();
    let reference = Model::load(&slice, &LoadOptions::default()).unwrap();
    let run = |m: &Model| {
        let co = ComputeOptions { compute: 0.4, token_share: 0.2, layers: None, no_static: true };
        let mut s = SelectiveSession::new(m, ComputePlan::for_model(m.gguf(), &co).unwrap(), opts()).unwrap();
        s.set_layout(Layout::InPlace).unwrap();
        let mut runs = Vec::new();
        for prompt in [PROMPT, "one said the word of the man", PROMPT] {
            s.clear();
            let (_, sel) = s.prefill_and_select(&m.tokenize(prompt, true, false)).unwrap();
            assert_eq!(sel.compact_bytes, 0, "in place: nothing copied");
            let sets = s.current_sets().to_vec();
            let logits: Vec<Vec<f32>> = CONTINUATION
                .iter()
                .map(|w| {
                    s.session().decode(&m.tokenize(w, false, false)[..1], false).unwrap();
                    s.session().logits(-1).to_vec()
                })
                .collect();
            runs.push((sets, logits));
        }
        runs
    };
    let (got, want) = (run(&model), run(&reference));
    let moved = got[0].0.iter().flatten().any(|set| set.iter().take(8).copied().ne(0..8));
    assert!(moved, "the selection leaves every layer's first rows in place: nothing was checked");
    assert_eq!(got[0], got[2], "the same prompt after another: the file order was not put back exactly");
    assert_ne!(got[0].0, got[1].0, "two prompts chose the same neurons: nothing was reordered between them");
    assert_eq!(got, want, "the model whose file was replaced computes what a model of the intact file computes");
}
