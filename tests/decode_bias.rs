//! `--decode-bias`: after each prompt's prefill, decode adds to every sparsified
//! layer's `ffn_down` bias the prompt's mean contribution of the loaded neurons it
//! skips; prefill and the file are unchanged.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use selectinfer::compute::{ComputeOptions, ComputePlan, Layout, SelectiveSession};
use selectinfer::engine::{LoadOptions, Model, ObservedTensor, Session, SessionOptions, TensorObserver};
use selectinfer::gguf::GgufFile;
use selectinfer::model::ModelInfo;
use selectinfer::profile::weights::down_matrix;
use selectinfer::synth::SynthArch;

const PROMPTS: [&str; 2] = ["the 3 word of a man is what it was", "one said there was no other way to 9"];

/// Every activation row entering ffn_down of the prompt, per layer.
struct Rows(Arc<Mutex<Vec<Vec<Vec<f64>>>>>, String);

impl TensorObserver for Rows {
    fn wants(&mut self, name: &str) -> bool {
        name.starts_with(&self.1)
    }
    fn observe(&mut self, t: ObservedTensor<'_>) {
        let l: usize = t.name[self.1.len()..].parse().unwrap();
        self.0.lock().unwrap()[l].extend(t.data.chunks_exact(t.ne[0]).map(|r| r.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()));
    }
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn sha256(path: &Path) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// The bias decode should run with after `prompt` selected `sets`: the file's bias
/// plus, over the loaded positions p not computed, W_down[:, p] x the mean of a_p
/// over the prompt's tokens (recorded here by a plain session).
fn expected_biases(model: &Model, g: &GgufFile, prompt: &str, sets: &[Option<Vec<u32>>]) -> Vec<Option<Vec<f64>>> {
    let info = ModelInfo::from_gguf(g).unwrap();
    let rows = Arc::new(Mutex::new(vec![Vec::new(); info.n_layer]));
    let prefix = format!("{}-", info.ffn_activation.unwrap().node_name());
    let mut s = Session::new(model, SessionOptions { n_ctx: 128, n_batch: 64, threads: 2, observer: Some(Box::new(Rows(rows.clone(), prefix))) }).unwrap();
    s.decode(&model.tokenize(prompt, true, false), false).unwrap();
    drop(s);
    let rows = rows.lock().unwrap();
    (0..info.n_layer)
        .map(|l| {
            let set = sets[l].as_ref()?;
            let (w, n_embd, n_ff) = down_matrix(g, l).unwrap();
            let t = rows[l].len() as f64;
            let file: Vec<f32> = floats(&g.read_tensor_data(g.tensor(&format!("blk.{l}.ffn_down.bias")).unwrap()).unwrap());
            Some(
                (0..n_embd)
                    .map(|e| {
                        let skipped = (0..n_ff).filter(|p| !set.contains(&(*p as u32)));
                        f64::from(file[e]) + skipped.map(|p| f64::from(w[e * n_ff + p]) * rows[l].iter().map(|a| a[p]).sum::<f64>() / t).sum::<f64>()
                    })
                    .collect(),
            )
        })
        .collect()
}

fn bias_in_memory(model: &Model, l: usize) -> Vec<f32> {
    floats(model.host_tensor_bytes(&format!("blk.{l}.ffn_down.bias")).unwrap())
}

#[test]
fn decode_bias_adds_the_prompts_skipped_contribution_for_decode_only() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3] {
        let dir = tempfile::tempdir().unwrap();
        let (m, p, _) = common::translate_profile(dir.path(), arch);
        let path = dir.path().join("mean.gguf");
        let o = common::selectinfer(&[
            "slice", "-m", m.to_str().unwrap(), "--profile", p.to_str().unwrap(), "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers",
            "0..2", "--compensate", "mean", "-o", path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::text(&o).1);
        let before = sha256(&path);
        let g = GgufFile::read(&path).unwrap();
        let model = Model::load(&path, &LoadOptions::default()).unwrap();
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
        let plain = dir.path().join("plain.gguf");
        let o = common::selectinfer(&[
            "slice", "-m", m.to_str().unwrap(), "--profile", p.to_str().unwrap(), "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers",
            "0..2", "-o", plain.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::text(&o).1);
        common::assert_clean_failure(&["generate", "-m", plain.to_str().unwrap(), "-p", "the word", "-n", "2", "--compute", "0.4", "--decode-bias"], "has none to shift");
    }
}
