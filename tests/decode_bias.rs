//! Decode-only compensation of the neurons selective computation skips, after each
//! prompt's prefill: `--decode-bias` adds to every sparsified layer's `ffn_down`
//! bias the prompt's mean contribution of the loaded neurons it skips, and
//! `--decode-refit RIDGE` also refits the computed columns to the prompt's loaded
//! FFN output (ridge regression over the prompt's tokens; the fit itself equals an
//! independent solution in the unit tests of `compute::refit`). Prefill and the file
//! are unchanged.

mod common;

use selectinfer::compute::refit::prompt_refit;
use selectinfer::compute::{ComputeOptions, ComputePlan, Layout, SelectiveSession};
use selectinfer::engine::{LoadOptions, Model, SessionOptions};
use selectinfer::gguf::GgufFile;
use selectinfer::model::ModelInfo;
use selectinfer::profile::weights::down_matrix;
use selectinfer::synth::SynthArch;

use common::{down_bias_in_memory as bias_in_memory, prompt_ffn_rows, prompt_ffn_rows_batched, prompt_ffn_rows_last_batch, sha256_of as sha256, translate_slice};

const PROMPTS: [&str; 2] = ["the 3 word of a man is what it was", "one said there was no other way to 9"];

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The bias decode should run with after `prompt` selected `sets`: the file's bias
/// plus, over the loaded positions p not computed, W_down[:, p] x the mean of a_p
/// over the prompt's tokens (recorded here by a plain session).
fn expected_biases(model: &Model, g: &GgufFile, prompt: &str, sets: &[Option<Vec<u32>>]) -> Vec<Option<Vec<f64>>> {
    let info = ModelInfo::from_gguf(g).unwrap();
    let rows = prompt_ffn_rows(model, prompt);
    (0..info.n_layer)
        .map(|l| {
            let set = sets[l].as_ref()?;
            let (w, n_embd, n_ff) = down_matrix(g, l).unwrap();
            let t = (rows[l].len() / n_ff) as f64;
            let file: Vec<f32> = floats(&g.read_tensor_data(g.tensor(&format!("blk.{l}.ffn_down.bias")).unwrap()).unwrap());
            Some(
                (0..n_embd)
                    .map(|e| {
                        let skipped = (0..n_ff).filter(|p| !set.contains(&(*p as u32)));
                        f64::from(file[e]) + skipped.map(|p| f64::from(w[e * n_ff + p]) * rows[l].chunks_exact(n_ff).map(|a| f64::from(a[p])).sum::<f64>() / t).sum::<f64>()
                    })
                    .collect(),
            )
        })
        .collect()
}

/// A compensated slice (it has a down bias) of the translate profile's model of
/// `arch` and, once, a slice without one: (dir, compensated, plain, its sha256, file, model).
fn fixture(arch: SynthArch) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, String, GgufFile, Model) {
    let dir = tempfile::tempdir().unwrap();
    let (m, p, _) = common::translate_profile(dir.path(), arch);
    let path = translate_slice(dir.path(), &m, &p, "mean.gguf", &["--compensate", "mean"]);
    let plain = translate_slice(dir.path(), &m, &p, "plain.gguf", &[]);
    let before = sha256(&path);
    let g = GgufFile::read(&path).unwrap();
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    (dir, path, plain, before, g, model)
}

#[test]
fn decode_bias_adds_the_prompts_skipped_contribution_for_decode_only() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3] {
        let (_dir, path, plain, before, g, model) = fixture(arch);
        // Activations for the expected biases come from a second instance: the
        // session under test reorders and shifts the first one's weights.
        let reference = Model::load(&path, &LoadOptions::default()).unwrap();
        let file_bias: Vec<Vec<f32>> = (0..2).map(|l| bias_in_memory(&model, l)).collect();
        let opts = ComputeOptions { compute: 0.4, token_share: 0.2, layers: None, no_static: false };
        for layout in [Layout::InPlace, Layout::Copy] {
            // Per prompt: prefill logits and the first decode step's, with and without.
            let mut runs = Vec::new();
            for on in [false, true] {
                let mut s = SelectiveSession::new(&model, ComputePlan::for_model(&g, &opts).unwrap(), SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer: None }).unwrap();
                s.set_layout(layout).unwrap();
                s.set_decode_bias(on).unwrap();
                let mut logits = Vec::new();
                for prompt in PROMPTS {
                    s.clear();
                    s.prefill_and_select(&model.tokenize(prompt, true, false)).unwrap();
                    let prefill = s.session().logits(-1).to_vec();
                    let expected = expected_biases(&reference, &g, prompt, s.current_sets());
                    for l in 0..2 {
                        let got = bias_in_memory(&model, l);
                        if on {
                            let want = expected[l].as_ref().unwrap();
                            let scale = want.iter().fold(1e-6f64, |a, v| a.max(v.abs()));
                            let worst = got.iter().zip(want).map(|(a, b)| (f64::from(*a) - b).abs()).fold(0.0, f64::max);
                            assert!(worst <= 1e-5 * scale, "{arch:?} {layout:?} layer {l}: bias off by {worst} (values up to {scale})");
                            assert_ne!(got, file_bias[l], "{arch:?} {layout:?} layer {l}: not shifted");
                        } else {
                            assert_eq!(got, file_bias[l]);
                        }
                    }
                    s.session().decode(&model.tokenize(" the", false, false)[..1], false).unwrap();
                    logits.push((prefill, s.session().logits(-1).to_vec()));
                }
                drop(s);
                // The session leaves the file's biases behind.
                (0..2).for_each(|l| assert_eq!(bias_in_memory(&model, l), file_bias[l], "{arch:?} {layout:?} layer {l}: not restored"));
                runs.push(logits);
            }
            for (i, ((p0, d0), (p1, d1))) in runs[0].iter().zip(&runs[1]).enumerate() {
                assert_eq!(p0, p1, "{arch:?} {layout:?} prompt {i}: prefill changed");
                assert_ne!(d0, d1, "{arch:?} {layout:?} prompt {i}: decode ignored the bias");
            }
        }
        assert_eq!(sha256(&path), before, "{arch:?}: the file was written");

        // A slice without a down bias has nothing to shift: a clear error.
        common::assert_clean_failure(&["generate", "-m", plain.to_str().unwrap(), "-p", "the word", "-n", "2", "--compute", "0.4", "--decode-bias"], "has none to shift");
    }
}

/// Prefill and first-decode logits per prompt, and the biases in memory after each prefill.
type Run = Vec<(Vec<f32>, Vec<f32>, Vec<Vec<f32>>)>;

fn run(model: &Model, g: &GgufFile, layout: Layout, bias: bool, refit: Option<f64>) -> (Run, Vec<Vec<Option<Vec<u32>>>>) {
    run_batched(model, g, layout, bias, refit, 64, 2)
}

/// [`run`] with prompts prefilled in batches of `n_batch` tokens on `threads` threads.
fn run_batched(model: &Model, g: &GgufFile, layout: Layout, bias: bool, refit: Option<f64>, n_batch: u32, threads: i32) -> (Run, Vec<Vec<Option<Vec<u32>>>>) {
    let opts = ComputeOptions { compute: 0.4, token_share: 0.2, layers: None, no_static: false };
    let mut s = SelectiveSession::new(model, ComputePlan::for_model(g, &opts).unwrap(), SessionOptions { n_ctx: 128, n_batch, threads, observer: None }).unwrap();
    s.set_layout(layout).unwrap();
    s.set_decode_bias(bias).unwrap();
    s.set_decode_refit(refit).unwrap();
    let (mut out, mut sets) = (Vec::new(), Vec::new());
    for prompt in PROMPTS {
        s.clear();
        s.prefill_and_select(&model.tokenize(prompt, true, false)).unwrap();
        let prefill = s.session().logits(-1).to_vec();
        let biases = (0..2).map(|l| bias_in_memory(model, l)).collect();
        sets.push(s.current_sets().to_vec());
        s.session().decode(&model.tokenize(" the", false, false)[..1], false).unwrap();
        out.push((prefill, s.session().logits(-1).to_vec(), biases));
    }
    (out, sets)
}

#[test]
fn decode_refit_installs_the_prompts_fit_for_decode_only() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3, SynthArch::Qwen2] {
        let (_dir, path, no_bias, before, g, model) = fixture(arch);
        let reference = Model::load(&path, &LoadOptions::default()).unwrap();
        let file_bias: Vec<Vec<f32>> = (0..2).map(|l| bias_in_memory(&model, l)).collect();

        let (plain, _) = run(&model, &g, Layout::InPlace, false, None);
        let (refit, sets) = run(&model, &g, Layout::InPlace, false, Some(1.0));
        // The copy layout changes its gathered copy as the in-place one changes the
        // columns where they lie: the same decode.
        let (copied, _) = run(&model, &g, Layout::Copy, false, Some(1.0));
        assert_eq!(refit, copied, "{arch:?}: the layouts decode differently");
        // Every prefill puts the columns back: a plain session after the refit's decodes as before.
        assert_eq!(run(&model, &g, Layout::InPlace, false, None).0, plain, "{arch:?}: the columns were not restored");
        for (i, prompt) in PROMPTS.iter().enumerate() {
            // Prefill is unchanged; decode runs with the fitted bias (the file's plus
            // the fit's shift, computed here from a second instance's activations) and
            // columns, so its logits move.
            assert_eq!(plain[i].0, refit[i].0, "{arch:?} prompt {i}: prefill changed");
            assert_ne!(plain[i].1, refit[i].1, "{arch:?} prompt {i}: decode ignored the refit");
            let rows = prompt_ffn_rows(&reference, prompt);
            for l in 0..2 {
                let (w, n_embd, n_ff) = down_matrix(&g, l).unwrap();
                let fit = prompt_refit(&w, n_embd, n_ff, &rows[l], sets[i][l].as_ref().unwrap(), 1.0).unwrap();
                let want: Vec<f32> = file_bias[l].iter().zip(&fit.bias).map(|(b, d)| b + d).collect();
                let got = &refit[i].2[l];
                let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                let scale = want.iter().fold(1e-6f32, |a, v| a.max(v.abs()));
                assert!(worst <= 1e-5 * scale, "{arch:?} prompt {i} layer {l}: bias off by {worst} (values up to {scale})");
                // The last layer sees only the last prompt token (llama.cpp computes
                // only the rows that reach the logits there): one centred row of zeros,
                // nothing to fit but the mean.
                if rows[l].len() > n_ff {
                    assert!(fit.columns.iter().any(|&d| d != 0.0), "{arch:?} prompt {i} layer {l}: the fit moved no column");
                }
            }
        }
        // Prompts over several batches (4 tokens each): each layer is fitted once its
        // last batch is in, on that batch's rows (the prompt's last 4 tokens, decoded
        // whole after the rest), and both layouts decode alike.
        // Layer 0 is fitted inside the prefill (and, in place, installed there, at
        // layer 1's callback), on one thread or split over two (bit-identical to the
        // independent fit either way); layer 1, which llama.cpp computes for the
        // output token only, is fitted after the prefill.
        for threads in [1, 2] {
            let (batched, sets) = run_batched(&model, &g, Layout::InPlace, false, Some(1.0), 4, threads);
            assert_eq!(batched, run_batched(&model, &g, Layout::Copy, false, Some(1.0), 4, threads).0, "{arch:?}: the layouts decode differently over batches");
            for (i, prompt) in PROMPTS.iter().enumerate() {
                let rows = prompt_ffn_rows_last_batch(&reference, prompt, 4);
                let all = prompt_ffn_rows_batched(&reference, prompt, 4);
                assert!(all[0].len() >= 2 * rows[0].len(), "{arch:?} prompt {i}: the prompt spans one batch");
                for l in 0..2 {
                    let (w, n_embd, n_ff) = down_matrix(&g, l).unwrap();
                    let fit = prompt_refit(&w, n_embd, n_ff, &rows[l], sets[i][l].as_ref().unwrap(), 1.0).unwrap();
                    let want: Vec<f32> = file_bias[l].iter().zip(&fit.bias).map(|(b, d)| b + d).collect();
                    assert_eq!(batched[i].2[l], want, "{arch:?} {threads} threads prompt {i} layer {l}: batched bias");
                }
            }
        }
        // A ridge so large that the columns stay put is --decode-bias exactly.
        let (huge, _) = run(&model, &g, Layout::InPlace, false, Some(1e12));
        let (bias, _) = run(&model, &g, Layout::InPlace, true, None);
        for (i, (h, b)) in huge.iter().zip(&bias).enumerate() {
            let worst = h.1.iter().zip(&b.1).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            assert!(worst <= 1e-4, "{arch:?} prompt {i}: decode logits differ from --decode-bias's by {worst}");
        }
        // The session leaves the file's biases behind, and the file is not written.
        (0..2).for_each(|l| assert_eq!(bias_in_memory(&model, l), file_bias[l], "{arch:?} layer {l}: not restored"));
        assert_eq!(sha256(&path), before, "{arch:?}: the file was written");

        // Refused: a slice without a down bias, and together with --decode-bias.
        common::assert_clean_failure(&["generate", "-m", no_bias.to_str().unwrap(), "-p", "the word", "-n", "2", "--compute", "0.4", "--decode-refit", "1"], "has none to shift");
        common::assert_clean_failure(&["generate", "-m", path.to_str().unwrap(), "-p", "the word", "-n", "2", "--compute", "0.4", "--decode-refit", "0"], "not a ridge above 0");
        let o = common::selectinfer(&["generate", "-m", path.to_str().unwrap(), "-p", "the word", "-n", "2", "--compute", "0.4", "--decode-refit", "1", "--decode-bias"]);
        assert_eq!(o.status.code(), Some(2), "clap refuses the pair: {}", common::text(&o).1);
    }
}
