//! The defaults issue #16's sweep chose (docs/selection.md, "Verdict"): `slice` (and
//! `chat`'s own slicing) compensates a profile slice of a llama or gemma3 model with
//! the refit, measuring the task's moments on first use (tests/refit.rs), and falls
//! back to the paper's selection for random slices and other architectures;
//! `--compute` on a column-major refit slice refits decode per prompt at ridge 1
//! unless `--decode-refit` or `--decode-bias` says otherwise. `--compensate none` and
//! `--decode-refit off` give the paper's method.

mod common;

use std::path::Path;

use selectinfer::gguf::GgufFile;
use selectinfer::select::variant::{Compensation, SliceVariant};
use selectinfer::synth::SynthArch;

fn compensation(path: &Path) -> Compensation {
    SliceVariant::from_gguf(&GgufFile::read(path).unwrap()).compensation
}

fn has_down_bias(path: &Path) -> bool {
    GgufFile::read(path).unwrap().tensors.iter().any(|t| t.name.ends_with("ffn_down.bias"))
}

/// `slice` of the translate profile at load 0.6, static 0.2 over layers 0..2 with
/// no `--compensate`, and its stderr.
fn default_slice(model: &Path, profile: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["slice", "-m", model.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--task", "translate"];
    args.extend(["--load", "0.6", "--static", "0.2", "--layers", "0..2", "-t", "2", "-o", out.to_str().unwrap()]);
    args.extend(extra);
    let o = common::selectinfer(&args);
    assert!(o.status.success(), "{}", common::text(&o).1);
    common::text(&o).1
}

/// The task's moments measured on the test's small text (first use, on the bundled
/// text, is tested in tests/refit.rs).
fn moments(model: &Path, profile: &Path, data: &Path) {
    let (m, p, d) = (model.to_str().unwrap(), profile.to_str().unwrap(), data.to_str().unwrap());
    let o = common::selectinfer(&["profile", "moments", "-m", m, "--task", "translate", "--data", d, "--ctx", "64", "--chunks", "3", p]);
    assert!(o.status.success(), "{}", common::text(&o).1);
}

#[test]
fn slice_refits_by_default_where_the_loader_reads_the_bias() {
    let dir = tempfile::tempdir().unwrap();
    for arch in [SynthArch::Llama, SynthArch::Gemma3, SynthArch::Qwen2] {
        let sub = dir.path().join(format!("{arch:?}"));
        std::fs::create_dir_all(&sub).unwrap();
        let (model, profile, data) = common::translate_profile(&sub, arch);
        moments(&model, &profile, &data);
        let default = sub.join("default.gguf");
        default_slice(&model, &profile, &default, &[]);
        let refit = common::translate_slice(&sub, &model, &profile, "refit.gguf", &["--compensate", "refit", "-t", "2"]);
        assert_eq!(common::sha256_of(&default), common::sha256_of(&refit), "{arch:?}: the default slice is the refit's, byte for byte");
        assert_eq!(compensation(&default), Compensation::Refit);
        // The paper's selection, asked for.
        let paper = common::translate_slice(&sub, &model, &profile, "paper.gguf", &[]);
        assert_eq!(compensation(&paper), Compensation::None);
        assert!(!has_down_bias(&paper) && has_down_bias(&default), "{arch:?}");
        // A random slice has no profile to fit from: nothing, without a word.
        let random = sub.join("random.gguf");
        let o = common::selectinfer(&["slice", "-m", model.to_str().unwrap(), "--random", "--load", "0.6", "-o", random.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::text(&o).1);
        assert!(!has_down_bias(&random) && !common::text(&o).1.contains("compensation"), "{}", common::text(&o).1);
    }
}

#[test]
fn compute_on_a_refit_slice_refits_decode_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, data) = common::translate_profile(dir.path(), SynthArch::Llama);
    moments(&model, &profile, &data);
    let refit = common::translate_slice(dir.path(), &model, &profile, "refit.gguf", &["--compensate", "refit"]);
    let neurons = common::translate_slice(dir.path(), &model, &profile, "neurons.gguf", &["--compensate", "refit", "--down-layout", "neurons"]);
    let paper = common::translate_slice(dir.path(), &model, &profile, "paper.gguf", &[]);
    let csv = dir.path().join("rows.csv");
    // The variant label each eval row records.
    let variant_of = |method: &str, file: &Path, extra: &[&str]| -> String {
        let _ = std::fs::remove_file(&csv);
        let mut args = vec!["eval", "-m", file.to_str().unwrap(), "--task", "translate", "--method", method, "--data", data.to_str().unwrap()];
        args.extend(["--limit", "2", "--shots", "0", "-t", "2", "--out", csv.to_str().unwrap()]);
        args.extend(extra);
        let o = common::selectinfer(&args);
        assert!(o.status.success(), "{extra:?}: {}", common::text(&o).1);
        let mut rows = csv::Reader::from_path(&csv).unwrap();
        let column = rows.headers().unwrap().iter().position(|h| h == "variant").unwrap();
        rows.records().next().unwrap().unwrap()[column].to_string()
    };
    let variant = |file: &Path, extra: &[&str]| variant_of("selectinfer", file, extra);
    assert_eq!(variant(&refit, &["--compute", "0.4"]), "compensation=refit,decode_refit=1");
    assert_eq!(variant(&refit, &["--compute", "0.4", "--decode-refit", "0.5"]), "compensation=refit,decode_refit=0.5");
    assert_eq!(variant(&refit, &["--compute", "0.4", "--decode-refit", "off"]), "compensation=refit");
    assert_eq!(variant(&refit, &["--compute", "0.4", "--decode-bias"]), "compensation=refit,decode_bias");
    // Dense decode, a slice of the paper's selection and a neuron-major slice: no refit.
    assert_eq!(variant_of("dense-loaded", &refit, &[]), "compensation=refit");
    assert_eq!(variant(&paper, &["--compute", "0.4"]), "");
    assert_eq!(variant(&neurons, &["--compute", "0.4"]), "compensation=refit,down=neurons");
    common::assert_clean_failure(&["eval", "-m", refit.to_str().unwrap(), "--task", "translate", "--decode-refit", "0", "--out", csv.to_str().unwrap()], "not a ridge above 0");
}

#[test]
fn chat_slices_with_the_refit_by_default_where_the_moments_were_measured() {
    // The tiny model has no chat template, so chat stops once the slice it makes is
    // cached; what is tested is that slice (its decode's default is eval's, above).
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, data) = common::translate_profile(dir.path(), SynthArch::Llama);
    let cache = dir.path().join("slices");
    let chat = |extra: &[&str]| -> String {
        let mut args = vec!["chat", "-m", model.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--task", "translate", "--load", "0.6"];
        args.extend(["--down-layout", "columns", "--compute", "0.4", "--cache-dir", cache.to_str().unwrap(), "-n", "2", "-t", "2"]);
        args.extend(extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(&args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"the word\n").unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("has no chat template"), "{extra:?}: {err}");
        err
    };
    let kinds = || -> Vec<Compensation> {
        let mut v: Vec<Compensation> = std::fs::read_dir(&cache).unwrap().map(|e| compensation(&e.unwrap().path())).collect();
        v.sort_by_key(|c| c.name());
        v
    };
    // No moments yet: chat does not measure them (that loads the whole model, which
    // a memory budget may not hold); the paper's selection, and the command to run.
    let err = chat(&[]);
    assert!(err.contains("chat: slicing") && err.contains("selectinfer profile moments"), "{err}");
    assert_eq!(kinds(), vec![Compensation::None]);
    assert!(!selectinfer::profile::moments::moments_path(&profile, selectinfer::tasks::Task::Translate, &common::sha256_of(&model)).exists());
    // With them, the refit: another cached slice.
    moments(&model, &profile, &data);
    assert!(chat(&[]).contains("chat: slicing"));
    assert_eq!(kinds(), vec![Compensation::None, Compensation::Refit]);
    // The paper's selection, asked for, is the first slice again.
    assert!(chat(&["--compensate", "none"]).contains("chat: reusing"));
}

/// The option's block of a `--help` text: its line and the indented lines under it.
fn help_block(help: &str, option: &str) -> String {
    let mut block = String::new();
    let mut inside = false;
    for line in help.lines() {
        let t = line.trim_start();
        // An option's line (`--name`, `-n, --name`), not a possible value (`- abs: ...`).
        if t.starts_with("--") || (t.starts_with('-') && t.chars().nth(2) == Some(',')) {
            inside = t.split([' ', ',', '=']).any(|w| w == option);
        }
        if inside {
            block.push_str(t);
            block.push(' ');
        }
    }
    block
}

/// `default VALUE` / `default: VALUE`, the value not running on into more digits.
fn states_default(text: &str, value: &str) -> bool {
    let lower = text.to_lowercase();
    ["default ", "default: "].iter().any(|d| {
        lower.match_indices(&format!("{d}{value}")).any(|(i, m)| !lower[i + m.len()..].starts_with(|c: char| c.is_ascii_digit() || c == '.'))
    })
}

#[test]
fn help_and_docs_state_the_plans_defaults() {
    let defaults = selectinfer::compute::session_plan::help_defaults();
    assert_eq!(defaults.len(), 3);
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/commands.md")).unwrap();
    for cmd in [&["generate"][..], &["chat"], &["bench"], &["eval"], &["perplexity"]] {
        let o = common::selectinfer(&[cmd, &["--help"]].concat());
        assert!(o.status.success(), "{cmd:?}");
        let help = common::text(&o).0;
        for (option, value) in &defaults {
            let block = help_block(&help, option);
            assert!(states_default(&block, value), "{cmd:?} --help: {option} does not say default {value}: {block}");
        }
    }
    for (option, value) in &defaults {
        // The first place docs/commands.md names the option with its default.
        let name = format!("`{option}");
        let mut near = docs.match_indices(&name).map(|(i, _)| docs[i..].chars().take(300).collect::<String>());
        assert!(near.any(|t| states_default(&t, value)), "docs/commands.md: {option} with default {value}");
    }
    assert!(!states_default("default 10", "1") && states_default("(default: 1 with", "1") && states_default("[default: 0.2]", "0.2"));
}
