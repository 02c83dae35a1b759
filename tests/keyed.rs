//! Derived files are keyed by the model they were measured on: slicing a
//! conversion with its original's profile measures the conversion's moments
//! into a file of its own, leaving every other file of the profile as it was, and
//! the original still slices. Moments are checked on load against the task,
//! values and model they claim.

mod common;

use std::path::{Path, PathBuf};

use selectinfer::profile::moments::{legacy_moments_path, moments_path};
use selectinfer::synth::SynthArch;
use selectinfer::tasks::Task;

/// The moments file with its header's task replaced.
fn with_task(bytes: &[u8], task: &str) -> Vec<u8> {
    let end = bytes.iter().position(|&b| b == b'\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[..end]).unwrap();
    header["task"] = task.into();
    let mut out = serde_json::to_vec(&header).unwrap();
    out.extend(&bytes[end..]);
    out
}

#[test]
fn a_conversions_moments_never_block_or_change_the_originals() {
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, _) = common::translate_profile(dir.path(), SynthArch::Llama);
    let conv = dir.path().join("conv.gguf");
    let o = common::selectinfer(&["convert", model.to_str().unwrap(), "--to", "q8_0", "-o", conv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let slice = |m: &Path, out: &str| {
        let out = dir.path().join(out);
        let args = ["slice", "-m", m.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--task", "translate", "--load", "0.6", "--layers", "0..2"];
        let mut args: Vec<&str> = args.to_vec();
        args.extend(["--compensate", "refit", "-t", "2", "-o", out.to_str().unwrap()]);
        common::selectinfer(&args)
    };
    let (model_sha, conv_sha) = (common::sha256_of(&model), common::sha256_of(&conv));

    // The conversion sliced with the original's profile: its own moments, nothing else changed.
    let before = common::files_under(&profile);
    let o = slice(&conv, "conv-refit.gguf");
    assert!(o.status.success(), "{}", common::text(&o).1);
    let after = common::files_under(&profile);
    let conv_moments = moments_path(&profile, Task::Translate, &conv_sha);
    let added: Vec<&PathBuf> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert_eq!(added, vec![&conv_moments]);
    assert!(before.iter().all(|(p, b)| after.get(p) == Some(b)), "a profile file changed");

    // The original still slices (measuring its own), and the conversion's file is untouched.
    let o = slice(&model, "refit.gguf");
    assert!(o.status.success(), "{}", common::text(&o).1);
    let own = moments_path(&profile, Task::Translate, &model_sha);
    assert!(own.exists());
    assert_eq!(std::fs::read(&conv_moments).unwrap(), after[&conv_moments]);
    let good = std::fs::read(&own).unwrap();

    // Moments naming another task, or holding a value that is not finite, are refused.
    std::fs::write(&own, with_task(&good, "qa")).unwrap();
    let err = common::text(&slice(&model, "x.gguf")).1;
    assert!(err.contains("holds qa moments, not translate"), "{err}");
    let mut nan = good.clone();
    let body = nan.iter().position(|&b| b == b'\n').unwrap() + 1;
    nan[body..body + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&own, &nan).unwrap();
    let err = common::text(&slice(&model, "x.gguf")).1;
    assert!(err.contains("not finite"), "{err}");
    assert!(!dir.path().join("x.gguf").exists());

    // An un-keyed file of an earlier version is read only when its header names the model.
    std::fs::remove_file(&own).unwrap();
    std::fs::write(legacy_moments_path(&profile, Task::Translate), &good).unwrap();
    let o = slice(&model, "legacy.gguf");
    assert!(o.status.success() && !common::text(&o).1.contains("measuring"), "{}", common::text(&o).1);
    assert!(!own.exists());
    std::fs::write(legacy_moments_path(&profile, Task::Translate), &after[&conv_moments]).unwrap();
    let o = slice(&model, "legacy2.gguf");
    assert!(o.status.success() && common::text(&o).1.contains("measuring"), "{}", common::text(&o).1);
    assert_eq!(std::fs::read(legacy_moments_path(&profile, Task::Translate)).unwrap(), after[&conv_moments], "the old file is never written");
    assert_eq!(std::fs::read(&own).unwrap(), good, "measured again, the same bytes");
}
