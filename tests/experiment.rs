//! `selectinfer experiment`: preparation, one row per cell, resume, report and
//! plots, and YAML errors, on a tiny random-weight model.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use selectinfer::synth::SynthArch;

fn experiment(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_selectinfer")).arg("experiment").args(args).current_dir(dir).output().expect("run selectinfer")
}

fn yaml(model: &Path, data: &Path) -> String {
    format!(
        "description: tiny test
threads: 2
models:
  - name: tiny
    source: {}
    profile: profiles/tiny
    profile_prompts: 2
    profile_gen_tokens: 2
tasks:
  - {{task: qa, examples: 3, data: {}}}
methods:
  - method: reference
  - method: selectinfer
  - {{method: random-loading, load: [0.5, 0.7]}}
perplexity: {{chunks: 2, ctx: 16}}
",
        model.display(),
        data.display()
    )
}

/// A folder with the tiny qa data and `experiments/exp.yaml`: the tiny experiment
/// on the tiny model, its text passed through `edit`.
fn tiny_experiment(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::write_tiny_qa(d);
    let model = common::tiny_model(SynthArch::Llama);
    std::fs::create_dir_all(d.join("experiments")).unwrap();
    std::fs::write(d.join("experiments/exp.yaml"), edit(yaml(&model, &data))).unwrap();
    dir
}

#[test]
fn runs_every_cell_once_resumes_and_reports() {
    let dir = tiny_experiment(|text| text);
    let d = dir.path();

    let dry = experiment(d, &["experiments/exp.yaml", "--dry-run"]);
    let (out, err) = common::text(&dry);
    assert!(dry.status.success(), "{err}");
    assert_eq!(out.lines().filter(|l| l.contains("to run") && !l.contains("perplexity")).count(), 4, "{out}");
    // Wikitext-2 and the qa evaluation text for each of the 4 files.
    assert_eq!(out.lines().filter(|l| l.contains("to run") && l.contains("perplexity")).count(), 8, "{out}");
    assert!(!d.join("models").exists() && !d.join("results").exists(), "a dry run writes nothing");

    let first = experiment(d, &["experiments/exp.yaml"]);
    let (_, err) = common::text(&first);
    assert!(first.status.success(), "{err}");
    let res = d.join("results/exp");
    let csv_text = std::fs::read_to_string(res.join("results.csv")).unwrap();
    let rows: Vec<selectinfer::eval::harness::EvalRow> = csv::Reader::from_reader(csv_text.as_bytes()).deserialize().map(Result::unwrap).collect();
    let methods: Vec<(&str, f64)> = rows.iter().map(|r| (r.method.as_str(), r.load)).collect();
    assert_eq!(methods, [("reference", 1.0), ("selectinfer", 0.7), ("random-loading", 0.5), ("random-loading", 0.7)]);
    assert!(rows.iter().all(|r| r.examples == 3 && r.synthetic && r.task == "qa"));
    assert_eq!(rows[1].compute, Some(0.4), "the defaults apply where an entry gives no value");
    for r in &rows {
        let iv = r.interval(selectinfer::eval::bootstrap::Metric::F1).expect("an F1 interval");
        assert!(iv.lo <= iv.point && iv.point <= iv.hi, "{iv:?}");
    }
    let ppl: Vec<selectinfer::eval::perplexity::PerplexityRow> = csv::Reader::from_path(res.join("perplexity.csv")).unwrap().deserialize().map(Result::unwrap).collect();
    assert_eq!(ppl.len(), 8);
    assert_eq!(ppl.iter().filter(|p| p.task.as_deref() == Some("qa")).count(), 4);
    assert!(ppl.iter().all(|p| p.ppl.is_finite() && p.ppl > 1.0 && p.chunks == 2 && p.ppl_lo.unwrap() <= p.ppl && p.ppl <= p.ppl_hi.unwrap()));
    // Prepared files, with their recipes, and the profile made for the slice.
    for f in ["tiny.F16.gguf", "tiny.F16.gguf.recipe", "tiny.F16.qa-load0.7.gguf", "tiny.random-load0.5.gguf"] {
        assert!(d.join("models").join(f).exists(), "models/{f}");
    }
    assert!(d.join("profiles/tiny/task-qa.json").exists() && d.join("profiles/tiny/model.json").exists());
    let readme = std::fs::read_to_string(res.join("README.md")).unwrap();
    assert!(readme.contains("Cells with a row: 4 of 4") && readme.contains("## qa") && readme.contains("Synthetic weights"), "{readme}");
    assert!(readme.contains("Perplexity cells with a row: 8 of 8") && readme.contains("## Perplexity"), "{readme}");
    assert!(readme.contains("F1 [95% CI]") && readme.contains("Δ F1 vs reference") && readme.contains("PPL task text"), "{readme}");
    assert!(!readme.contains("decode tok/s |"), "no speed beside scores: {readme}");
    // The perplexity table pairs each file with the reference on the same chunks: the
    // slice's Δ is its perplexity minus the reference's; the reference has none.
    let ppl_of = |file: &str, task: Option<&str>| ppl.iter().find(|p| p.model == file && p.task.as_deref() == task).unwrap().ppl;
    let ppl_line = |file: &str| readme.lines().find(|l| l.starts_with(&format!("| {file} ")) && l.contains("wikitext")).unwrap_or_else(|| panic!("{file} in {readme}"));
    let delta = ppl_of("tiny.F16.qa-load0.7.gguf", None) - ppl_of("tiny.F16.gguf", None);
    assert!(ppl_line("tiny.F16.qa-load0.7.gguf").contains(&format!("| {delta:+.3} [")), "{delta} in {readme}");
    assert!(!ppl_line("tiny.F16.gguf").contains("[+") && !ppl_line("tiny.F16.gguf").contains("[-"), "{readme}");
    // Paired differences (from the outputs of both cells) for every method but the reference.
    let row_of = |m: &str| readme.lines().find(|l| l.contains(&format!("| {m} "))).unwrap_or_else(|| panic!("{m} row in {readme}"));
    let deltas = |l: &str| l.matches("[+").count() + l.matches("[-").count();
    assert_eq!(deltas(row_of("reference")), 0, "{readme}");
    assert_eq!(deltas(row_of("selectinfer")), 2, "{readme}");
    for f in ["tasks.png", "tasks.svg", "accuracy-vs-memory-qa.png", "accuracy-vs-memory-qa.svg"] {
        assert!(res.join(f).exists(), "{f}");
        assert!(readme.contains(f) || f.ends_with(".svg"), "README embeds {f}");
    }
    assert_eq!(std::fs::read_dir(res.join("outputs")).unwrap().count(), 4, "per-example outputs of each cell");

    // A re-run finds every cell done and changes nothing.
    let again = experiment(d, &["experiments/exp.yaml"]);
    let (_, err) = common::text(&again);
    assert!(again.status.success() && err.contains("4 done, 0 to run") && err.contains("8 perplexity cells, 0 to run"), "{err}");
    assert_eq!(std::fs::read_to_string(res.join("results.csv")).unwrap(), csv_text);

    // A lost row (a crash before the child appended it) is run again, alone.
    let mut lines: Vec<&str> = csv_text.lines().collect();
    lines.pop();
    std::fs::write(res.join("results.csv"), lines.join("\n") + "\n").unwrap();
    let resumed = experiment(d, &["experiments/exp.yaml"]);
    let (_, err) = common::text(&resumed);
    assert!(resumed.status.success() && err.contains("3 done, 1 to run"), "{err}");
    let after = std::fs::read_to_string(res.join("results.csv")).unwrap();
    assert_eq!(after.lines().count(), 5);
    assert!(after.lines().last().unwrap().contains("random-loading"));

    // Perplexity rows written by another build are named among the page's commits.
    let ppl_text = std::fs::read_to_string(res.join("perplexity.csv")).unwrap();
    let commit = &ppl[0].git_commit;
    std::fs::write(res.join("perplexity.csv"), ppl_text.replace(&format!(",{commit},"), ",ppl0build,")).unwrap();
    let redrawn = experiment(d, &["experiments/exp.yaml", "--report-only"]);
    assert!(redrawn.status.success(), "{}", common::text(&redrawn).1);
    let readme = std::fs::read_to_string(res.join("README.md")).unwrap();
    let commits = readme.lines().find(|l| l.starts_with("Machine: ")).unwrap();
    assert!(commits.contains("ppl0build") && commits.contains(rows[0].git_commit.as_str()), "{commits}");
}

/// A profile slice of a quantized base, neuron-major: the runner quantizes the F16
/// file, slices the quantization with the F16 profile, and the eval row records
/// the base and layout exactly as the cell's key does (so a re-run finds it done).
/// Runs the tiny experiment with `methods` in place of its method entries and no
/// perplexity; returns the folder and the rows.
fn run_methods(methods: &str) -> (tempfile::TempDir, Vec<selectinfer::eval::harness::EvalRow>) {
    let dir = tiny_experiment(|text| {
        text.replace("  - method: reference\n  - method: selectinfer\n  - {method: random-loading, load: [0.5, 0.7]}\n", methods)
            .replace("perplexity: {chunks: 2, ctx: 16}\n", "")
    });
    let d = dir.path();
    let first = experiment(d, &["experiments/exp.yaml"]);
    let (_, err) = common::text(&first);
    assert!(first.status.success(), "{err}");
    let rows = csv::Reader::from_path(d.join("results/exp/results.csv")).unwrap().deserialize().map(Result::unwrap).collect();
    (dir, rows)
}

#[test]
fn slices_a_quantized_base_neuron_major_and_resumes() {
    let (dir, rows) = run_methods("  - {method: selectinfer, base: q8_0, down_layout: neurons}\n");
    let d = dir.path();
    for f in ["tiny.q8_0.gguf", "tiny.q8_0.qa-load0.7.neurons.gguf"] {
        assert!(d.join("models").join(f).exists(), "models/{f}");
    }
    let res = d.join("results/exp");
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].method.as_str(), rows[0].variant.as_str(), rows[0].compute), ("selectinfer", "base=q8_0,down=neurons", Some(0.4)));
    let again = experiment(d, &["experiments/exp.yaml"]);
    let (_, err) = common::text(&again);
    assert!(again.status.success() && err.contains("1 done, 0 to run"), "{err}");
    let readme = std::fs::read_to_string(res.join("README.md")).unwrap();
    assert!(readme.contains("| selectinfer (base=q8_0,down=neurons) "), "{readme}");
}

/// Selection variants are paired with the paper's selection of the same memory, and
/// the README states the rule for changing a default per variant setting.
#[test]
fn variants_are_paired_with_the_papers_selection_of_the_same_bytes() {
    let (dir, rows) = run_methods("  - method: selectinfer\n  - {method: selectinfer, vote: signed}\n  - {method: selectinfer, compensate: mean}\n  - {method: selectinfer, secondary: task}\n");
    let res = dir.path().join("results/exp");
    assert_eq!(rows.iter().map(|r| r.variant.as_str()).collect::<Vec<_>>(), ["", "vote=signed", "compensation=mean", "secondary=task"]);
    let readme = std::fs::read_to_string(res.join("README.md")).unwrap();
    let section = readme.split("## Selection variants against the paper's selection").nth(1).unwrap_or_else(|| panic!("{readme}"));
    // One paired row per variant, against the paper's selection's file, whose point is the
    // difference of the two rows' scores.
    let cells = |l: &str| l.split('|').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect::<Vec<_>>();
    let table: Vec<Vec<String>> = section.lines().filter(|l| l.starts_with('|')).map(cells).collect();
    for r in &rows[1..] {
        let line = table.iter().find(|c| c[2] == format!("selectinfer ({})", r.variant) && c[5] == "qa").unwrap_or_else(|| panic!("{section}"));
        assert_eq!(line[6], "tiny.F16.qa-load0.7.gguf", "{line:?}");
        let f1 = r.f1.unwrap() - rows[0].f1.unwrap();
        assert!(line[7].contains(&format!("F1 {f1:+.1} [")), "{line:?}: expected {f1:+.1}");
    }
    assert!(!table.iter().any(|c| c[2] == "selectinfer"), "the paper's selection is not its own variant: {section}");
    // The rule table: one task paired, so the rule is not met.
    let rule: Vec<&Vec<String>> = table.iter().filter(|c| c[1].starts_with("tiny.F16.TASK-load0.7")).collect();
    assert_eq!(rule.len(), 3, "{section}");
    assert!(rule.iter().all(|c| c[5] == "1" && c[8] == "no"), "{rule:?}");
}

/// coreinfer-loading with `slice: profile` computes dynamic neurons only on the
/// very file selectinfer's cell uses (made once), and is paired with it.
#[test]
fn dynamic_only_on_the_profile_slice_shares_its_file_and_pairs_with_the_papers_selection() {
    let (dir, rows) = run_methods("  - method: selectinfer\n  - {method: coreinfer-loading, slice: profile}\n");
    let d = dir.path();
    assert_eq!(rows.len(), 2);
    let (paper, dynamic) = (&rows[0], &rows[1]);
    assert_eq!((paper.method.as_str(), dynamic.method.as_str()), ("selectinfer", "coreinfer-loading"));
    assert_eq!((dynamic.model.as_str(), dynamic.static_share, dynamic.compute), ("tiny.F16.qa-load0.7.gguf", 0.0, Some(0.4)));
    assert_eq!((paper.model.as_str(), paper.static_share), ("tiny.F16.qa-load0.7.gguf", 0.3));
    assert!(!d.join("models/tiny.F16.random-load0.7.gguf").exists(), "no random slice is made");
    let readme = std::fs::read_to_string(d.join("results/exp/README.md")).unwrap();
    let section = readme.split("## Selection variants against the paper's selection").nth(1).unwrap_or_else(|| panic!("{readme}"));
    let line = section.lines().find(|l| l.contains("| coreinfer-loading") && l.contains("| qa")).unwrap_or_else(|| panic!("{section}"));
    let f1 = dynamic.f1.unwrap() - paper.f1.unwrap();
    assert!(line.contains("tiny.F16.qa-load0.7.gguf") && line.contains(&format!("F1 {f1:+.1} [")), "{line}: expected {f1:+.1}");
}

#[test]
fn bad_yaml_names_field_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::write_tiny_qa(d);
    let model = common::tiny_model(SynthArch::Llama);
    let bad = yaml(&model, &data).replace("load: [0.5, 0.7]", "load: [0.5, 1.7]");
    std::fs::write(d.join("bad.yaml"), bad).unwrap();
    let out = experiment(d, &["bad.yaml"]);
    let (_, err) = common::text(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("methods[2].load") && err.contains("line 14") && err.contains("1.7"), "{err}");
    assert!(!err.contains("panicked"));
    assert!(!d.join("results").exists() && !d.join("models").exists());
    common::assert_clean_failure(&["experiment", "/nonexistent/exp.yaml"], "reading /nonexistent/exp.yaml");
}

#[test]
fn disk_offload_needs_a_cap_below_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::write_tiny_qa(dir.path());
    let csv = dir.path().join("r.csv");
    let m = common::tiny_model(SynthArch::Llama);
    let base = ["eval", "-m", m.to_str().unwrap(), "--task", "qa", "--data", data.to_str().unwrap(), "--out", csv.to_str().unwrap(), "--method", "disk-offload"];
    common::assert_clean_failure(&base, "method disk-offload needs --mem-cap");
    common::assert_clean_failure(&[&base[..], &["--mem-cap", "1GiB"]].concat(), "needs --mem-cap below the model's");
    common::assert_clean_failure(&[&base[..], &["--mem-cap", "lots"]].concat(), "invalid value 'lots'");
    assert!(!csv.exists());
}

/// A dry run refuses every cell its child command would refuse: the decode bias
/// or refit without a bias to shift or on a neuron-major slice, a budget floor
/// outside [static, load] or without a per-layer budget, and a child option
/// value the child's own parser refuses. Nothing is written.
#[test]
fn dry_run_refuses_what_the_children_would() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        ("{method: selectinfer, compute: 0.5, decode_bias: true}", "", "compensate: none writes none"),
        ("{method: selectinfer, compute: 0.5, compensate: none, decode_refit: 1.0}", "", "compensate: none writes none"),
        ("{method: selectinfer, compute: 0.5, compensate: refit, down_layout: neurons, decode_refit: 1.0}", "", "down_layout: neurons"),
        ("{method: selectinfer, compute: 0.5, compensate: mean, down_layout: neurons, decode_bias: true}", "", "down_layout: neurons"),
        ("{method: selectinfer, load: 0.5, budget: output, budget_floor: 0.9}", "", "budget_floor 0.9 is outside"),
        ("{method: selectinfer, budget_floor: 0.5}", "", "budget_floor (only with budget"),
        ("{method: reference}", "perplexity: {chunks: 1, ctx: 99999999999}\n", "is not a context length"),
        ("{method: reference}", "perplexity: {chunks: 0}\n", "perplexity.chunks must be at least 1"),
    ];
    let mut failures = Vec::new();
    for (i, (method, extra, needle)) in cases.iter().enumerate() {
        let file = d.join(format!("e{i}.yaml"));
        let text = format!(
            "threads: 2\nmodels:\n  - {{name: m, synth: llama-3.2-1b, profile: {}}}\ntasks:\n  - {{task: qa, examples: 2}}\nmethods:\n  - {method}\n{extra}",
            d.join("prof").display()
        );
        std::fs::write(&file, text).unwrap();
        let out = experiment(d, &[file.to_str().unwrap(), "--dry-run", "--out-dir", d.join("out").to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains(needle) || d.join("out").exists() {
            failures.push(format!("{method} {extra}: exit {:?}: {}", out.status.code(), stderr.trim()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A Q4_K_M base keeps ffn_down columns in whole blocks of 256: on a model whose
/// layers all round up to every neuron, the slice drops none and has no bias for
/// decode_refit, which the dry run refuses (a wider model at the same load passes).
#[test]
fn dry_run_refuses_a_decode_refit_on_a_quantized_base_that_keeps_every_neuron() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiny = common::tiny_model(SynthArch::Llama);
    let method = "{method: selectinfer, compute: 0.5, compensate: refit, base: q4_k_m, decode_refit: 1.0}";
    let run = |model: &str| {
        let file = d.join("e.yaml");
        let text = format!("threads: 2\nmodels:\n  - {{name: m, {model}, profile: {}}}\ntasks:\n  - {{task: qa, examples: 2}}\nmethods:\n  - {method}\n", d.join("prof").display());
        std::fs::write(&file, text).unwrap();
        experiment(d, &[file.to_str().unwrap(), "--dry-run", "--out-dir", d.join("out").to_str().unwrap()])
    };
    // 192 neurons per layer: 0.7 x 192 rounds to the whole layer in blocks of 256.
    let out = run(&format!("source: {}", tiny.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("keeps all its neurons") && !d.join("out").exists(), "{stderr}");
    // 8192 neurons per layer: 5,632 kept, a bias to shift.
    let out = run("synth: llama-3.2-1b");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn list_outputs_prints_each_cells_outputs_name_and_runs_nothing() {
    let methods = "  - {method: selectinfer, compensate: refit, decode_refit: 1.0}\n  - {method: selectinfer, compensate: refit, decode_bias: true}\n  - {method: selectinfer, vote: signed}\n";
    let dir = tiny_experiment(|text| text.replace("  - {method: random-loading, load: [0.5, 0.7]}\n", methods));
    let d = dir.path();
    let file = d.join("experiments/exp.yaml");
    let out = experiment(d, &[file.to_str().unwrap(), "--list-outputs", "--out-dir", "res"]);
    let (text, err) = common::text(&out);
    assert!(out.status.success(), "{err}");
    let e = selectinfer::experiment::config::Experiment::read(&file).unwrap();
    let cells = e.cells();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), cells.len(), "{text}");
    for (cell, fields) in cells.iter().zip(&lines) {
        let call = selectinfer::experiment::child::EvalCall::new(cell, e.models[cell.model].file(&cell.prep), cell.examples);
        assert_eq!(fields.len(), 13, "{fields:?}");
        assert_eq!(fields[12], Path::new("res/outputs").join(call.outputs_name()).to_str().unwrap());
        assert_eq!((fields[1], fields[2], fields[4]), (cell.method.name(), "qa", "3"));
    }
    let f = |method: &str, decode: &str| lines.iter().filter(|l| l[1] == method && l[8..10].join(",") == decode).count();
    assert_eq!((f("reference", "false,-"), f("selectinfer", "false,1"), f("selectinfer", "true,-")), (1, 1, 1), "{text}");
    assert!(lines.iter().any(|l| l[7] == "signed" && l[12].contains(".vote-signed.")), "{text}");
    assert!(lines.iter().all(|l| l[1] == "reference" || (l[5], l[6]) == ("0.4", "0.2")), "{text}");
    assert!(!d.join("res").exists() && !d.join("models").exists(), "lists only");
}
