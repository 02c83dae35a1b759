//! `slice --compensate refit` (issue #16) against independent computations on the
//! tiny llama model: the moments file equals sums of the activations recorded here,
//! and the refitted columns and bias minimize the damped squared error of each
//! layer's output over those activations (its gradient, computed here, is zero),
//! below the error of mean compensation, itself below the plain slice's.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use selectinfer::engine::{LoadOptions, Model, ObservedTensor, TensorObserver};
use selectinfer::profile::text::{profiling_text, text_nll};
use selectinfer::gguf::GgufFile;
use selectinfer::model::{FfnActivation, ModelInfo};
use selectinfer::profile::moments::{moments_path, read_layer_moments};
use selectinfer::profile::weights::down_matrix;
use selectinfer::fit::solve::REFIT_DAMPING;
use selectinfer::select::variant::{Compensation, SliceVariant};
use selectinfer::select::SliceMeta;
use selectinfer::synth::SynthArch;
use selectinfer::tasks::Task;

/// Every activation row entering ffn_down, per layer.
struct Rows {
    prefix: String,
    rows: Arc<Mutex<Vec<Vec<Vec<f64>>>>>,
}

impl TensorObserver for Rows {
    fn wants(&mut self, name: &str) -> bool {
        name.starts_with(&self.prefix)
    }
    fn observe(&mut self, t: ObservedTensor<'_>) {
        let l: usize = t.name[self.prefix.len()..].parse().unwrap();
        let mut r = self.rows.lock().unwrap();
        r[l].extend(t.data.chunks_exact(t.ne[0]).map(|row| row.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()));
    }
}

/// The activations of the text `profile moments --ctx 64 --chunks 3` reads.
fn recorded_rows(model: &Path, data: &Path, n_layer: usize) -> Vec<Vec<Vec<f64>>> {
    let rows = Arc::new(Mutex::new(vec![Vec::new(); n_layer]));
    let m = Model::load(model, &LoadOptions::default()).unwrap();
    let text = profiling_text(&[data.to_path_buf()], Task::Translate).unwrap();
    let obs = Rows { prefix: format!("{}-", FfnActivation::Swiglu.node_name()), rows: rows.clone() };
    text_nll("moments", &m, &text, 64, Some(3), 2, Some(Box::new(obs))).unwrap();
    let r = rows.lock().unwrap().clone();
    r
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-4 * scale
}

fn bias(g: &GgufFile, l: usize) -> Vec<f64> {
    let t = g.tensor(&format!("blk.{l}.ffn_down.bias")).unwrap();
    g.read_tensor_data(t).unwrap().chunks_exact(4).map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap()))).collect()
}

#[test]
fn moments_and_refit_equal_an_independent_computation() {
    moments_and_refit_equal_an_independent_computation_on(SynthArch::Llama);
}

/// qwen2 (the paper's Qwen2.5 family) reads the refit's bias with patch 0010.
#[test]
fn moments_and_refit_equal_an_independent_computation_on_qwen2() {
    moments_and_refit_equal_an_independent_computation_on(SynthArch::Qwen2);
}

fn moments_and_refit_equal_an_independent_computation_on(arch: SynthArch) {
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, data) = common::translate_profile(dir.path(), arch);
    let (m, p, d) = (model.to_str().unwrap(), profile.to_str().unwrap(), data.to_str().unwrap());
    let slice = |comp: &str, out: &Path| {
        let o = common::selectinfer(&[
            "slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers", "0..2", "--compensate", comp, "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::text(&o).1);
    };
    // Without the moments, slice measures them first, as `profile moments` would (the
    // task's bundled profiling text, the model being sliced), says so, and slices.
    let refit_path = dir.path().join("refit.gguf");
    let meta_sha = common::sha256_of(&model);
    let args = ["slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--compensate", "refit", "-t", "2", "-o", refit_path.to_str().unwrap()];
    let o = common::selectinfer(&args);
    assert!(o.status.success() && refit_path.exists(), "{}", common::text(&o).1);
    assert!(common::text(&o).1.contains("measuring the translate activation moments"), "{}", common::text(&o).1);
    let first_use = std::fs::read(moments_path(&profile, Task::Translate, &meta_sha)).unwrap();
    std::fs::remove_file(moments_path(&profile, Task::Translate, &meta_sha)).unwrap();
    let o = common::selectinfer(&["profile", "moments", "-m", m, "--task", "translate", "-t", "2", p]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    assert!(std::fs::read(moments_path(&profile, Task::Translate, &meta_sha)).unwrap() == first_use, "first-use moments differ from `profile moments`'");

    let out = common::selectinfer(&["profile", "moments", "-m", m, "--task", "translate", "--data", d, "--ctx", "64", "--chunks", "3", p]);
    assert!(out.status.success(), "{}", common::text(&out).1);
    let info = ModelInfo::read(&model).unwrap();
    let rows = recorded_rows(&model, &data, info.n_layer);
    let file = moments_path(&profile, Task::Translate, &meta_sha);
    for (l, layer_rows) in rows.iter().enumerate() {
        let (header, mo) = read_layer_moments(&file, l).unwrap();
        assert_eq!(header.data, vec!["t.jsonl".to_string()]);
        assert_eq!(mo.tokens as usize, layer_rows.len(), "layer {l}");
        let n = mo.n;
        let scale = layer_rows.iter().flatten().map(|x| x * x).sum::<f64>();
        for i in 0..n {
            let s: f64 = layer_rows.iter().map(|r| r[i]).sum();
            assert!(close(mo.sum[i], s, scale.sqrt() * 10.0), "layer {l} sum {i}: {} vs {s}", mo.sum[i]);
            for j in 0..n {
                let g: f64 = layer_rows.iter().map(|r| r[i] * r[j]).sum();
                assert!(close(mo.gram[i * n + j], g, scale), "layer {l} gram {i},{j}: {} vs {g}", mo.gram[i * n + j]);
            }
        }
    }

    let (plain_path, mean_path) = (dir.path().join("plain.gguf"), dir.path().join("mean.gguf"));
    slice("none", &plain_path);
    slice("mean", &mean_path);
    slice("refit", &refit_path);
    let src = GgufFile::read(&model).unwrap();
    let (plain, mean, refit) = (GgufFile::read(&plain_path).unwrap(), GgufFile::read(&mean_path).unwrap(), GgufFile::read(&refit_path).unwrap());
    let meta = SliceMeta::from_gguf(&refit).unwrap().unwrap();
    assert_eq!(meta.variant, SliceVariant { compensation: Compensation::Refit, ..SliceVariant::default() });
    assert_eq!(meta.variant.label(), "compensation=refit");
    // The slice records the moments it was fitted to beside the rankings.
    assert_ne!(meta.profile_sha256.as_deref(), Some(selectinfer::select::rewrite::profile_sha256(&profile, Task::Translate).unwrap().as_str()));
    assert_eq!(meta.profile_sha256, Some(meta.variant.selection_sha256(&profile, Task::Translate, &meta_sha, &[]).unwrap()));

    for (l, x) in rows.iter().enumerate() {
        let kept: Vec<usize> = meta.kept[l].as_ref().unwrap().iter().map(|&k| k as usize).collect();
        let (w, n_embd, n_ff) = down_matrix(&src, l).unwrap();
        let w = |r: usize, n: usize| f64::from(w[r * n_ff + n]);
        let t = x.len() as f64;
        // Each file's layer output for token a: its kept columns times a_K, plus its bias.
        let columns = |g: &GgufFile| {
            let (c, _, k) = down_matrix(g, l).unwrap();
            assert_eq!(k, kept.len());
            c.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()
        };
        let (wp, wm, wr) = (columns(&plain), columns(&mean), columns(&refit));
        let (bm, br) = (bias(&mean, l), bias(&refit, l));
        assert!(plain.tensor(&format!("blk.{l}.ffn_down.bias")).is_none());
        let k = kept.len();
        let error = |cols: &[f64], b: Option<&[f64]>| -> f64 {
            x.iter()
                .map(|a| {
                    (0..n_embd)
                        .map(|r| {
                            let whole: f64 = (0..n_ff).map(|n| w(r, n) * a[n]).sum();
                            let sliced: f64 = (0..k).map(|c| cols[r * k + c] * a[kept[c]]).sum::<f64>() + b.map_or(0.0, |b| b[r]);
                            (whole - sliced).powi(2)
                        })
                        .sum::<f64>()
                })
                .sum::<f64>()
                / t
        };
        let (ep, em, er) = (error(&wp, None), error(&wm, Some(&bm)), error(&wr, Some(&br)));
        assert!(er < em && em <= ep * (1.0 + 1e-9), "layer {l}: refit {er}, mean {em}, plain {ep}");
        // Zero gradient of mean ||W a - W'_K a_K - b||^2 + lambda ||W'_K - W_K||^2,
        // lambda = the damping share of the mean of the kept neurons' mean a_n^2.
        let lambda = REFIT_DAMPING * kept.iter().map(|&n| x.iter().map(|a| a[n] * a[n]).sum::<f64>() / t).sum::<f64>() / k as f64;
        let mut worst: f64 = 0.0;
        let mut scale: f64 = 0.0;
        for r in 0..n_embd {
            let resid: Vec<f64> = x.iter().map(|a| (0..k).map(|c| wr[r * k + c] * a[kept[c]]).sum::<f64>() + br[r] - (0..n_ff).map(|n| w(r, n) * a[n]).sum::<f64>()).collect();
            for c in 0..k {
                let g = resid.iter().zip(x).map(|(e, a)| e * a[kept[c]]).sum::<f64>() / t + lambda * (wr[r * k + c] - w(r, kept[c]));
                let s = x.iter().map(|a| (0..n_ff).map(|n| w(r, n) * a[n]).sum::<f64>() * a[kept[c]]).sum::<f64>().abs() / t;
                worst = worst.max(g.abs());
                scale = scale.max(s);
            }
            let gb = resid.iter().sum::<f64>() / t;
            worst = worst.max(gb.abs());
        }
        assert!(worst <= 1e-3 * scale, "layer {l}: gradient {worst} against terms of {scale}");
        // Mean compensation keeps the original columns; the refit moves them.
        assert!(wm.iter().zip(&kept_columns(&src, l, &kept)).all(|(a, b)| a == b));
        assert!(wr.iter().zip(&kept_columns(&src, l, &kept)).any(|(a, b)| a != b));
    }

    // The neuron-major layout stores the same refitted columns, one row per neuron.
    let nm_path = dir.path().join("refit-neurons.gguf");
    let o = common::selectinfer(&[
        "slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers", "0..2", "--compensate", "refit",
        "--down-layout", "neurons", "-o", nm_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let nm = GgufFile::read(&nm_path).unwrap();
    for l in 0..2 {
        let (cols, n_embd, k) = down_matrix(&refit, l).unwrap();
        let t = nm.tensor(&format!("blk.{l}.ffn_down.weight")).unwrap();
        assert_eq!(t.dims, vec![n_embd as u64, k as u64]);
        let rows: Vec<f32> = nm.read_tensor_data(t).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        for r in 0..n_embd {
            for c in 0..k {
                assert_eq!(rows[c * n_embd + r], cols[r * k + c], "layer {l} row {c} element {r}");
            }
        }
        assert_eq!(bias(&nm, l), bias(&refit, l));
    }

    // A truncated moments file is named, and nothing is written.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 4]).unwrap();
    let cut = dir.path().join("cut.gguf");
    let args = ["slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--compensate", "refit", "-o", cut.to_str().unwrap()];
    common::assert_clean_failure(&args, "its header describes");
    assert!(!cut.exists());
}

fn kept_columns(g: &GgufFile, l: usize, kept: &[usize]) -> Vec<f64> {
    let (w, n_embd, n_ff) = down_matrix(g, l).unwrap();
    (0..n_embd).flat_map(|r| kept.iter().map(|&n| f64::from(w[r * n_ff + n])).collect::<Vec<_>>()).collect()
}

/// Every activation row entering ffn_down of a model file (its own activation), per
/// layer, over the text `--fit-ctx 64 --fit-chunks 3` reads.
fn activation_rows(model: &Path, data: &Path) -> Vec<Vec<Vec<f64>>> {
    let info = ModelInfo::read(model).unwrap();
    let rows = Arc::new(Mutex::new(vec![Vec::new(); info.n_layer]));
    let m = Model::load(model, &LoadOptions::default()).unwrap();
    let text = profiling_text(&[data.to_path_buf()], Task::Translate).unwrap();
    let obs = Rows { prefix: format!("{}-", info.ffn_activation.unwrap().node_name()), rows: rows.clone() };
    text_nll("moments", &m, &text, 64, Some(3), 2, Some(Box::new(obs))).unwrap();
    let r = rows.lock().unwrap().clone();
    r
}

/// Largest |gradient| of mean ||y - W' x - b||^2 + lambda ||W' - W_K||^2 at the file's
/// columns `wr` (`[n_embd][k]`) and bias `br`, against the largest term mean |y x|.
fn fit_gradient(x: &[Vec<f64>], y: &[Vec<f64>], wr: &[f64], br: &[f64], wk: &[f64], k: usize) -> (f64, f64) {
    let t = x.len() as f64;
    let n_embd = br.len();
    let lambda = REFIT_DAMPING * (0..k).map(|c| x.iter().map(|a| a[c] * a[c]).sum::<f64>() / t).sum::<f64>() / k as f64;
    let (mut worst, mut scale) = (0f64, 0f64);
    for r in 0..n_embd {
        let resid: Vec<f64> = x.iter().zip(y).map(|(a, y)| (0..k).map(|c| wr[r * k + c] * a[c]).sum::<f64>() + br[r] - y[r]).collect();
        for c in 0..k {
            let g = resid.iter().zip(x).map(|(e, a)| e * a[c]).sum::<f64>() / t + lambda * (wr[r * k + c] - wk[r * k + c]);
            worst = worst.max(g.abs());
            scale = scale.max(x.iter().zip(y).map(|(a, y)| y[r] * a[c]).sum::<f64>().abs() / t);
        }
        worst = worst.max((resid.iter().sum::<f64>() / t).abs());
    }
    (worst, scale)
}

#[test]
fn chained_refit_fits_each_layer_on_the_slice_before_it() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3] {
        let dir = tempfile::tempdir().unwrap();
        let (model, profile, data) = common::translate_profile(dir.path(), arch);
        let (m, p, d) = (model.to_str().unwrap(), profile.to_str().unwrap(), data.to_str().unwrap());
        let slice = |comp: &str, out: &Path| {
            let mut args = vec!["slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers", "0..2", "--compensate", comp];
            // The fit text's options apply to the chained refit only (the plain refit reads the moments).
            if comp == "refit-chained" {
                args.extend(["--fit-data", d, "--fit-ctx", "64", "--fit-chunks", "3"]);
            }
            args.extend(["-t", "2", "-o", out.to_str().unwrap()]);
            let o = common::selectinfer(&args);
            assert!(o.status.success(), "{arch:?}: {}", common::text(&o).1);
        };
        let chained_path = dir.path().join("chained.gguf");
        // Needs no moments file: it measures its own.
        slice("refit-chained", &chained_path);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".tmp")).collect();
        assert!(left.is_empty(), "{arch:?}: staged files left: {left:?}");
        let out = common::selectinfer(&["profile", "moments", "-m", m, "--task", "translate", "--data", d, "--ctx", "64", "--chunks", "3", p]);
        assert!(out.status.success(), "{}", common::text(&out).1);
        let refit_path = dir.path().join("refit.gguf");
        slice("refit", &refit_path);

        let src = GgufFile::read(&model).unwrap();
        let (chained, refit) = (GgufFile::read(&chained_path).unwrap(), GgufFile::read(&refit_path).unwrap());
        let meta = SliceMeta::from_gguf(&chained).unwrap().unwrap();
        assert_eq!(meta.variant, SliceVariant { compensation: Compensation::RefitChained, ..SliceVariant::default() });
        assert_eq!(meta.variant.label(), "compensation=refit-chained");

        // The targets: the whole model's layer outputs W a(t), computed here from its
        // activations; the inputs: the chained slice's own kept activations, which
        // for layer l depend only on the (refitted) layers before it.
        let whole = activation_rows(&model, &data);
        let sliced = activation_rows(&chained_path, &data);
        for l in 0..2 {
            let kept: Vec<usize> = meta.kept[l].as_ref().unwrap().iter().map(|&k| k as usize).collect();
            let k = kept.len();
            let (w, n_embd, n_ff) = down_matrix(&src, l).unwrap();
            let y: Vec<Vec<f64>> = whole[l].iter().map(|a| (0..n_embd).map(|r| (0..n_ff).map(|n| f64::from(w[r * n_ff + n]) * a[n]).sum()).collect()).collect();
            assert_eq!(sliced[l].len(), y.len(), "{arch:?} layer {l}: tokens");
            assert!(sliced[l].iter().all(|a| a.len() == k));
            let (wr, _, kk) = down_matrix(&chained, l).unwrap();
            assert_eq!(kk, k);
            let wr: Vec<f64> = wr.iter().map(|&v| f64::from(v)).collect();
            let br = bias(&chained, l);
            let wk = kept_columns(&src, l, &kept);
            let (worst, scale) = fit_gradient(&sliced[l], &y, &wr, &br, &wk, k);
            assert!(worst <= 1e-3 * scale, "{arch:?} layer {l}: gradient {worst} against terms of {scale}");
            let (rc, _, _) = down_matrix(&refit, l).unwrap();
            let differ = rc.iter().zip(&wr).map(|(a, b)| (f64::from(*a) - b).abs()).fold(0.0, f64::max);
            let size = wr.iter().map(|v| v.abs()).fold(0.0, f64::max);
            if l == 0 {
                // The first sparsified layer sees the whole model's activations: the
                // plain refit's fit (from the moments file, stored as f32 sums).
                assert!(differ <= 1e-3 * size, "{arch:?} layer 0: chained and plain refit differ by {differ} (columns up to {size})");
            } else {
                // Layer 1 sees the refitted layer 0: another fit than the plain refit's.
                assert!(differ > 1e-3 * size, "{arch:?} layer 1: the chained fit equals the plain refit's");
                let dense_inputs: Vec<Vec<f64>> = whole[l].iter().map(|a| kept.iter().map(|&n| a[n]).collect()).collect();
                let (off, _) = fit_gradient(&dense_inputs, &y, &wr, &br, &wk, k);
                // Off its own inputs the fit is not stationary: the gradient on the
                // whole model's activations is far from the one on the slice's.
                assert!(off > 1e3 * worst && off > 1e-4 * scale, "{arch:?} layer 1: the chained fit's gradient on the whole model's activations is {off}, on its own {worst} (terms {scale})");
            }
        }
    }
}

/// The kept positions a chunk of whole-model activation rows computes at phi 0.4,
/// alpha 0.2 (N = `n_ff`), by a plain sort: each row votes for its ceil(0.2 k)
/// largest |a| (ties to the lower position); the static positions 0..s and the most
/// voted others (ties to the lower position) up to round(0.4 N).
fn computed_positions(rows: &[Vec<f64>], kept: &[usize], n_static: usize, n_ff: usize) -> Vec<bool> {
    let k = kept.len();
    let per_token = (0.2 * k as f64).ceil() as usize;
    let mut votes = vec![0usize; k];
    for a in rows {
        let mut order: Vec<usize> = (0..k).collect();
        order.sort_by(|&i, &j| a[kept[j]].abs().partial_cmp(&a[kept[i]].abs()).unwrap().then(i.cmp(&j)));
        order[..per_token].iter().for_each(|&p| votes[p] += 1);
    }
    let mut others: Vec<usize> = (n_static..k).collect();
    others.sort_by(|&i, &j| votes[j].cmp(&votes[i]).then(i.cmp(&j)));
    let n_computed = (0.4 * n_ff as f64).round() as usize;
    let mut on = vec![false; k];
    (0..n_static).chain(others.into_iter().take(n_computed - n_static)).for_each(|p| on[p] = true);
    on
}

#[test]
fn computed_refit_fits_prefill_and_decode_together() {
    for arch in [SynthArch::Llama, SynthArch::Gemma3] {
        let dir = tempfile::tempdir().unwrap();
        let (model, profile, data) = common::translate_profile(dir.path(), arch);
        let (m, p, d) = (model.to_str().unwrap(), profile.to_str().unwrap(), data.to_str().unwrap());
        let slice = |comp: &str, share: &str, phi: &str, out: &Path| {
            let mut args = vec!["slice", "-m", m, "--profile", p, "--task", "translate", "--load", "0.6", "--static", "0.2", "--layers", "0..2", "--compensate", comp];
            // The computed fit's options apply to refit-computed only.
            if comp == "refit-computed" {
                args.extend(["--fit-compute", phi, "--fit-token-share", "0.2", "--fit-decode-share", share, "--fit-data", d, "--fit-ctx", "64", "--fit-chunks", "3"]);
            }
            args.extend(["-t", "2", "-o", out.to_str().unwrap()]);
            common::selectinfer(&args)
        };
        let path = dir.path().join("computed.gguf");
        let o = slice("refit-computed", "0.5", "0.4", &path);
        assert!(o.status.success(), "{arch:?}: {}", common::text(&o).1);
        let src = GgufFile::read(&model).unwrap();
        let g = GgufFile::read(&path).unwrap();
        let meta = SliceMeta::from_gguf(&g).unwrap().unwrap();
        assert_eq!(meta.variant.compensation, Compensation::RefitComputed);
        assert_eq!(meta.variant.label(), "compensation=refit-computed/0.4/0.2/0.5");

        // The objective: every token once with its kept activations and once with
        // only the computed ones, at weight 1/2 each, which is the mean over the
        // doubled rows; its gradient must vanish at the file's columns and bias.
        let whole = activation_rows(&model, &data);
        for l in 0..2 {
            let kept: Vec<usize> = meta.kept[l].as_ref().unwrap().iter().map(|&k| k as usize).collect();
            let n_static = meta.static_set[l].as_ref().unwrap().len();
            let k = kept.len();
            let (w, n_embd, n_ff) = down_matrix(&src, l).unwrap();
            // 3 chunks of 64; in the last layer llama.cpp runs the FFN only for the
            // positions whose logits are asked for, the second half of each chunk.
            let per_chunk = if l + 1 == ModelInfo::read(&model).unwrap().n_layer { 32 } else { 64 };
            assert_eq!(whole[l].len(), 3 * per_chunk, "{arch:?} layer {l}: positions of 3 chunks");
            let mut x: Vec<Vec<f64>> = whole[l].iter().map(|a| kept.iter().map(|&n| a[n]).collect()).collect();
            for chunk in whole[l].chunks(per_chunk) {
                let on = computed_positions(chunk, &kept, n_static, n_ff);
                assert_eq!(on.iter().filter(|&&c| c).count(), (0.4 * n_ff as f64).round() as usize);
                x.extend(chunk.iter().map(|a| kept.iter().zip(&on).map(|(&n, &c)| if c { a[n] } else { 0.0 }).collect::<Vec<f64>>()));
            }
            let y1: Vec<Vec<f64>> = whole[l].iter().map(|a| (0..n_embd).map(|r| (0..n_ff).map(|n| f64::from(w[r * n_ff + n]) * a[n]).sum()).collect()).collect();
            let y: Vec<Vec<f64>> = y1.iter().chain(&y1).cloned().collect();
            let (wr, _, kk) = down_matrix(&g, l).unwrap();
            assert_eq!(kk, k);
            let wr: Vec<f64> = wr.iter().map(|&v| f64::from(v)).collect();
            let (worst, scale) = fit_gradient(&x, &y, &wr, &bias(&g, l), &kept_columns(&src, l, &kept), k);
            assert!(worst <= 1e-3 * scale, "{arch:?} layer {l}: gradient {worst} against terms of {scale}");
        }

        // Decode share 0 is the plain refit over the same tokens; 0.5 is another fit.
        let zero = dir.path().join("zero.gguf");
        let o = slice("refit-computed", "0", "0.4", &zero);
        assert!(o.status.success(), "{arch:?}: {}", common::text(&o).1);
        let out = common::selectinfer(&["profile", "moments", "-m", m, "--task", "translate", "--data", d, "--ctx", "64", "--chunks", "3", p]);
        assert!(out.status.success(), "{}", common::text(&out).1);
        let refit = dir.path().join("refit.gguf");
        let o = slice("refit", "0.5", "0.4", &refit);
        assert!(o.status.success(), "{arch:?}: {}", common::text(&o).1);
        let (zero, refit) = (GgufFile::read(&zero).unwrap(), GgufFile::read(&refit).unwrap());
        for l in 0..2 {
            let (a, _, _) = down_matrix(&zero, l).unwrap();
            let (b, _, _) = down_matrix(&refit, l).unwrap();
            let (c, _, _) = down_matrix(&g, l).unwrap();
            let size = b.iter().map(|v| v.abs()).fold(0.0, f32::max);
            let diff = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0, f32::max);
            assert!(diff(&a, &b) <= 1e-3 * size, "{arch:?} layer {l}: decode share 0 differs from the refit by {}", diff(&a, &b));
            assert!(diff(&c, &b) > 1e-2 * size, "{arch:?} layer {l}: the fit for the computation equals the refit");
        }

        // phi outside [--static, --load] is refused, with nothing written.
        let bad = dir.path().join("bad.gguf");
        let o = slice("refit-computed", "0.5", "0.7", &bad);
        assert!(!o.status.success() && common::text(&o).1.contains("--fit-compute"), "{arch:?}: {}", common::text(&o).1);
        assert!(!bad.exists());
    }
}
