//! Selective loading: the GGUF rewrite against the masked dense reference.

mod common;

use std::path::{Path, PathBuf};

use selectinfer::engine::{quantize, LoadOptions, Model, Session, SessionOptions, TargetType};
use selectinfer::gguf::{GgufFile, Value};
use selectinfer::model::{FfnActivation, ModelInfo};
use selectinfer::profile::{run_profile, ProfileRequest};
use selectinfer::fit::mask::NeuronMask;
use selectinfer::select::{slice_model, SliceMeta, SliceRequest, SliceSource};
use selectinfer::synth::SynthArch;
use selectinfer::tasks::{Split, Task};

const PROMPTS: [&str; 3] = ["the word of a man", "what is it that", "one had said there"];

/// A profile of the tiny model (translate prompts), made once.
fn tiny_profile(arch: SynthArch) -> PathBuf {
    static ONCE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::shared_dir().join(format!("profile-{arch:?}"));
    if !dir.join("model.json").exists() {
        let data = common::shared_dir().join(format!("translate-{arch:?}.jsonl"));
        let lines: Vec<String> = (0..6)
            .map(|i| serde_json::json!({"src": format!("the {i} word of a man is"), "ref": "x"}).to_string())
            .collect();
        std::fs::write(&data, lines.join("\n")).unwrap();
        run_profile(&ProfileRequest {
            model: common::tiny_model(arch),
            task: Task::Translate,
            data,
            split: Split::All,
            limit: None,
            max_tokens: None,
            gen_tokens: 4,
            out_dir: dir.clone(),
            threads: 2,
            sequences: 4,
            progress: false,
        })
        .unwrap();
        selectinfer::profile::ranking::merge_dir(&dir).unwrap();
    }
    dir
}

fn request(model: &Path, out: &Path, source: SliceSource, load: f64, layers: Option<std::ops::Range<usize>>) -> SliceRequest {
    SliceRequest { model: model.into(), output: out.into(), source, load, static_share: 0.3 * load.min(1.0), layers, verify: true, source_sha256: None, down_layout: Default::default() }
}

/// Logits of every position of every prompt, optionally with a neuron mask.
fn logits(path: &Path, mask: Option<NeuronMask>) -> Vec<Vec<f32>> {
    let model = Model::load(path, &LoadOptions::default()).unwrap();
    let observer = mask.map(|m| Box::new(m) as Box<dyn selectinfer::engine::TensorObserver>);
    let mut s = Session::new(&model, SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer }).unwrap();
    PROMPTS.iter().flat_map(|p| s.eval_all_logits(&model.tokenize(p, true, false)).unwrap()).collect()
}

fn max_abs_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> (f32, f32) {
    let mut diff = 0f32;
    let mut scale = 0f32;
    for (x, y) in a.iter().zip(b) {
        for (p, q) in x.iter().zip(y) {
            diff = diff.max((p - q).abs());
            scale = scale.max(p.abs());
        }
    }
    (diff, scale)
}

fn mask_of(sliced: &Path, act: FfnActivation) -> NeuronMask {
    let meta = SliceMeta::from_gguf(&GgufFile::read(sliced).unwrap()).unwrap().unwrap();
    NeuronMask::new(act, meta.kept)
}

#[test]
fn full_load_over_all_layers_is_bit_identical() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::tiny_model(SynthArch::Llama);
    let out = dir.path().join("full.gguf");
    let r = slice_model(&request(&src, &out, SliceSource::Profile { dir: tiny_profile(SynthArch::Llama), task: Task::Translate }, 1.0, Some(0..2)))
        .unwrap();
    assert_eq!(r.ffn_bytes, r.source_ffn_bytes);
    assert_eq!(logits(&src, None), logits(&out, None));
}

#[test]
fn sliced_model_equals_the_masked_dense_model() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3] {
        let dir = tempfile::tempdir().unwrap();
        let src = common::tiny_model(arch);
        let act = ModelInfo::read(&src).unwrap().ffn_activation.unwrap();
        let sources = [SliceSource::Profile { dir: tiny_profile(arch), task: Task::Translate }, SliceSource::Random { seed: 9 }];
        for (i, source) in sources.into_iter().enumerate() {
            // Layer 1 only: the widths differ per layer (needs patch 0002).
            for (load, layers) in [(0.5, Some(1..2)), (0.7, Some(0..2))] {
                let out = dir.path().join(format!("s{i}-{load}.gguf"));
                slice_model(&request(&src, &out, source.clone(), load, layers.clone())).unwrap();
                let info = ModelInfo::read(&out).unwrap();
                let k = (load * 192.0f64).round() as u64;
                let want: Vec<u64> = (0..2).map(|l| if layers.as_ref().unwrap().contains(&l) { k } else { 192 }).collect();
                assert_eq!(info.n_ff, want, "{arch:?}");
                let (diff, scale) = max_abs_diff(&logits(&out, None), &logits(&src, Some(mask_of(&out, act))));
                assert!(diff <= 1e-4 * scale.max(1.0), "{arch:?} source {i} load {load}: max diff {diff} at scale {scale}");
                // Dropping neurons changes the output: the comparison is not vacuous.
                let (d_unmasked, _) = max_abs_diff(&logits(&out, None), &logits(&src, None));
                assert!(d_unmasked > 100.0 * diff.max(1e-7), "{arch:?}: slicing changed nothing?");
            }
        }
    }
}

#[test]
fn quantized_sources_keep_their_ffn_down_type_in_whole_blocks() {
    let dir = tempfile::tempdir().unwrap();
    for (ty, name, load, want_k) in [(TargetType::Q8_0, "Q8_0", 0.5, 96u64), (TargetType::Q4_0, "Q4_0", 0.7, 128)] {
        let q = dir.path().join(format!("{name}.gguf"));
        quantize(&common::tiny_model(SynthArch::Llama), &q, ty, 2).unwrap();
        let out = dir.path().join(format!("{name}-sliced.gguf"));
        let r = slice_model(&request(&q, &out, SliceSource::Random { seed: 1 }, load, Some(0..2))).unwrap();
        assert!(r.down_requantized);
        let g = GgufFile::read(&out).unwrap();
        for w in ["ffn_down", "ffn_up", "ffn_gate"] {
            assert_eq!(g.tensor(&format!("blk.0.{w}.weight")).unwrap().ty.name(), name, "{w} keeps the source's type");
        }
        // round(0.7 * 192) = 134 is rounded to the nearest whole number of 32-blocks.
        assert_eq!(ModelInfo::read(&out).unwrap().n_ff, vec![want_k, want_k], "{name}");
        let src_info = ModelInfo::read(&q).unwrap();
        let want_bytes = (src_info.ffn_bytes as f64 * want_k as f64 / 192.0) as u64;
        assert!(r.ffn_bytes.abs_diff(want_bytes) * 100 <= want_bytes, "{name}: FFN bytes {} vs {want_bytes}", r.ffn_bytes);
        // The masked reference multiplies the source's ffn_down; the slice multiplies
        // the kept columns quantized again in the same type. That requantization
        // (new block scales over the kept values) is what separates them.
        let (a, b) = (logits(&out, None), logits(&q, Some(mask_of(&out, FfnActivation::Swiglu))));
        let (diff, scale) = max_abs_diff(&a, &b);
        let tol = if name == "Q8_0" { 1e-2 } else { 5e-2 };
        assert!(diff <= tol * scale.max(1.0), "{name}: max diff {diff} at scale {scale}");
        eprintln!("{name}: requantization error {:.2e} of the logit scale", diff / scale.max(1.0));
        let argmax = |v: &Vec<f32>| (0..v.len()).max_by(|&i, &j| v[i].total_cmp(&v[j])).unwrap();
        let agree = a.iter().zip(&b).filter(|(x, y)| argmax(x) == argmax(y)).count();
        assert!(agree * 10 >= a.len() * 8, "{name}: next-token argmax agrees at {agree} of {} positions", a.len());
    }
}

#[test]
fn a_profile_of_the_original_slices_its_conversions_but_no_other_file() {
    let dir = tempfile::tempdir().unwrap();
    let profile = tiny_profile(SynthArch::Llama);
    let src = common::tiny_model(SynthArch::Llama);
    let q8 = dir.path().join("converted.gguf");
    let o = common::selectinfer(&["convert", src.to_str().unwrap(), "--to", "q8_0", "-o", q8.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", common::text(&o));
    let lineage = selectinfer::profile::ranking::lineage(&GgufFile::read(&q8).unwrap());
    assert_eq!(lineage, vec![selectinfer::util::hash::file_sha256(&src).unwrap()], "convert records its source");
    let out = dir.path().join("converted-sliced.gguf");
    slice_model(&request(&q8, &out, SliceSource::Profile { dir: profile.clone(), task: Task::Translate }, 0.5, Some(0..2))).unwrap();
    // The same conversion made without `convert` carries no lineage: refused.
    let foreign = dir.path().join("foreign.gguf");
    quantize(&src, &foreign, TargetType::Q8_0, 2).unwrap();
    let err = slice_model(&request(&foreign, &dir.path().join("x.gguf"), SliceSource::Profile { dir: profile, task: Task::Translate }, 0.5, Some(0..2)))
        .unwrap_err();
    assert!(format!("{err:#}").contains("foreign.gguf"), "{err:#}");
    assert!(!dir.path().join("x.gguf").exists());
}

#[test]
fn metadata_round_trips_and_uniform_widths_stay_scalar() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::tiny_model(SynthArch::Llama);
    let out = dir.path().join("s.gguf");
    let prof = tiny_profile(SynthArch::Llama);
    slice_model(&request(&src, &out, SliceSource::Profile { dir: prof.clone(), task: Task::Translate }, 0.5, Some(0..2))).unwrap();
    let g = GgufFile::read(&out).unwrap();
    let meta = SliceMeta::from_gguf(&g).unwrap().unwrap();
    assert_eq!((meta.load, meta.layer_start, meta.layer_end), (0.5, 0, 2));
    assert_eq!(meta.task.as_deref(), Some("translate"));
    assert_eq!(meta.source_sha256, selectinfer::util::hash::file_sha256(&src).unwrap());
    let base = selectinfer::profile::ranking::read_ranking(&prof.join("task-translate.json"), &prof).unwrap();
    for l in 0..2 {
        let kept = meta.kept[l].as_ref().unwrap();
        let stat = meta.static_set[l].as_ref().unwrap();
        assert_eq!(kept.len(), 96);
        assert_eq!(stat.len(), 29, "round(0.3 * 0.5 * 192)");
        assert_eq!(stat[..], base.layers[l].order[..29], "static = top of the task ranking");
        assert_eq!(kept[..29], stat[..], "static neurons come first");
    }
    // Every layer has the same width: the key stays a scalar and every FFN tensor
    // has that width, which is what an unpatched llama.cpp checks.
    assert_eq!(g.get("llama.feed_forward_length"), Some(&Value::U32(96)));
    for t in g.tensors.iter().filter(|t| selectinfer::model::is_ffn_tensor(&t.name)) {
        assert!(t.dims.contains(&96), "{} {:?}", t.name, t.dims);
    }
    let again = slice_model(&request(&out, &dir.path().join("t.gguf"), SliceSource::Random { seed: 1 }, 0.5, None)).unwrap_err();
    assert!(format!("{again:#}").contains("already sliced"));
}

#[test]
fn slice_bad_input_is_a_clear_error_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::tiny_model(SynthArch::Llama);
    let m = src.to_str().unwrap();
    let prof = tiny_profile(SynthArch::Llama);
    let p = prof.to_str().unwrap();
    let out = dir.path().join("o.gguf");
    let o = out.to_str().unwrap();
    let base = ["slice", "-m", m, "--profile", p, "--task", "translate", "-o", o];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    common::assert_clean_failure(&with(&base, &["--load", "0"]), "'0' for '--load <LOAD>': 0 is not a share in (0, 1]");
    common::assert_clean_failure(&with(&base, &["--load", "1.5"]), "'1.5' for '--load <LOAD>': 1.5 is not a share in (0, 1]");
    common::assert_clean_failure(&with(&base, &["--load", "0.5", "--static", "0.6"]), "--static (delta) must be in [0, --load = 0.5]");
    common::assert_clean_failure(&with(&base, &["--layers", "0..99"]), "outside the model's 2 layers");
    common::assert_clean_failure(&with(&base, &["--layers", "3..1"]), "is empty");
    common::assert_clean_failure(&["slice", "-m", m, "--profile", p, "--task", "qa", "-o", o], "task-qa.json: missing");
    let other = common::tiny_model(SynthArch::Gemma3);
    common::assert_clean_failure(&["slice", "-m", other.to_str().unwrap(), "--profile", p, "--task", "translate", "-o", o], "is a profile of tiny-Llama.gguf");
    common::assert_clean_failure(&["slice", "-m", m, "--random", "-o", m], "is the input --model");
    assert!(common::files_in(dir.path()).is_empty(), "nothing left behind");
}

/// A source width edited in a neuron-major slice (it sets how many neurons
/// `--compute` takes, and a wider one would compute every loaded neuron) is refused.
#[test]
fn an_edited_source_width_is_refused() {
    use selectinfer::gguf::{GgufWriter, TensorSpec};
    let dir = tempfile::tempdir().unwrap();
    let sliced = dir.path().join("s.gguf");
    let tiny = common::tiny_model(SynthArch::Llama);
    let o = common::selectinfer(&[
        "slice", "-m", tiny.to_str().unwrap(), "--random", "--load", "0.5", "--static", "0.25", "--layers", "0..2", "--down-layout", "neurons", "-o",
        sliced.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let g = GgufFile::read(&sliced).unwrap();
    let mut md = g.metadata.clone();
    md.retain(|(k, _)| k != "selectinfer.source_n_ff");
    md.push(("selectinfer.source_n_ff".into(), Value::u32s([192, 999])));
    let edited = dir.path().join("edited.gguf");
    let mut w = GgufWriter::create(&edited, &md, g.tensors.iter().map(TensorSpec::from).collect()).unwrap();
    for t in &g.tensors {
        w.write_tensor(&g.read_tensor_data(t).unwrap()).unwrap();
    }
    w.finish().unwrap();
    common::assert_clean_failure(&["inspect", edited.to_str().unwrap(), "--json"], "selectinfer.source_n_ff[1] names is 96");
    assert!(SliceMeta::from_gguf(&GgufFile::read(&sliced).unwrap()).unwrap().is_some(), "the slice as written passes");
}

/// Copies `from` into `to`, packing every JSON file with the system's `gzip -n`
/// (as scripts/make-profiles.sh packs the committed 1.5B profile).
fn packed_copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            packed_copy(&p, &dest);
        } else if p.extension().is_some_and(|x| x == "json") {
            let out = std::process::Command::new("gzip").args(["-n", "-c"]).arg(&p).output().unwrap();
            assert!(out.status.success());
            std::fs::write(to.join(format!("{}.gz", p.file_name().unwrap().to_str().unwrap())), out.stdout).unwrap();
        }
    }
}

#[test]
fn a_packed_profile_slices_the_same_file_and_merges_packed() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::tiny_model(SynthArch::Llama);
    let plain = tiny_profile(SynthArch::Llama);
    let packed = dir.path().join("packed");
    std::fs::create_dir_all(&packed).unwrap();
    packed_copy(&plain, &packed);
    assert!(packed.join("task-translate.json.gz").exists() && !packed.join("task-translate.json").exists());
    let (a, b) = (dir.path().join("a.gguf"), dir.path().join("b.gguf"));
    for (profile, out) in [(&plain, &a), (&packed, &b)] {
        slice_model(&request(&src, out, SliceSource::Profile { dir: profile.clone(), task: Task::Translate }, 0.5, Some(0..2))).unwrap();
    }
    // The same neurons and the same recorded profile hash: byte for byte the same slice.
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "a packed profile slices another file");
    // Re-merging keeps the packed form and the same rankings.
    let written = selectinfer::profile::ranking::merge_dir(&packed).unwrap();
    assert!(written.iter().all(|p| p.extension().is_some_and(|x| x == "gz")), "{written:?}");
    assert!(!packed.join("model.json").exists());
    let r = |d: &Path, f: &str| selectinfer::profile::ranking::read_ranking(&d.join(f), d).unwrap().layers[0].order.clone();
    assert_eq!(r(&packed, "model.json.gz"), r(&plain, "model.json"));
    // `profile overlap` reads the packed raw files.
    let o = common::selectinfer(&["profile", "overlap", packed.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", common::text(&o));
}
