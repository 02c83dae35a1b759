//! The prompt cache (`eval --prompt-cache`): prompts that reuse the KV cache and
//! votes of the prefix they share with the prompt before choose the same neurons
//! and generate the same tokens as prompts prefilled from an empty cache.

mod common;

use std::path::PathBuf;

use selectinfer::compute::prompt_cache::{checkpoints, common_prefix};
use selectinfer::compute::{ComputeOptions, ComputePlan, SelectiveSession};
use selectinfer::engine::{GenerateOptions, LoadOptions, Model, Session, SessionOptions, Token};
use selectinfer::model::ModelInfo;
use selectinfer::synth::SynthArch;

fn opts() -> SessionOptions {
    SessionOptions { n_ctx: 256, n_batch: 64, threads: 2, observer: None }
}

/// A random gamma 0.7 / delta 0.3 slice of the tiny model, its own file.
fn sliced(arch: SynthArch) -> PathBuf {
    common::random_slice(&common::tiny_model(arch), &common::shared_dir().join(format!("prompt-cache-{arch:?}.gguf")), 5)
}

/// Prompts as a k-shot evaluation makes them: a shared beginning, runs of prompts
/// sharing more (questions on one paragraph), one sharing less than the one before,
/// and one that is all of another prompt and more.
const PROMPTS: [&str; 6] = [
    "the word of a man is what it was and the one said there",
    "the word of a man is what it was and the one said here",
    "the word of a man is what it was and the one",
    "the word of a woman",
    "the word of a man is what it was",
    "the word of a man is what it was and the one said there was a word",
];

/// Per prompt: the generated tokens and the computed sets.
type Run = Vec<(Vec<Token>, Vec<Option<Vec<u32>>>)>;

/// The prompts through one session with the prompt cache: what each generated and
/// chose, the tokens each reused, and where each was cut into batches.
fn cached_run(s: &mut SelectiveSession, prompts: &[Vec<Token>]) -> (Run, Vec<usize>, Vec<Vec<usize>>) {
    let gen = GenerateOptions { max_tokens: 6, ignore_eog: true, ..Default::default() };
    let points = checkpoints(prompts);
    let (mut out, mut reused, mut cuts) = (Vec::new(), Vec::new(), Vec::new());
    for (p, at) in prompts.iter().zip(&points) {
        let (tokens, _, _, r) = s.generate_cached(p, at, &gen, |_| true).unwrap();
        out.push((tokens, s.current_sets().to_vec()));
        reused.push(r);
        cuts.push(s.prompt_cache_ends());
    }
    (out, reused, cuts)
}

/// Each prompt prefilled from an empty cache, cut into batches where `cuts` says.
fn fresh_run(s: &mut SelectiveSession, prompts: &[Vec<Token>], cuts: &[Vec<usize>]) -> Run {
    let gen = GenerateOptions { max_tokens: 6, ignore_eog: true, ..Default::default() };
    let mut out = Vec::new();
    for (p, at) in prompts.iter().zip(cuts) {
        s.clear();
        let (tokens, _, _, r) = s.generate_cached(p, at, &gen, |_| true).unwrap();
        assert_eq!(r, 0, "a cleared session reuses nothing");
        out.push((tokens, s.current_sets().to_vec()));
    }
    out
}

fn session<'m>(model: &'m Model, phi: Option<f64>) -> SelectiveSession<'m> {
    let compute = ComputeOptions { compute: phi.unwrap_or(1.0), token_share: 0.2, layers: None, no_static: false };
    let n_layer = ModelInfo::from_gguf(model.gguf()).unwrap().n_layer as usize;
    let plan = if phi.is_some() { ComputePlan::for_model(model.gguf(), &compute).unwrap() } else { ComputePlan::dense(n_layer) };
    SelectiveSession::new(model, plan, opts()).unwrap()
}

/// The reference: llama.cpp's results depend on where a prompt is cut into
/// batches (even on these F32 models), so each prompt is prefilled from an empty
/// cache with the cuts the cached run made; a reused KV cache or votes that
/// differed from the prompt's own would change the logits or the chosen neurons.
#[test]
fn cached_prompts_choose_and_generate_as_fresh_ones_cut_alike() {
    let path = sliced(SynthArch::Llama);
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    let p: Vec<Vec<Token>> = PROMPTS.iter().map(|t| model.tokenize(t, true, false)).collect();
    assert_split_changes_logits(&model, &p[5]);
    for phi in [Some(0.4), None] {
        let (cached, reused, cuts) = cached_run(&mut session(&model, phi), &p);
        let fresh = fresh_run(&mut session(&model, phi), &p, &cuts);
        assert_eq!(cached, fresh, "phi {phi:?}");
        if phi.is_some() {
            assert!(fresh.iter().all(|(_, sets)| sets.iter().any(Option::is_some)), "every prompt computed selectively");
        }
        // Each prompt reuses the longest checkpoint it starts with: the second
        // what it shares with the first; the third (all of the second's
        // beginning) only the beginning all prompts share, as the second reused a
        // longer prefix and took no checkpoint inside it; the fourth and fifth
        // that beginning; the sixth the whole fifth but its last token, which the
        // fifth decoded itself.
        let shared: Vec<usize> = (0..p.len()).map(|i| if i == 0 { 0 } else { common_prefix(&p[i - 1], &p[i]) }).collect();
        let all = p.iter().map(|q| common_prefix(&p[0], q)).min().unwrap();
        assert!(all > 0 && shared[1] > all, "{shared:?}, {all}");
        assert_eq!(reused, vec![0, shared[1], all, all, all, p[4].len() - 1], "shared with the prompt before: {shared:?}");
    }
}

/// Why the reference cuts alike: one batch and two differ.
fn assert_split_changes_logits(model: &Model, t: &[Token]) {
    let mut s = Session::new(model, opts()).unwrap();
    s.decode(t, false).unwrap();
    let whole = s.logits(-1).to_vec();
    s.clear();
    s.decode(&t[..7], false).unwrap();
    s.decode(&t[7..], false).unwrap();
    assert_ne!(whole, s.logits(-1).to_vec());
}

#[test]
fn gemma3_with_its_sliding_window_layers_reuses_alike() {
    // Within the window the sliding-window cache drops a suffix as the others do;
    // where it cannot, the session starts the prompt over (nothing reused).
    let path = sliced(SynthArch::Gemma3);
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    let p: Vec<Vec<Token>> = PROMPTS.iter().map(|t| model.tokenize(t, true, false)).collect();
    let (cached, reused, cuts) = cached_run(&mut session(&model, Some(0.4)), &p);
    assert!(reused.iter().sum::<usize>() > 0, "{reused:?}");
    assert_eq!(cached, fresh_run(&mut session(&model, Some(0.4)), &p, &cuts));
}
