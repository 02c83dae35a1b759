//! `selectinfer tune`: the frontier of a tiny model, its choice under the limits,
//! resuming from the work folder, and the quality measure against an independent
//! computation.

mod common;

use std::path::Path;

use common::*;
use selectinfer::compute::{ComputeRequest, SessionPlan};
use selectinfer::engine::{LoadOptions, Model, Session, SessionOptions};
use selectinfer::eval::answers::{answer_divergence, answer_divergences, AnswerReference};
use selectinfer::eval::kl::position_kl;
use selectinfer::synth::SynthArch;
use selectinfer::tasks::{read_examples, Split, Task};

/// A profile of the tiny model for all three tasks (a few bundled examples each).
fn tiny_profile(dir: &Path, model: &Path) -> std::path::PathBuf {
    let profile = dir.join("profile");
    for task in ["qa", "translate", "summarize"] {
        let o = selectinfer(&["profile", "-m", model.to_str().unwrap(), "--task", task, "--limit", "2", "--gen-tokens", "2", "-o", profile.to_str().unwrap(), "-t", "2"]);
        assert!(o.status.success(), "{}", text(&o).1);
    }
    profile
}

#[test]
fn the_answer_kl_of_a_dense_decode_is_the_batch_kl_computed_independently() {
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, data) = translate_profile(dir.path(), SynthArch::Llama);
    let slice = translate_slice(dir.path(), &model, &profile, "s.gguf", &[]);
    let all = read_examples(&data, Task::Translate).unwrap();
    let examples = &Split::Profile.select(&all)[..3];
    let anchor = Model::load(&model, &LoadOptions::default()).unwrap();
    let reference = AnswerReference::measure(&anchor, examples, &[], 5, 2).unwrap();
    let sliced = Model::load(&slice, &LoadOptions::default()).unwrap();
    let plan = SessionPlan::build(&ComputeRequest::default(), sliced.gguf()).unwrap();
    let n_ctx = reference.n_ctx();
    let mut s = plan.open(&sliced, SessionOptions { n_ctx, n_batch: n_ctx, threads: 2, observer: None }).unwrap();
    let d = answer_divergence(&mut s, examples, &[], &reference).unwrap();

    // Independently: both files evaluate prompt + answer in one batch, and the KL of
    // the positions that predict the answer tokens is summed.
    let (mut kl, mut tokens) = (0.0, 0usize);
    for ex in examples {
        let prompt = anchor.tokenize(&selectinfer::eval::harness::prompt_with_shots(ex, &[]), true, false);
        let mut answer = anchor.tokenize(&format!(" {}", ex.references[0]), false, false);
        answer.truncate(5);
        let mut all = prompt.clone();
        all.extend_from_slice(&answer[..answer.len() - 1]);
        let batch = |m: &Model| Session::new(m, SessionOptions { n_ctx, n_batch: n_ctx, threads: 2, observer: None }).unwrap().eval_logits_from(&all, prompt.len() - 1).unwrap();
        for (r, c) in batch(&anchor).iter().zip(batch(&sliced).iter()) {
            kl += position_kl(r, c).0;
            tokens += 1;
        }
    }
    assert_eq!(d.tokens, tokens);
    let expected = kl / tokens as f64;
    assert!(expected > 1e-4, "the slice should move the output: {expected}");
    assert!((d.kl.point - expected).abs() <= 1e-3 * expected + 1e-6, "decode-path KL {} against batch KL {expected}", d.kl.point);
    assert!(d.kl.lo <= d.kl.point && d.kl.point <= d.kl.hi, "{:?}", d.kl);
}

/// The reference is the file's own decode path: the file itself, scored as every
/// point is, sits at KL 0 exactly, and its record is the reference's own.
#[test]
fn the_file_scored_as_a_point_is_at_kl_zero_against_its_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (model, _, data) = translate_profile(dir.path(), SynthArch::Llama);
    let all = read_examples(&data, Task::Translate).unwrap();
    let examples = &Split::Profile.select(&all)[..3];
    let anchor = Model::load(&model, &LoadOptions::default()).unwrap();
    let reference = AnswerReference::measure(&anchor, examples, &[], 5, 2).unwrap();
    let plan = SessionPlan::build(&ComputeRequest::default(), anchor.gguf()).unwrap();
    let n_ctx = reference.n_ctx();
    let mut s = plan.open(&anchor, SessionOptions { n_ctx, n_batch: n_ctx, threads: 2, observer: None }).unwrap();
    let d = answer_divergence(&mut s, examples, &[], &reference).unwrap();
    assert_eq!(d.kl.point, 0.0, "{d:?}");
    assert_eq!(d.same_top, 1.0);
    assert_eq!(d, reference.own_divergence());
    assert!(d.ppl.point > 1.0 && d.tokens > 3, "{d:?}");
}

/// Every phi of a slice scored from one prefill per example equals the same phi
/// in a session of its own, bit for bit: llama in both layouts, and gemma3
/// (sliding-window attention).
#[test]
fn every_phi_scored_from_one_prefill_equals_a_session_of_its_own() {
    for (arch, layout) in [(SynthArch::Llama, "neurons"), (SynthArch::Llama, "columns"), (SynthArch::Gemma3, "neurons")] {
        let dir = tempfile::tempdir().unwrap();
        let (model, profile, data) = translate_profile(dir.path(), arch);
        let slice = translate_slice(dir.path(), &model, &profile, "s.gguf", &["--down-layout", layout]);
        let all = read_examples(&data, Task::Translate).unwrap();
        let examples = &Split::Profile.select(&all)[..3];
        let anchor = Model::load(&model, &LoadOptions::default()).unwrap();
        let reference = AnswerReference::measure(&anchor, examples, &[], 5, 2).unwrap();
        let sliced = Model::load(&slice, &LoadOptions::default()).unwrap();
        let n_ctx = reference.n_ctx();
        let opts = || SessionOptions { n_ctx, n_batch: n_ctx, threads: 2, observer: None };
        // Dense first: the prefill must still count the votes for the phis after it;
        // dynamic only (no static set) selects from the same votes.
        let phis = [(None, false), (Some(0.5), false), (Some(0.3), false), (Some(0.4), false), (Some(0.4), true), (Some(0.3), true)];
        let plans: Vec<SessionPlan> =
            phis.iter().map(|&(phi, no_static)| SessionPlan::build(&ComputeRequest { compute: phi, no_static, ..ComputeRequest::default() }, sliced.gguf()).unwrap()).collect();
        let computes: Vec<_> = plans.iter().map(|p| p.compute.clone()).collect();
        let mut s = plans[1].open(&sliced, opts()).unwrap();
        let together = answer_divergences(&mut s, &computes, examples, &[], &reference).unwrap();
        drop(s);
        let kls: Vec<f64> = together.iter().map(|d| d.kl.point).collect();
        assert!(kls[2] > kls[0] && kls[1] > kls[0], "{arch:?} {layout}: computing fewer neurons should move the answers further: {kls:?}");
        assert_ne!(kls[4], kls[3], "{arch:?} {layout}: without the static set decode computes other neurons");
        for (plan, t) in plans.iter().zip(&together) {
            let mut s = plan.open(&sliced, opts()).unwrap();
            let alone = answer_divergence(&mut s, examples, &[], &reference).unwrap();
            assert_eq!(&alone, t, "{arch:?} {layout}: phi {:?}", plan.phi);
        }
    }
}

#[test]
fn tune_measures_the_frontier_chooses_within_the_limits_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(SynthArch::Llama);
    let profile = tiny_profile(dir.path(), &model);
    let data = write_tiny_qa(dir.path());
    let work = dir.path().join("work");
    let out = dir.path().join("tuned.gguf");
    let args = |max_loss: &str| -> Vec<String> {
        [
            "tune", "-m", model.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--profile", profile.to_str().unwrap(), "--examples", "3",
            "--reps", "1", "--gen", "4", "--no-refine", "--work", work.to_str().unwrap(), "-o", out.to_str().unwrap(), "--max-loss", max_loss, "--json", "-t", "2",
        ]
        .map(String::from)
        .into()
    };
    let run = |a: &[String]| selectinfer(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(&args("1000"));
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let frontier = report["frontier"].as_array().unwrap();
    assert_eq!(frontier.len(), 13, "the coarse grid: {stdout}");
    // Each dynamic-only point is timed as its twin with the static set.
    let same = |m: &serde_json::Value, load: f64, phi: f64| m["point"]["load"].as_f64() == Some(load) && m["point"]["compute"].as_f64() == Some(phi);
    let dynamic: Vec<&serde_json::Value> = frontier.iter().filter(|m| m["point"]["no_static"] == true).collect();
    assert_eq!(dynamic.len(), 5, "{stdout}");
    for d in &dynamic {
        let (load, phi) = (d["point"]["load"].as_f64().unwrap(), d["point"]["compute"].as_f64().unwrap());
        let twin = frontier.iter().find(|m| m["point"]["no_static"].is_null() && same(m, load, phi)).unwrap();
        assert_eq!((&d["speedup"], &d["peak_rss_bytes"]), (&twin["speedup"], &twin["peak_rss_bytes"]), "{d} / {twin}");
    }
    let anchor = &frontier[0];
    assert_eq!((anchor["point"]["load"].as_f64(), anchor["point"]["compute"].is_null()), (Some(1.0), true));
    assert!(anchor["kl"].as_f64().unwrap() < 1e-4 && anchor["same_top"].as_f64() == Some(1.0), "the file against itself: {anchor}");
    assert_eq!(anchor["speedup"].as_f64(), Some(1.0));
    // Under a loss every point meets, the choice is the fastest point (ties: the
    // lower KL).
    let by_speed_then_kl = |a: &&serde_json::Value, b: &&serde_json::Value| {
        let f = |m: &serde_json::Value, k: &str| m[k].as_f64().unwrap();
        f(a, "speedup").total_cmp(&f(b, "speedup")).then(f(b, "kl").total_cmp(&f(a, "kl")))
    };
    let fastest = frontier.iter().max_by(by_speed_then_kl).unwrap();
    assert_eq!(report["chosen"], fastest["point"], "{stdout}");
    assert!(stderr.contains("one round-robin run"), "{stderr}");
    if !fastest["point"]["load"].as_f64().is_some_and(|g| g >= 1.0) {
        let g = selectinfer::gguf::GgufFile::read(&out).unwrap();
        assert_eq!(g.get_str("selectinfer.tune.task"), Some("qa"));
    }

    // `chat --tuned` chooses from the cached frontier by the same rule, measuring
    // nothing, and loads the point's slice with its phi.
    let chat = |extra: &[&str]| {
        let mut a = vec!["chat", "-m", model.to_str().unwrap(), "--task", "qa", "--tuned", "--tune-work", work.to_str().unwrap(), "-t", "2"];
        a.extend(extra);
        selectinfer(&a)
    };
    let chosen: selectinfer::tune::grid::Point = serde_json::from_value(report["chosen"].clone()).unwrap();
    let o = chat(&["--max-loss", "1000"]);
    let (_, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("chat: tuned point {chosen} for qa")), "{stderr}");
    assert!(!stderr.contains("tune: [") && !stderr.contains("round-robin"), "chat measured again: {stderr}");
    // Twice the fastest measured speedup: no point meets it, however noisy the timing.
    let beyond = format!("{}", 2.0 * frontier.iter().map(|m| m["speedup"].as_f64().unwrap()).fold(1.0, f64::max));
    let o = chat(&["--max-loss", "1000", "--min-speedup", &beyond]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("no measured point meets the limits; the closest is"), "{}", text(&o).1);
    let o = chat(&["--compute", "0.4"]);
    assert_eq!(o.status.code(), Some(2), "--tuned and --compute conflict: {}", text(&o).1);
    // A tune folder of another file is refused.
    let other = dir.path().join("other.gguf");
    std::fs::write(&other, [std::fs::read(&model).unwrap(), vec![0u8; 32]].concat()).unwrap();
    let o = selectinfer(&["chat", "-m", other.to_str().unwrap(), "--task", "qa", "--tuned", "--tune-work", work.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("is a tune of another file"), "{}", text(&o).1);

    // Again, with a tighter loss: nothing is measured again, and the choice is the
    // fastest point within it.
    let tight = anchor["kl"].as_f64().unwrap() + 1e-9;
    let o = run(&args(&format!("{tight}")));
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("tune: [") && !stderr.contains("round-robin"), "a resumed tune measured again: {stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let within: Vec<&serde_json::Value> = report["frontier"].as_array().unwrap().iter().filter(|m| m["kl"].as_f64().unwrap() <= tight).collect();
    let best = within.iter().max_by(|a, b| by_speed_then_kl(a, b)).unwrap();
    assert_eq!(report["chosen"], best["point"]);

    // A limit no point meets: a clear error naming the closest point.
    let mut a = args("1000");
    a.extend(["--min-speedup".into(), beyond.clone()]);
    let o = run(&a);
    assert!(!o.status.success());
    let (_, stderr) = text(&o);
    assert!(stderr.contains("no measured point meets the limits; the closest is") && !stderr.contains("panicked"), "{stderr}");
}

/// `tune-check` on the committed 1.5B translate tune and its experiment: the report
/// redraws byte for byte, rho equals the rank correlation computed by hand (numpy:
/// the 10 points' squared rank differences sum to 18, rho = 1 - 6 * 18 / 990), and
/// the tune folder is left as it was.
#[test]
fn tune_check_ranks_the_committed_frontier_as_computed_by_hand() {
    let dir = repo_root().join("results/tune-check-qwen2.5-1.5b");
    let (frontier, results) = (dir.join("frontier"), dir.join("results.csv"));
    let before = std::fs::read(frontier.join("quality.jsonl")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let md = out.path().join("spearman.md");
    let yaml = repo_root().join("experiments/tune-check-qwen2.5-1.5b.yaml");
    let committed = std::fs::read_to_string(dir.join("spearman.md")).unwrap();
    // The committed report: the ranking, then the choice under two budgets.
    let o = selectinfer(&[
        "tune-check", "--frontier", frontier.to_str().unwrap(), "--experiment", yaml.to_str().unwrap(), "--mem-budget", "1200MiB", "--mem-budget", "1100MiB", "-o", md.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(std::fs::read_to_string(&md).unwrap(), committed);
    // Without limits the report is the ranking alone; the scores' rank stability
    // needs the outputs, which the experiment's cells name.
    let ranking = &committed[..committed.find("\nThe point tune chooses").expect("the budgets section")];
    assert!(ranking.contains("- The BLEU scores' own rank stability: 0.94 ("), "{ranking}");
    let without_outputs: String = ranking.lines().filter(|l| !l.contains("own rank stability")).map(|l| format!("{l}\n")).collect();
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--results", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(text(&o).0, without_outputs);
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--results", results.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 10);
    assert!((v["kl"]["rho"].as_f64().unwrap() - (1.0 - 6.0 * 18.0 / 990.0)).abs() < 1e-12);
    assert!(v["score_stability"].is_null(), "no outputs without the experiment file");
    assert_eq!(std::fs::read(frontier.join("quality.jsonl")).unwrap(), before);
    // Told by the experiment file, the rows are the same (one model), and the
    // report is too.
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--experiment", yaml.to_str().unwrap(), "--results", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(text(&o).0, ranking);
    // Under budgets: the point tune chooses from the frontier, with its paired
    // difference on the evaluation split as the experiment's report gives it
    // (results/tune-check-qwen2.5-1.5b/README.md: dense-loaded 0.85, -1.1 [-4.1, +1.9]).
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--experiment", yaml.to_str().unwrap(), "--mem-budget", "1200MiB", "--mem-budget", "1100MiB"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains("| 0.15 ")).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(rows[0].contains("| 1 / dense ") && rows[0].contains("0 (the file itself)"), "{}", rows[0]);
    assert!(rows[1].contains("| 0.85 / dense ") && rows[1].contains("| -1.1 [-4.1, +1.9] "), "{}", rows[1]);
    assert!(rows[2].contains("| none meets; closest 0.85 / dense ") && rows[2].contains("| 1.07 GiB "), "{}", rows[2]);
    // Rows of two files at one point are refused, not mixed; --variant picks one selection.
    let csv = std::fs::read_to_string(&results).unwrap();
    let mut mixed = csv.clone();
    for line in csv.lines().skip(1).filter(|l| l.contains(",translate,") && l.contains(",selectinfer,")) {
        mixed += &line.replacen("qwen2.5-1.5b.source.", "other.source.", 1).replacen("base=q4_k_m,down=neurons", "base=q4_k_m,down=neurons,compensate=refit", 1);
        mixed.push('\n');
    }
    let mixed_csv = out.path().join("mixed.csv");
    std::fs::write(&mixed_csv, mixed).unwrap();
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--results", mixed_csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("rows of 2 files or selections at gamma "), "{}", text(&o).1);
    // (No outputs beside the copied results: no rank stability.)
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--results", mixed_csv.to_str().unwrap(), "--variant", "base=q4_k_m,down=neurons"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(text(&o).0, without_outputs);
    let o = selectinfer(&["tune-check", "--frontier", frontier.to_str().unwrap(), "--results", mixed_csv.to_str().unwrap(), "--experiment", yaml.to_str().unwrap()]);
    assert!(o.status.success(), "the experiment's model only: {}", text(&o).1);
    assert_eq!(text(&o).0, without_outputs);
    // A folder that is not a tune's is an error, not a panic.
    let o = selectinfer(&["tune-check", "--frontier", out.path().to_str().unwrap(), "--results", results.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).1);
    assert!(text(&o).1.contains("is not a tune folder"), "{}", text(&o).1);
}

/// A file `tune` wrote runs as tuned: `generate` without `--compute` takes the phi
/// its metadata records (the same tokens as asking for it on the untuned slice),
/// and `--compute` still overrides it.
#[test]
fn generate_runs_a_tuned_file_at_its_recorded_phi() {
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, _) = common::translate_profile(dir.path(), SynthArch::Llama);
    let slice = common::translate_slice(dir.path(), &model, &profile, "s.gguf", &["--down-layout", "neurons"]);
    let tuned = dir.path().join("tuned.gguf");
    let g = selectinfer::gguf::GgufFile::read(&slice).unwrap();
    selectinfer::gguf::copy_with_metadata(&g, &tuned, &[("selectinfer.tune.compute".into(), selectinfer::gguf::Value::F64(0.4))]).unwrap();
    let run = |file: &std::path::Path, extra: &[&str]| -> serde_json::Value {
        let mut a = vec!["generate", "-m", file.to_str().unwrap(), "-p", "the 3 word of a man is", "-n", "6", "--json", "-t", "2"];
        a.extend(extra);
        let o = selectinfer(&a);
        assert!(o.status.success(), "{}", text(&o).1);
        serde_json::from_str(text(&o).0.trim()).unwrap()
    };
    let as_tuned = run(&tuned, &[]);
    assert_eq!(as_tuned["compute"].as_f64(), Some(0.4), "{as_tuned}");
    assert!(as_tuned["selection"]["computed_neurons"].as_u64().unwrap() < as_tuned["selection"]["loaded_neurons"].as_u64().unwrap(), "{as_tuned}");
    let asked = run(&slice, &["--compute", "0.4"]);
    assert_eq!(as_tuned["text"], asked["text"]);
    assert_eq!(as_tuned["selection"]["computed_neurons"], asked["selection"]["computed_neurons"]);
    assert_eq!(run(&tuned, &["--compute", "0.5"])["compute"].as_f64(), Some(0.5));
    // The untuned slice without --compute decodes densely.
    assert!(run(&slice, &[])["compute"].is_null());
    // A point tuned dynamic only runs without the static set, as --no-static does.
    let dynamic = dir.path().join("dynamic.gguf");
    let extra = [("selectinfer.tune.compute".into(), selectinfer::gguf::Value::F64(0.4)), ("selectinfer.tune.no_static".into(), selectinfer::gguf::Value::Bool(true))];
    selectinfer::gguf::copy_with_metadata(&g, &dynamic, &extra).unwrap();
    let (as_tuned, asked) = (run(&dynamic, &[]), run(&slice, &["--compute", "0.4", "--no-static"]));
    let chosen = |v: &serde_json::Value| (v["text"].clone(), v["selection"]["computed_neurons"].clone(), v["selection"]["swapped_neurons"].clone());
    assert_eq!(chosen(&as_tuned), chosen(&asked), "{as_tuned} / {asked}");
    assert_eq!(as_tuned["compute"].as_f64(), Some(0.4));
    let with_static = run(&slice, &["--compute", "0.4"]);
    assert_ne!(as_tuned["selection"]["swapped_neurons"], with_static["selection"]["swapped_neurons"], "dynamic only chooses other neurons: {as_tuned} / {with_static}");
}
