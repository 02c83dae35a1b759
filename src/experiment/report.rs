//! An experiment's README: its rows as markdown tables, with the plots embedded.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::config::{share_text, Experiment};
use super::run::METHOD_ORDER;
use crate::eval::harness::EvalRow;
use crate::output::{format_bytes, Table};
use crate::tasks::Task;

/// The experiment's name for the model a row ran (rows name a file such as
/// `NAME.F16.qa-load0.7.gguf`).
pub fn model_label<'a>(e: &'a Experiment, row: &EvalRow) -> &'a str {
    e.models.iter().map(|m| m.name.as_str()).filter(|n| row.model.starts_with(&format!("{n}."))).max_by_key(|n| n.len()).unwrap_or("?")
}

/// The model column: its name, marked where the weights are synthetic.
fn model_cell(e: &Experiment, r: &EvalRow) -> String {
    let name = model_label(e, r);
    if r.synthetic {
        format!("{name} (synthetic)")
    } else {
        name.to_string()
    }
}

fn method_rank(m: &str) -> usize {
    METHOD_ORDER.iter().position(|x| x.name() == m).unwrap_or(METHOD_ORDER.len())
}

/// Rows in display order: model, method, load, compute.
pub fn sorted<'a>(e: &Experiment, rows: &'a [EvalRow]) -> Vec<&'a EvalRow> {
    let mut v: Vec<&EvalRow> = rows.iter().collect();
    let model_rank = |r: &EvalRow| e.models.iter().position(|m| m.name == model_label(e, r)).unwrap_or(usize::MAX);
    v.sort_by(|a, b| {
        (model_rank(a), method_rank(&a.method))
            .cmp(&(model_rank(b), method_rank(&b.method)))
            .then(a.load.total_cmp(&b.load))
            .then(a.compute.unwrap_or(2.0).total_cmp(&b.compute.unwrap_or(2.0)))
            .then(a.mem_cap_bytes.cmp(&b.mem_cap_bytes))
    });
    v
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

fn scores(task: &str) -> (&'static [&'static str], fn(&EvalRow) -> Vec<Option<f64>>) {
    match Task::from_name(task) {
        Some(Task::Qa) => (&["EM", "F1"], |r| vec![r.em, r.f1]),
        Some(Task::Translate) => (&["BLEU", "chrF"], |r| vec![r.bleu, r.chrf]),
        _ => (&["ROUGE-1", "ROUGE-2", "ROUGE-L"], |r| vec![r.rouge1, r.rouge2, r.rouge_l]),
    }
}

fn setting(r: &EvalRow) -> [String; 4] {
    let sliced = r.load < 1.0 || r.static_share > 0.0;
    [
        share_text(r.load),
        if sliced { share_text(r.static_share) } else { "-".into() },
        r.compute.map_or("-".into(), share_text),
        r.token_share.map_or("-".into(), share_text),
    ]
}

/// The table of one task's scored, uncapped rows.
pub fn task_table(e: &Experiment, rows: &[&EvalRow], task: &str) -> Option<String> {
    let rows: Vec<&&EvalRow> = rows.iter().filter(|r| r.task == task && r.mem_cap_bytes.is_none() && r.speed_only_tokens.is_none()).collect();
    if rows.is_empty() {
        return None;
    }
    let (names, get) = scores(task);
    let mut header: Vec<String> = ["model", "method", "load γ", "static δ", "compute φ", "α"].map(String::from).to_vec();
    header.extend(names.iter().map(|s| s.to_string()));
    header.extend(["weights", "peak RSS", "decode tok/s", "prefill tok/s", "examples"].map(String::from));
    let mut t = Table::new(header);
    for r in rows {
        let mut cells = vec![model_cell(e, r), r.method.clone()];
        cells.extend(setting(r));
        cells.extend(get(r).into_iter().map(opt));
        cells.extend([format_bytes(r.weight_bytes), format_bytes(r.peak_rss_bytes), format!("{:.1}", r.decode_tps), format!("{:.0}", r.prefill_tps), r.examples.to_string()]);
        t.row(cells);
    }
    Some(t.to_markdown())
}

/// The table of capped or speed-only rows.
pub fn speed_table(e: &Experiment, rows: &[&EvalRow]) -> Option<String> {
    let rows: Vec<&&EvalRow> = rows.iter().filter(|r| r.mem_cap_bytes.is_some() || r.speed_only_tokens.is_some()).collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new(["model", "method", "task", "load γ", "compute φ", "memory cap", "weights", "decode tok/s", "prefill tok/s", "peak RSS", "group max usage", "major faults", "examples"]);
    for r in rows {
        let s = setting(r);
        t.row([
            model_cell(e, r),
            r.method.clone(),
            r.task.clone(),
            s[0].clone(),
            s[2].clone(),
            r.mem_cap_bytes.map_or("none".into(), format_bytes),
            format_bytes(r.weight_bytes),
            format!("{:.2}", r.decode_tps),
            format!("{:.1}", r.prefill_tps),
            format_bytes(r.peak_rss_bytes),
            r.cap_max_usage_bytes.map_or("-".into(), format_bytes),
            r.major_faults.to_string(),
            r.examples.to_string(),
        ]);
    }
    Some(t.to_markdown())
}

/// What the README says beyond the rows.
pub struct ReportContext<'a> {
    /// Experiment name.
    pub name: &'a str,
    /// The YAML file.
    pub yaml: &'a Path,
    /// Cells in the experiment.
    pub total_cells: usize,
    /// Cells with a row.
    pub done_cells: usize,
    /// Cells not run, with why.
    pub skipped: &'a [String],
    /// Plot files (PNG and SVG) in the directory.
    pub plots: &'a [PathBuf],
}

/// Writes `dir/README.md`.
pub fn write_readme(e: &Experiment, rows: &[EvalRow], ctx: &ReportContext, dir: &Path) -> anyhow::Result<()> {
    let rows = sorted(e, rows);
    let mut s = String::new();
    writeln!(s, "# Experiment `{}`\n", ctx.name)?;
    if !e.description.trim().is_empty() {
        writeln!(s, "{}\n", e.description.trim())?;
    }
    writeln!(s, "Made by `selectinfer experiment {}` (re-running it skips finished cells; `--report-only` redraws this page). Cells with a row: {} of {}. Rows: `results.csv` (columns in the top-level README); per-example outputs: `outputs/`.\n", ctx.yaml.display(), ctx.done_cells, ctx.total_cells)?;
    let mut machines: Vec<&str> = rows.iter().map(|r| r.machine.as_str()).collect();
    machines.sort();
    machines.dedup();
    let mut commits: Vec<&str> = rows.iter().map(|r| r.git_commit.as_str()).collect();
    commits.sort();
    commits.dedup();
    writeln!(s, "Machine: {}. Commits: {}. Threads: {}.\n", machines.join("; "), commits.join(", "), e.threads)?;
    if rows.iter().any(|r| r.synthetic) {
        writeln!(s, "**Synthetic weights**: rows marked `synthetic` come from random-weight models with a real model's shapes; they measure speed and memory only.\n")?;
    }
    let mut tasks: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    tasks.dedup();
    tasks.sort();
    tasks.dedup();
    for task in tasks {
        if let Some(t) = task_table(e, &rows, task) {
            writeln!(s, "## {task}\n\n{t}")?;
        }
    }
    if let Some(t) = speed_table(e, &rows) {
        writeln!(s, "## Speed under a memory cap / speed-only runs\n\nA memory cap is a cgroup v1 memory group (page cache included) entered before the model is mapped, after dropping the page cache.\n\n{t}")?;
    }
    let pngs: Vec<&PathBuf> = ctx.plots.iter().filter(|p| p.extension().is_some_and(|x| x == "png")).collect();
    if !pngs.is_empty() {
        writeln!(s, "## Plots\n\nEach is also written as SVG.\n")?;
        for p in pngs {
            let f = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            writeln!(s, "![{f}]({f})\n")?;
        }
    }
    if !ctx.skipped.is_empty() {
        writeln!(s, "## Not run\n")?;
        for k in ctx.skipped {
            writeln!(s, "- {k}")?;
        }
        writeln!(s)?;
    }
    crate::fsutil::write_atomic(&dir.join("README.md"), s.as_bytes())?;
    Ok(())
}
