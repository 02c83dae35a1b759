//! The command line: output formats and bad input (clear error, non-zero exit, no
//! panic, no partial output).

mod common;

use common::{selectinfer, text};
use selectinfer::synth::SynthArch;

#[test]
fn inspect_json_has_the_documented_keys() {
    let model = common::tiny_model(SynthArch::Llama);
    let out = selectinfer(&["inspect", model.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["architecture", "n_layer", "n_embd", "n_ff", "ffn_bytes", "non_ffn_bytes", "total_bytes"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["n_ff"], serde_json::json!([192, 192]));
    assert_eq!(v["total_bytes"].as_u64().unwrap(), v["ffn_bytes"].as_u64().unwrap() + v["non_ffn_bytes"].as_u64().unwrap());
}

#[test]
fn inspect_tensors_places_every_tensor_inside_the_file() {
    let model = common::tiny_model(SynthArch::Llama);
    let m = model.to_str().unwrap();
    let plain: serde_json::Value = serde_json::from_slice(&selectinfer(&["inspect", m, "--json"]).stdout).unwrap();
    assert!(plain.get("tensors").is_none(), "only with --tensors");
    let out = selectinfer(&["inspect", m, "--json", "--tensors"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut spans: Vec<(u64, u64, String)> =
        v["tensors"].as_array().unwrap().iter().map(|t| (t["file_offset"].as_u64().unwrap(), t["bytes"].as_u64().unwrap(), t["name"].as_str().unwrap().to_string())).collect();
    assert_eq!(spans.iter().map(|s| s.1).sum::<u64>(), v["total_bytes"].as_u64().unwrap());
    spans.sort();
    let size = std::fs::metadata(&model).unwrap().len();
    assert_eq!(spans[0].0 % 32, 0, "the data section starts aligned");
    for w in spans.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "{} overlaps {}", w[0].2, w[1].2);
    }
    let last = spans.last().unwrap();
    assert!(last.0 + last.1 <= size && size - (last.0 + last.1) < 32, "the last tensor ends the file");
    // The table lists the same tensors.
    let (table, _) = text(&selectinfer(&["inspect", m, "--tensors"]));
    assert!(spans.iter().all(|s| table.contains(&format!("| {} ", s.2))), "{table}");
}

#[test]
fn inspect_table_shows_layers_and_bytes() {
    let model = common::tiny_model(SynthArch::Gemma3);
    let out = selectinfer(&["inspect", model.to_str().unwrap(), "--metadata"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("| layers ") && stdout.contains("| 2 "), "{stdout}");
    assert!(stdout.contains("ffn_geglu"));
    assert!(stdout.contains("gemma3.attention.sliding_window"));
}

#[test]
fn generate_streams_text_and_reports_speed() {
    let model = common::tiny_model(SynthArch::Llama);
    let out = selectinfer(&["generate", "-m", model.to_str().unwrap(), "-p", "the word", "-n", "8", "-t", "2"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.trim().is_empty());
    assert!(stderr.contains("prefill:") && stderr.contains("decode:") && stderr.contains("tok/s"), "{stderr}");

    let out = selectinfer(&["generate", "-m", model.to_str().unwrap(), "-p", "the word", "-n", "8", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["generated_tokens"].as_u64(), Some(8));
    assert!(v["decode_tps"].as_f64().unwrap() > 0.0);
}


#[test]
fn bad_input_is_a_clear_error_without_partial_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let missing = d("missing.gguf");
    std::fs::write(d("notgguf.gguf"), b"this is a text file, not a model\n").unwrap();
    let bytes = std::fs::read(common::tiny_model(SynthArch::Llama)).unwrap();
    std::fs::write(d("trunc.gguf"), &bytes[..bytes.len() / 3]).unwrap();
    let out = d("out.gguf");

    for cmd in [vec!["inspect"], vec!["convert"]] {
        let with = |model: &str, needle: &str| {
            let mut args: Vec<&str> = cmd.clone();
            args.push(model);
            if cmd[0] == "convert" {
                args.extend(["--to", "f16", "-o", &out]);
            }
            common::assert_clean_failure(&args, needle);
        };
        with(&missing, "No such file");
        with(&d("notgguf.gguf"), "not a GGUF file");
        with(&d("trunc.gguf"), "truncated");
    }
    for model in [&missing, &d("notgguf.gguf"), &d("trunc.gguf")] {
        common::assert_clean_failure(&["generate", "-m", model, "-p", "hi"], "cannot load");
    }
    let tiny = common::tiny_model(SynthArch::Llama);
    common::assert_clean_failure(&["convert", tiny.to_str().unwrap(), "--to", "q3_weird", "-o", &out], "invalid value 'q3_weird'");
    common::assert_clean_failure(&["convert", tiny.to_str().unwrap(), "--to", "f16", "-o", tiny.to_str().unwrap()], "is the input <MODEL>");
    assert_eq!(common::files_in(dir.path()), vec!["notgguf.gguf", "trunc.gguf"], "no output or temporary file left");
}

/// `bench` carries its prompt text: it runs from a folder without `data/` (a GPU
/// check started outside the repository, issue #42).
#[test]
fn bench_runs_from_any_folder() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_model(selectinfer::synth::SynthArch::Llama);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_selectinfer"))
        .args(["bench", "--dense", model.to_str().unwrap(), "--reps", "1", "--gen", "2", "--prompt-tokens", "16", "-t", "2", "--json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o).1);
    assert!(!common::text(&o).0.trim().is_empty());
}

/// `bench --stock` (implies `--processes`): each repetition of each setting in its
/// own process, round-robin, stock llama.cpp's client timed in the same run on the
/// same prompt (here a stand-in script that records its arguments), every record
/// with its process's peak RSS and speedups over the first setting.
#[test]
fn bench_runs_the_device_case_under_a_memory_cap_with_a_dense_file_that_is_not_repacked() {
    // The device case of issue #39: every setting's process in a memory group at the
    // cap, the dense file once as llama.cpp loads it and once with its repacking off
    // (file-backed, evictable), and the model's settings.
    let model = common::tiny_model(selectinfer::synth::SynthArch::Llama);
    let m = model.to_str().unwrap();
    let cap = 2u64 << 30;
    let o = common::selectinfer(&[
        "bench", "--dense", m, "--dense-no-repack", m, "-m", m, "--compute-list", "0.5", "--mem-cap", "2GiB", "--reps", "2", "--gen", "4", "--prompt-tokens", "16", "-t", "2", "-o", "json",
    ]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let recs: Vec<serde_json::Value> = common::text(&o).0.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<(bool, bool)> = recs.iter().map(|r| (r["dense"].as_bool().unwrap(), r["repack"].as_bool().unwrap())).collect();
    assert_eq!(kinds, [(true, true), (true, false), (false, true)], "dense, dense without repacking, then the model's setting");
    for r in &recs {
        assert_eq!(r["mem_cap_bytes"].as_u64(), Some(cap), "{r}");
        assert!(r["major_faults"].as_u64().is_some(), "each process's major faults: {r}");
        let peak = r["peak_rss_bytes"].as_u64().unwrap();
        assert!(peak > 1 << 20 && peak < cap, "each process's peak RSS, under its cap: {r}");
    }
    // --mem-cap is refused with --stock (stock llama.cpp repacks into memory a cap cannot evict).
    let o = common::selectinfer(&["bench", "--dense", m, "--stock", "/bin/true", "--mem-cap", "2GiB"]);
    assert!(!o.status.success() && common::text(&o).1.contains("cannot be used with"), "{}", common::text(&o).1);
}

#[test]
fn bench_times_stock_llama_cpp_and_each_setting_in_its_own_process() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_model(selectinfer::synth::SynthArch::Llama);
    let log = dir.path().join("stock-args.txt");
    let stock = dir.path().join("stock_bench");
    std::fs::write(
        &stock,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --text ] && cp \"$2\" '{}'; shift; done\n\
             echo '{{\"engine\":\"stock llama.cpp\",\"model\":\"m\",\"rep\":0,\"prefill_tps\":100,\"decode_tps\":50,\"prefill_s\":1,\"decode_s\":1}}'\n",
            log.display(),
            dir.path().join("prompt.txt").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stock, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let m = model.to_str().unwrap();
    let o = common::selectinfer(&[
        "bench", "--dense", m, "--stock", stock.to_str().unwrap(), "-m", m, "--compute-list", "1.0", "--reps", "3", "--gen", "4", "--prompt-tokens", "16", "-t", "2", "--json",
    ]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let recs: Vec<serde_json::Value> = common::text(&o).0.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let engines: Vec<&str> = recs.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["selectinfer", "stock llama.cpp", "selectinfer"], "dense anchor, stock, then the model's settings");
    for r in &recs {
        assert!(r["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "each setting's own process has its peak RSS: {r}");
        assert_eq!(r["reps"].as_u64(), Some(3));
    }
    let (anchor, stock_rec) = (&recs[0], &recs[1]);
    assert_eq!(stock_rec["decode_tps"].as_f64(), Some(50.0));
    assert_eq!(stock_rec["prefill_tps"].as_f64(), Some(100.0));
    let want = 50.0 / anchor["decode_tps"].as_f64().unwrap();
    assert!((stock_rec["speedup"].as_f64().unwrap() - want).abs() < 1e-9);
    assert_eq!(anchor["speedup"].as_f64(), Some(1.0));
    // Three repetitions of the stock setting, each with the same prompt file.
    let args = std::fs::read_to_string(&log).unwrap();
    assert_eq!(args.lines().count(), 3);
    assert!(args.lines().all(|l| l.starts_with(&format!("bench -m {m} -p 16 -n 4 -r 1 -t 2 --text "))), "{args}");
    let prompt = std::fs::read_to_string(dir.path().join("prompt.txt")).unwrap();
    assert!(prompt.len() > 16 && prompt.len() <= 40 * 16, "the bench prompt's text, cut to 40 bytes a token");
}

/// `--layout` chooses how decode reaches the computed neurons: `copy` gathers them
/// into a buffer, `in-place` reorders the loaded FFN; decode is bit-identical
/// between the two, so greedy generation gives the same text. `bench --no-repack`
/// loads the --model files as llama.cpp's --no-repack does, and with `--layout
/// copy` under a cap it is the device case's SelectInfer setting (file-backed
/// weights a cap can evict, decode reading only the gathered neurons).
#[test]
fn the_layout_is_asked_for_and_decodes_the_same_tokens() {
    let model = common::tiny_model(SynthArch::Llama);
    let m = model.to_str().unwrap();
    let generate = |layout: &str| {
        let o = selectinfer(&["generate", "-m", m, "-p", "the word of a man", "-n", "8", "--compute", "0.5", "--layout", layout, "-t", "2", "--json"]);
        assert!(o.status.success(), "{}", text(&o).1);
        serde_json::from_str::<serde_json::Value>(text(&o).0.trim()).unwrap()
    };
    let (in_place, copy) = (generate("in-place"), generate("copy"));
    assert_eq!(in_place["text"], copy["text"]);
    assert!(in_place["text"].as_str().is_some_and(|t| !t.is_empty()));
    assert_eq!(in_place["selection"]["compact_bytes"].as_u64(), Some(0), "in place copies nothing: {in_place}");
    assert!(in_place["selection"]["swapped_neurons"].as_u64().unwrap() > 0, "{in_place}");
    assert!(copy["selection"]["compact_bytes"].as_u64().unwrap() > 0, "a copy: {copy}");
    assert_eq!(copy["selection"]["swapped_neurons"].as_u64(), Some(0), "{copy}");
    let o = selectinfer(&[
        "bench", "--dense", m, "-m", m, "--no-repack", "--layout", "copy", "--compute-list", "0.5", "--reps", "1", "--gen", "4", "--prompt-tokens", "16", "-t", "2", "-o", "json",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let recs: Vec<serde_json::Value> = text(&o).0.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<(bool, bool, &str)> = recs.iter().map(|r| (r["dense"].as_bool().unwrap(), r["repack"].as_bool().unwrap(), r["layout"].as_str().unwrap())).collect();
    assert_eq!(kinds, [(true, true, "dense"), (false, false, "copy")], "the --dense anchor as llama.cpp loads it, the --model setting unrepacked, gathered");
    let o = selectinfer(&["generate", "-m", m, "-p", "hi", "--compute", "0.5", "--layout", "sideways"]);
    assert!(!o.status.success() && text(&o).1.contains("invalid value 'sideways'"), "{}", text(&o).1);
}
