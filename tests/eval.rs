//! The evaluation harness: rows, CSV appends, and method/file mismatches.

mod common;

use selectinfer::synth::SynthArch;

#[test]
fn eval_appends_one_row_per_run_under_one_header() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::write_tiny_qa(dir.path());
    let csv = dir.path().join("results.csv");
    let model = common::tiny_model(SynthArch::Llama);
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["eval", "-m", model.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--out", csv.to_str().unwrap(), "-t", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    for extra in [&["--method", "reference"][..], &["--method", "coreinfer", "--compute", "0.4", "--shots", "1"][..]] {
        let a = args(extra);
        let out = common::selectinfer(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "{:?}", common::text(&out));
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().clone();
    for col in ["method", "task", "examples", "em", "f1", "prefill_tps", "decode_tps", "weight_bytes", "peak_rss_bytes", "major_faults", "wall_s", "git_commit", "machine"] {
        assert!(header.iter().any(|h| h == col), "column {col} in {header:?}");
    }
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2, "{text}");
    let get = |row: &csv::StringRecord, col: &str| row[header.iter().position(|h| h == col).unwrap()].to_string();
    assert_eq!(get(&rows[0], "method"), "reference");
    assert_eq!(get(&rows[1], "method"), "coreinfer");
    assert_eq!(get(&rows[1], "compute"), "0.4");
    assert_eq!(get(&rows[0], "examples"), "4", "the evaluation split of 8 examples is the last 4");
    let em: f64 = get(&rows[0], "em").parse().unwrap();
    assert!((0.0..=100.0).contains(&em));
    // Every score has its interval around it; selection time only where neurons are selected.
    for row in &rows {
        for m in ["em", "f1"] {
            let v = |c: &str| -> f64 { get(row, c).parse().unwrap() };
            let (lo, point, hi) = (v(&format!("{m}_lo")), v(m), v(&format!("{m}_hi")));
            assert!(0.0 <= lo && lo <= point && point <= hi && hi <= 100.0, "{m}: {lo} {point} {hi}");
        }
    }
    assert_eq!(get(&rows[0], "select_ms"), "", "reference: no selection");
    assert!(get(&rows[1], "select_ms").parse::<f64>().unwrap() >= 0.0, "coreinfer selects per prompt");
}

#[test]
fn perplexity_of_a_task_text_appends_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::write_tiny_qa(dir.path());
    let csv = dir.path().join("perplexity.csv");
    let model = common::tiny_model(SynthArch::Llama);
    let args = ["perplexity", "-m", model.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--ctx", "16", "--chunks", "2", "-t", "2", "--out", csv.to_str().unwrap(), "--json"];
    let out = common::selectinfer(&args);
    let (stdout, err) = common::text(&out);
    assert!(out.status.success(), "{err}");
    let printed: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let rows: Vec<selectinfer::eval::perplexity::PerplexityRow> = csv::Reader::from_path(&csv).unwrap().deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!((r.task.as_deref(), r.ctx, r.max_chunks, r.chunks, r.tokens), (Some("qa"), 16, Some(2), 2, 2 * 7));
    assert_eq!(r.ppl, printed["ppl"].as_f64().unwrap());
    assert!(r.ppl > 1.0 && r.ppl.is_finite() && (r.mean_nll.exp() - r.ppl).abs() < 1e-9 * r.ppl);
    // The chunks' NLL sums add up to the total, and the interval over them holds the point.
    let spans = r.chunk_spans().expect("two chunks' sums");
    assert_eq!(spans.iter().map(|s| s.tokens).collect::<Vec<_>>(), [7, 7]);
    assert!((spans.iter().map(|s| s.nll).sum::<f64>() - r.mean_nll * 14.0).abs() < 1e-9 * r.mean_nll * 14.0);
    let (lo, hi) = (r.ppl_lo.unwrap(), r.ppl_hi.unwrap());
    assert!(lo <= r.ppl && r.ppl <= hi, "{lo} {} {hi}", r.ppl);
    assert_eq!((printed["ppl_lo"].as_f64(), printed["ppl_hi"].as_f64()), (Some(lo), Some(hi)));
    assert_eq!(r.data, data.file_name().unwrap().to_string_lossy());
    common::assert_clean_failure(&["perplexity", "-m", model.to_str().unwrap(), "--task", "qa", "--data", "/nonexistent.jsonl"], "/nonexistent.jsonl");
}

#[test]
fn method_and_file_mismatches_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::write_tiny_qa(dir.path());
    let csv = dir.path().join("r.csv");
    let m = common::tiny_model(SynthArch::Llama);
    let base = ["eval", "-m", m.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--out", csv.to_str().unwrap()];
    let with = |extra: &[&'static str]| [&base[..], extra].concat();
    common::assert_clean_failure(&with(&["--method", "selectinfer", "--compute", "0.4"]), "method selectinfer needs a profile-guided slice");
    common::assert_clean_failure(&with(&["--method", "q4_0"]), "method q4_0 needs an unsliced Q4_0 model");
    common::assert_clean_failure(&with(&["--method", "coreinfer"]), "method coreinfer needs an unsliced model and --compute");
    common::assert_clean_failure(&with(&["--method", "reference", "--shots", "9"]), "profiling examples for 9 shots");
    assert!(!csv.exists(), "no row for a failed run");
}

/// `--data` with the bundled Czech-English file: profile and eval accept it and name
/// it in the raw profile and the row (apart from de-en); an unknown language code
/// is a clean error naming the line.
#[test]
fn cs_en_data_is_profiled_and_evaluated_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_model(SynthArch::Llama);
    let m = model.to_str().unwrap();
    let cs = common::repo_root().join("data/wmt16_cs_en_newstest2016_500.jsonl");
    let prof = dir.path().join("prof");
    let out = common::selectinfer(&[
        "profile", "-m", m, "--task", "translate", "--data", cs.to_str().unwrap(), "--limit", "2", "--gen-tokens", "2", "-o",
        prof.to_str().unwrap(), "-t", "2",
    ]);
    assert!(out.status.success(), "{:?}", common::text(&out));
    let raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(prof.join("raw/translate-wmt16_cs_en_newstest2016_500.json")).unwrap()).unwrap();
    assert_eq!(raw["dataset"], "wmt16_cs_en_newstest2016_500");

    let csv = dir.path().join("r.csv");
    let outputs = dir.path().join("o.jsonl");
    let eval = ["eval", "-m", m, "--task", "translate", "--method", "reference", "--limit", "2", "--shots", "1", "-t", "2"];
    let io = ["--out", csv.to_str().unwrap(), "--outputs", outputs.to_str().unwrap()];
    let out = common::selectinfer(&[&eval[..], &io, &["--data", cs.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{:?}", common::text(&out));
    let rows: Vec<selectinfer::eval::harness::EvalRow> = csv::Reader::from_path(&csv).unwrap().deserialize().map(Result::unwrap).collect();
    assert_eq!((rows[0].data.as_str(), rows[0].examples), ("wmt16_cs_en_newstest2016_500.jsonl", 2));
    let text = std::fs::read_to_string(&outputs).unwrap();
    assert!(text.starts_with("{\"id\":\"newstest2016-csen-201\""), "the evaluation split follows the 200 profiling lines: {text}");

    let bad = dir.path().join("xx.jsonl");
    std::fs::write(&bad, "{\"src\":\"a\",\"ref\":\"b\",\"src_lang\":\"cs\"}\n{\"src\":\"a\",\"ref\":\"b\",\"src_lang\":\"tlh\",\"tgt_lang\":\"en\"}\n").unwrap();
    common::assert_clean_failure(&[&eval[..], &io, &["--data", bad.to_str().unwrap()]].concat(), ":2: unknown language code \"tlh\" in \"src_lang\"");
}

/// `perplexity --kl-reference`: the mean KL of the next-token distributions equals
/// an independent computation from both files' logits over the same scored
/// positions; a file against itself is 0 with every top token the same.
#[test]
fn kl_divergence_from_a_reference_equals_the_logits_computation() {
    use selectinfer::engine::{LoadOptions, Model, Session, SessionOptions};
    let dir = tempfile::tempdir().unwrap();
    let data = common::write_tiny_qa(dir.path());
    let model = common::tiny_model(SynthArch::Llama);
    let slice = dir.path().join("random.gguf");
    let o = common::selectinfer(&["slice", "-m", model.to_str().unwrap(), "--random", "--load", "0.5", "-o", slice.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::text(&o).1);
    let csv = dir.path().join("perplexity.csv");
    let run = |file: &std::path::Path| {
        let args = ["perplexity", "-m", file.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--ctx", "16", "--chunks", "3", "-t", "2"];
        let o = common::selectinfer(&[&args[..], &["--kl-reference", model.to_str().unwrap(), "--out", csv.to_str().unwrap()]].concat());
        assert!(o.status.success(), "{}", common::text(&o).1);
    };
    run(&model);
    run(&slice);
    let rows: Vec<selectinfer::eval::perplexity::PerplexityRow> = csv::Reader::from_path(&csv).unwrap().deserialize().map(Result::unwrap).collect();
    assert_eq!((rows[0].kl, rows[0].same_top), (Some(0.0), Some(1.0)), "a file against itself");
    let r = &rows[1];
    assert_eq!(r.kl_reference.as_deref(), model.file_name().unwrap().to_str());

    // Independently: both files' logits over the same chunks, KL(P_ref || P) at the
    // scored positions (the second half of each chunk, as perplexity scores them).
    let examples = selectinfer::tasks::read_examples(&data, selectinfer::tasks::Task::Qa).unwrap();
    let text = selectinfer::tasks::evaluation_text(selectinfer::tasks::Split::Eval.select(&examples));
    let (reference, sliced) = (Model::load(&model, &LoadOptions::default()).unwrap(), Model::load(&slice, &LoadOptions::default()).unwrap());
    let chunks = selectinfer::profile::text::text_chunks(&reference, &text, 16, Some(3)).unwrap();
    let logits = |m: &Model, chunk: &[i32]| {
        let mut s = Session::new(m, SessionOptions { n_ctx: 16, n_batch: 16, threads: 2, observer: None }).unwrap();
        s.eval_all_logits(chunk).unwrap()
    };
    let log_softmax = |x: &[f32]| {
        let z = x.iter().map(|&v| f64::from(v).exp()).sum::<f64>().ln();
        x.iter().map(|&v| f64::from(v) - z).collect::<Vec<f64>>()
    };
    let (mut sum, mut n, mut same) = (0.0, 0usize, 0usize);
    for chunk in &chunks {
        let (a, b) = (logits(&reference, chunk), logits(&sliced, chunk));
        for j in 8..15 {
            let (p, q) = (log_softmax(&a[j]), log_softmax(&b[j]));
            sum += p.iter().zip(&q).map(|(p, q)| p.exp() * (p - q)).sum::<f64>();
            let top = |v: &[f64]| v.iter().enumerate().fold(0, |best, (i, x)| if *x > v[best] { i } else { best });
            same += usize::from(top(&p) == top(&q));
            n += 1;
        }
    }
    let want = sum / n as f64;
    let kl = r.kl.unwrap();
    assert!(want > 1e-4 && (kl - want).abs() <= 1e-4 * want, "KL {kl} vs {want}");
    assert_eq!(r.same_top.unwrap(), same as f64 / n as f64);
    assert!(r.kl_lo.unwrap() <= kl && kl <= r.kl_hi.unwrap());
}
