//! The engine on tiny random-weight models: loading, generation, conversion and
//! the eval callback.

mod common;

use std::sync::{Arc, Mutex};

use selectinfer::engine::{
    quantize, GenerateOptions, LoadOptions, Model, ObservedTensor, Session, SessionOptions, TargetType, TensorObserver,
};
use selectinfer::gguf::{GgmlType, GgufFile};
use selectinfer::model::{FfnActivation, ModelInfo};
use selectinfer::synth::SynthArch;
use selectinfer::util::floats::decode_floats;

fn load(path: &std::path::Path) -> Model {
    Model::load(path, &LoadOptions::default()).expect("load")
}

fn session(model: &Model) -> Session<'_> {
    Session::new(model, SessionOptions { n_ctx: 256, n_batch: 64, threads: 2, observer: None }).unwrap()
}

#[test]
fn inspect_numbers_of_the_tiny_llama() {
    let info = ModelInfo::read(common::tiny_model(SynthArch::Llama)).unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.n_layer, 2);
    assert_eq!(info.n_embd, 64);
    assert_eq!(info.n_ff, vec![192, 192]);
    assert_eq!(info.ffn_activation, Some(FfnActivation::Swiglu));
    let n_vocab = 3 + 256 + 40;
    assert_eq!(info.n_vocab, Some(n_vocab));
    // Bytes counted by hand: F32 everywhere.
    let ffn = 2 * 3 * 64 * 192 * 4;
    let per_layer = (64 + 64 * 64 + 2 * 64 * 32 + 64 * 64 + 64) * 4;
    let non_ffn = 2 * 64 * n_vocab * 4 + 2 * per_layer + 64 * 4;
    assert_eq!(info.ffn_bytes, ffn);
    assert_eq!(info.non_ffn_bytes, non_ffn);
    assert_eq!(info.total_bytes, ffn + non_ffn);
    assert_eq!(info.ffn_types, vec!["F32"]);
}

#[test]
fn inspect_gemma3_reports_geglu() {
    let info = ModelInfo::read(common::tiny_model(SynthArch::Gemma3)).unwrap();
    assert_eq!(info.architecture, "gemma3");
    assert_eq!(info.ffn_activation, Some(FfnActivation::Geglu));
    assert_eq!(info.n_ff, vec![192, 192]);
}

#[test]
fn sampled_generation_is_deterministic_for_a_seed() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3] {
        let model = load(&common::tiny_model(arch));
        let prompt = model.tokenize("the word of a", true, false);
        assert!(prompt.len() >= 4, "{arch:?}: prompt tokenised to {prompt:?}");
        let opts = GenerateOptions { max_tokens: 24, temperature: 0.9, seed: 42, ..Default::default() };
        let mut s = session(&model);
        let (a, stats) = s.generate(&prompt, &opts, |_| true).unwrap();
        s.clear();
        let (b, _) = s.generate(&prompt, &opts, |_| true).unwrap();
        assert_eq!(a, b, "{arch:?}: same seed, same tokens");
        assert!(!a.is_empty());
        assert_eq!(stats.prompt_tokens, prompt.len());
        // Greedy is deterministic too and independent of the seed.
        let mut greedy = |seed| {
            s.clear();
            s.generate(&prompt, &GenerateOptions { max_tokens: 12, temperature: 0.0, seed, ..Default::default() }, |_| true).unwrap().0
        };
        let (g1, g2) = (greedy(1), greedy(2));
        assert_eq!(g1, g2);
    }
}

#[test]
fn greedy_generation_follows_the_argmax_of_the_logits() {
    let model = load(&common::tiny_model(SynthArch::Llama));
    let prompt = model.tokenize("the word", true, false);
    let mut s = session(&model);
    let (tokens, _) = s.generate(&prompt, &GenerateOptions { max_tokens: 3, ..Default::default() }, |_| true).unwrap();
    // Recompute each step from full logits of the whole sequence.
    let mut seq = prompt.clone();
    for &t in &tokens {
        let logits = s.eval_all_logits(&seq).unwrap();
        let last = logits.last().unwrap();
        let argmax = (0..last.len()).max_by(|&i, &j| last[i].total_cmp(&last[j])).unwrap() as i32;
        assert_eq!(argmax, t);
        seq.push(t);
    }
}

#[test]
fn logits_of_the_later_positions_alone_equal_those_of_a_full_evaluation() {
    // Perplexity asks for the scored half of a chunk only.
    let model = load(&common::tiny_model(SynthArch::Llama));
    let tokens = model.tokenize("the word of a man the word of a", true, false);
    assert!((8..=64).contains(&tokens.len()), "{tokens:?}");
    let mut s = session(&model);
    let all = s.eval_all_logits(&tokens).unwrap();
    let half = tokens.len() / 2;
    let later = s.eval_logits_from(&tokens, half).unwrap();
    assert_eq!(later.len(), tokens.len() - half);
    for (a, b) in all[half..].iter().zip(&later) {
        let diff = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        assert!(diff < 1e-4, "max logit difference {diff}");
    }
}

#[test]
fn a_prefill_with_its_last_batch_whole_ends_as_a_plain_one() {
    // What --decode-refit prefills with: the last n_batch tokens as one batch of their
    // own, after the rest; the hook sees that batch's length before it runs.
    let model = load(&common::tiny_model(SynthArch::Llama));
    let tokens = model.tokenize("the word of a man the word of a man is what it was", true, false);
    assert_eq!(tokens.len(), 74);
    let small = |n_batch| Session::new(&model, SessionOptions { n_ctx: 256, n_batch, threads: 2, observer: None }).unwrap();
    for n_batch in [16, 128] {
        let mut plain = small(n_batch);
        let want = plain.prefill(&tokens).unwrap();
        let mut s = small(n_batch);
        let mut seen = None;
        let stats = s.prefill_last_batch_whole(&tokens, |n| seen = Some(n)).unwrap();
        assert_eq!(seen, Some(tokens.len().min(n_batch as usize)));
        assert_eq!(stats.prompt_tokens, want.prompt_tokens);
        // Within one batch nothing changes; over several, the batches differ (74
        // tokens: 16, 16, 16, 10, then 16, against 16, 16, 16, 16, 10), and so may
        // the rounding.
        let (got, want) = (s.logits(-1), plain.logits(-1));
        let diff = got.iter().zip(want).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        let scale = want.iter().fold(0f32, |m, x| m.max(x.abs()));
        let tolerance = if tokens.len() <= n_batch as usize { 0.0 } else { 1e-4 * scale };
        assert!(diff <= tolerance, "n_batch {n_batch}: max logit difference {diff} (logits up to {scale})");
        // Decoding goes on after the whole prompt.
        s.decode(&tokens[..1], false).unwrap();
    }
    // A prompt over the context is refused before anything is decoded.
    let long: Vec<_> = tokens.iter().cycle().take(257).copied().collect();
    assert!(small(16).prefill_last_batch_whole(&long, |_| panic!("decoded")).is_err());
}

#[test]
fn f32_to_f16_to_f32_round_trips_within_f16_precision() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::tiny_model(SynthArch::Llama);
    let f16 = dir.path().join("m.f16.gguf");
    let back = dir.path().join("m.f32.gguf");
    quantize(&src, &f16, TargetType::F16, 2).unwrap();
    quantize(&f16, &back, TargetType::F32, 2).unwrap();
    let (a, h, b) = (GgufFile::read(&src).unwrap(), GgufFile::read(&f16).unwrap(), GgufFile::read(&back).unwrap());
    assert!(h.tensors.iter().any(|t| t.ty == GgmlType::F16), "the F16 file has F16 matrices");
    assert!(b.tensors.iter().all(|t| t.ty == GgmlType::F32));
    for ta in &a.tensors {
        let tb = b.tensor(&ta.name).expect("same tensors");
        assert_eq!(ta.dims, tb.dims);
        let va = decode_floats(&a.read_tensor_data(ta).unwrap(), ta.ty).unwrap();
        let vb = decode_floats(&b.read_tensor_data(tb).unwrap(), tb.ty).unwrap();
        for (x, y) in va.iter().zip(&vb) {
            // F16 has an 11-bit significand: relative error at most 2^-11 (normals),
            // absolute 2^-24 near zero.
            assert!((x - y).abs() <= x.abs() * 2f32.powi(-11) + 2f32.powi(-24), "{}: {x} vs {y}", ta.name);
        }
    }
}

/// Records the names and shapes of the nodes whose names start with a prefix.
struct Recorder {
    prefix: &'static str,
    seen: Arc<Mutex<Vec<(String, [usize; 4])>>>,
}

impl TensorObserver for Recorder {
    fn wants(&mut self, name: &str) -> bool {
        name.starts_with(self.prefix)
    }
    fn observe(&mut self, t: ObservedTensor<'_>) {
        assert_eq!(t.data.len(), t.ne.iter().product::<usize>());
        self.seen.lock().unwrap().push((t.name.to_string(), t.ne));
    }
}

#[test]
fn eval_callback_sees_the_ffn_activation_of_every_layer() {
    for (arch, node) in [(SynthArch::Llama, "ffn_swiglu"), (SynthArch::Gemma3, "ffn_geglu")] {
        let model = load(&common::tiny_model(arch));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let observer = Box::new(Recorder { prefix: node, seen: seen.clone() });
        let mut s =
            Session::new(&model, SessionOptions { n_ctx: 128, n_batch: 32, threads: 2, observer: Some(observer) }).unwrap();
        let prompt = model.tokenize("the word of", true, false);
        s.decode(&prompt, false).unwrap();
        let seen = seen.lock().unwrap().clone();
        // Layer 0 sees every prompt token; the last layer only the output row.
        assert_eq!(seen, vec![(format!("{node}-0"), [192, prompt.len(), 1, 1]), (format!("{node}-1"), [192, 1, 1, 1])], "{arch:?}");
    }
}

#[test]
fn synthetic_qwen2_loads_and_generates() {
    // The architecture of `synth --shape qwen2.5-3b`, at tiny size.
    let model = load(&common::tiny_model(SynthArch::Qwen2));
    let info = ModelInfo::read(model.path()).unwrap();
    assert_eq!((info.architecture.as_str(), info.ffn_activation), ("qwen2", Some(FfnActivation::Swiglu)));
    let prompt = model.tokenize("the word of", true, false);
    let (tokens, _) = session(&model).generate(&prompt, &GenerateOptions { max_tokens: 4, ignore_eog: true, ..Default::default() }, |_| true).unwrap();
    assert_eq!(tokens.len(), 4);
}

#[test]
fn real_model_shapes_have_their_published_dimensions() {
    use selectinfer::synth::Shape;
    let s = Shape::Llama32_3b.spec(GgmlType::F16, 1);
    assert_eq!((s.n_layer, s.n_embd, s.n_ff[0], s.n_head, s.n_head_kv, s.head_dim), (28, 3072, 8192, 24, 8, 128));
    let q = Shape::Qwen25_3b.spec(GgmlType::F16, 1);
    assert_eq!((q.n_layer, q.n_embd, q.n_ff[0], q.n_head, q.n_head_kv), (36, 2048, 11008, 16, 2));
    assert_eq!(q.n_words + 3 + 256, 151_936, "vocabulary size");
}
