//! An experiment's README: its rows as markdown tables, with the plots embedded.
//!
//! Task tables show every score with its 95% bootstrap interval, each method's
//! paired difference to the reference, and perplexity of the cell's file; not
//! decode speed, which only a round-robin benchmark can compare (see [`table_notes`]).

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::config::{share_text, Experiment, ModelSpec, Reference};
use super::intervals::Pairs;
use super::perplexity::lookup;
use crate::eval::bootstrap::{Interval, Metric, RESAMPLES, SEED};
use crate::eval::harness::{EvalRow, Method};
use crate::eval::perplexity::PerplexityRow;
use crate::output::{format_bytes, Table};
use crate::tasks::Task;

/// The experiment's name for the model a row ran (rows name a file such as
/// `NAME.F16.qa-load0.7.gguf`, or, for a model whose reference is its source,
/// that source file's own name).
pub fn model_label<'a>(e: &'a Experiment, row: &EvalRow) -> &'a str {
    let reference = |m: &ModelSpec| m.reference == Reference::Source && m.reference_path().file_name().is_some_and(|f| f.to_string_lossy() == row.model);
    if let Some(m) = e.models.iter().find(|m| reference(m)) {
        return &m.name;
    }
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

/// The method column: the method, and its variant where the row has one (e.g.
/// `selectinfer (base=q4_k_m,down=neurons)`), and `prompt-cache` where its prompts
/// reused a cached prefix.
fn method_cell(r: &EvalRow) -> String {
    let parts: Vec<&str> = [r.variant.as_str(), if r.prompt_cache { "prompt-cache" } else { "" }].into_iter().filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        r.method.clone()
    } else {
        format!("{} ({})", r.method, parts.join(","))
    }
}

/// Row indices in display order: model, method, load, compute.
pub fn sorted(e: &Experiment, rows: &[EvalRow]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..rows.len()).collect();
    let model_rank = |r: &EvalRow| e.models.iter().position(|m| m.name == model_label(e, r)).unwrap_or(usize::MAX);
    v.sort_by(|&a, &b| {
        let (a, b) = (&rows[a], &rows[b]);
        (model_rank(a), Method::rank_of(&a.method))
            .cmp(&(model_rank(b), Method::rank_of(&b.method)))
            .then(a.load.total_cmp(&b.load))
            .then(a.compute.unwrap_or(2.0).total_cmp(&b.compute.unwrap_or(2.0)))
            .then(a.mem_cap_bytes.cmp(&b.mem_cap_bytes))
    });
    v
}

/// A score with its interval: `35.3 [30.1, 40.2]` (the point alone where the row
/// has no interval).
fn with_interval(point: Option<f64>, iv: Option<Interval>) -> String {
    match (point, iv) {
        (_, Some(iv)) => format!("{:.1} [{:.1}, {:.1}]", iv.point, iv.lo, iv.hi),
        (Some(v), None) => format!("{v:.2}"),
        (None, None) => "-".into(),
    }
}

/// A paired difference: `-14.9 [-21.0, -8.8] *`, starred when the interval excludes 0.
fn difference(iv: Option<&Interval>) -> String {
    difference_of(iv, 1)
}

/// [`difference`] with `digits` decimals.
fn difference_of(iv: Option<&Interval>, digits: usize) -> String {
    iv.map_or("-".into(), |iv| format!("{:+.digits$} [{:+.digits$}, {:+.digits$}]{}", iv.point, iv.lo, iv.hi, if iv.excludes_zero() { " *" } else { "" }))
}

fn setting(r: &EvalRow) -> [String; 4] {
    let sliced = r.load < 1.0 || r.static_share > 0.0;
    // phi >= gamma computes every loaded neuron: the plan is dense, nothing is compacted.
    let compute = |phi: f64| if sliced && phi >= r.load - 1e-9 { format!("{} (= γ: dense)", share_text(phi)) } else { share_text(phi) };
    [
        share_text(r.load),
        if sliced { share_text(r.static_share) } else { "-".into() },
        r.compute.map_or("-".into(), compute),
        r.token_share.map_or("-".into(), share_text),
    ]
}

/// What the task tables say about their columns: the intervals always, the
/// perplexity and selection-time columns where shown, then why no speed.
pub fn table_notes(perplexity: bool, select_ms: bool) -> String {
    let mut n = format!(
        "Scores are point [95% interval]: a bootstrap over the cell's examples ({RESAMPLES} resamples, seed {SEED}; BLEU and chrF re-scored from the summed sentence statistics of each resample, as sacrebleu's bootstrap). Δ columns are each method's paired difference to the reference on the same examples (the same resamples for both cells, as sacrebleu's paired bootstrap); `*` marks an interval that excludes 0, a difference larger than resampling the examples explains."
    );
    if perplexity {
        n += " PPL columns are the perplexity of the cell's file on wikitext-2 and on the task's evaluation text (each evaluation prompt followed by its reference answer; intervals and paired differences in the Perplexity table below). Perplexity evaluates every token as a prefill token, so it measures loading (the slice or quantization), not selective computation: a computing method shows its file's perplexity computed densely (CoreInfer's is the reference's).";
    }
    if select_ms {
        n += " `select ms`: median per-prompt time to choose the computed neurons and gather their weights (since 2026-12-03 the per-prompt refit runs inside the prefill, so its time is no longer part of it).";
    }
    n += " A φ at or above γ computes every loaded neuron, so nothing is compacted: such a row equals dense-loaded by construction. Decode speeds are not shown beside scores: cells run one after another, minutes to hours apart on a shared machine, so their speeds do not compare; `selectinfer bench` measures settings round-robin in one process, and capped-speed cells are their own measurement.";
    n
}

/// The table of one task's scored, uncapped rows (`order`: indices into `rows`).
pub fn task_table(e: &Experiment, rows: &[EvalRow], order: &[usize], task: &str, ctx: &ReportContext) -> Option<String> {
    let picked: Vec<usize> = order.iter().copied().filter(|&i| rows[i].task == task && rows[i].mem_cap_bytes.is_none() && rows[i].speed_only_tokens.is_none()).collect();
    if picked.is_empty() {
        return None;
    }
    let metrics = Task::from_name(task).map_or(&[][..], Metric::of_task);
    let mut header: Vec<String> = ["model", "method", "load γ", "static δ", "compute φ", "α"].map(String::from).to_vec();
    header.extend(metrics.iter().map(|m| format!("{} [95% CI]", m.label())));
    header.extend(metrics.iter().map(|m| format!("Δ {} vs reference", m.label())));
    // Columns no row fills (an experiment without perplexity, rows from before
    // selection times were recorded) are left out.
    let show_ppl = !ctx.perplexity.is_empty();
    let show_select = picked.iter().any(|&i| rows[i].select_ms.is_some());
    if show_ppl {
        header.extend(["PPL wikitext-2", "PPL task text"].map(String::from));
    }
    header.extend(["weights", "peak RSS"].map(String::from));
    if show_select {
        header.push("select ms".into());
    }
    header.push("examples".into());
    let mut t = Table::new(header);
    for i in picked {
        let r = &rows[i];
        let mut cells = vec![model_cell(e, r), method_cell(r)];
        cells.extend(setting(r));
        cells.extend(metrics.iter().map(|&m| with_interval(r.score(m), r.interval(m))));
        let diffs = ctx.paired.reference.get(&i);
        cells.extend(metrics.iter().map(|m| difference(diffs.and_then(|d| d.iter().find(|(dm, _)| dm == m)).map(|(_, iv)| iv))));
        let ppl = |task: Option<&str>| lookup(ctx.perplexity, &r.model, task, &r.data).map_or("-".into(), |p| format!("{:.2}", p.ppl));
        if show_ppl {
            cells.extend([ppl(None), ppl(Some(task))]);
        }
        cells.extend([format_bytes(r.weight_bytes), format_bytes(r.peak_rss_bytes)]);
        if show_select {
            cells.push(r.select_ms.map_or("-".into(), |v| format!("{v:.1}")));
        }
        cells.push(r.examples.to_string());
        t.row(cells);
    }
    Some(t.to_markdown())
}

/// The primary score's difference to the paper's selection of row `i`, if paired.
fn primary_difference(rows: &[EvalRow], pairs: &Pairs, i: usize) -> Option<(Task, Interval)> {
    let task = Task::from_name(&rows[i].task)?;
    let (_, diffs) = pairs.paper.get(&i)?;
    diffs.iter().find(|(m, _)| *m == Metric::primary(task)).map(|(_, iv)| (task, *iv))
}

/// The "against the paper's selection" section: every selection variant's paired
/// difference to the paper's-selection cell with the same memory (per task and metric),
/// then, per variant setting, the rule for changing a default: the primary
/// score's interval excludes zero upwards on at least two tasks and downwards on
/// none.
pub fn variant_tables(e: &Experiment, rows: &[EvalRow], order: &[usize], pairs: &Pairs) -> Option<String> {
    let picked: Vec<usize> = order.iter().copied().filter(|i| pairs.paper.contains_key(i)).collect();
    if picked.is_empty() {
        return None;
    }
    let mut t = Table::new(["model", "file", "method", "compute φ", "α", "task", "the paper's selection (file)", "Δ vs the paper's [95% CI]"]);
    for &i in &picked {
        let r = &rows[i];
        let (j, diffs) = &pairs.paper[&i];
        let s = setting(r);
        let d = diffs.iter().map(|(m, iv)| format!("{} {}", m.label(), difference(Some(iv)))).collect::<Vec<_>>().join("; ");
        t.row([model_cell(e, r), r.model.clone(), method_cell(r), s[2].clone(), s[3].clone(), r.task.clone(), rows[*j].model.clone(), d]);
    }
    // One verdict per setting: model, file kind (the file name without its task), method, phi, alpha.
    let key = |r: &EvalRow| (model_label(e, r).to_string(), r.model.replacen(&format!(".{}-", r.task), ".TASK-", 1), method_cell(r), setting(r)[2].clone(), setting(r)[3].clone());
    let mut keys = Vec::new();
    for k in picked.iter().map(|&i| key(&rows[i])) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut v = Table::new(["model", "setting (file)", "method", "compute φ", "α", "tasks paired", "better (CI > 0)", "worse (CI < 0)", "meets the rule"]);
    for k in keys {
        let mine: Vec<(Task, Interval)> = picked.iter().filter(|&&i| key(&rows[i]) == k).filter_map(|&i| primary_difference(rows, pairs, i)).collect();
        let name = |f: &dyn Fn(&Interval) -> bool| mine.iter().filter(|(_, iv)| f(iv)).map(|(t, _)| t.name()).collect::<Vec<_>>();
        let (better, worse) = (name(&|iv| iv.lo > 0.0), name(&|iv| iv.hi < 0.0));
        let meets = better.len() >= 2 && worse.is_empty();
        let list = |v: &[&str]| if v.is_empty() { "-".to_string() } else { v.join(", ") };
        v.row([k.0, k.1, k.2, k.3, k.4, mine.len().to_string(), list(&better), list(&worse), if meets { "yes".into() } else { "no".into() }]);
    }
    Some(format!(
        "## Selection variants against the paper's selection\n\nEach variant's paired difference to the paper's selection (its ranking over the default layers, |activation| vote, the experiment's α; the default until the refit with the per-prompt decode refit met the rule below, docs/selection.md) of the same method, task, examples and φ whose file holds the same weight bytes (within 1%): variant minus the paper's selection, on the same examples and resamples. `*`: the interval excludes 0.\n\n{}\nThe rule for changing a default (issue #16), applied here against the paper's selection: the primary score's interval (qa F1, translate BLEU, summarize ROUGE-L) excludes zero upwards on at least two tasks of the model and downwards on none. A setting with fewer than three tasks paired is not finished.\n\n{}",
        t.to_markdown(),
        v.to_markdown()
    ))
}

/// The table of every perplexity row, each with its interval over chunks and its
/// paired difference to the reference file of its model on the same chunks.
pub fn perplexity_table(e: &Experiment, rows: &[PerplexityRow]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let mut sorted: Vec<&PerplexityRow> = rows.iter().collect();
    sorted.sort_by(|a, b| (&a.task, &a.model).cmp(&(&b.task, &b.model)));
    // The KL columns only where some row measured it (older pages redraw unchanged).
    let with_kl = rows.iter().any(|r| r.kl.is_some());
    let mut header = vec!["file", "text", "chunks x ctx", "tokens scored", "perplexity [95% CI]", "Δ vs reference", "weights"];
    if with_kl {
        header.extend(["KL vs reference [95% CI]", "same top token"]);
    }
    let mut t = Table::new(header);
    for r in sorted {
        let text = r.task.as_ref().map_or(r.data.clone(), |task| format!("{task} evaluation text ({})", r.data));
        let ppl = match (r.ppl_lo, r.ppl_hi) {
            (Some(lo), Some(hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.ppl),
            _ => format!("{:.3}", r.ppl),
        };
        let reference = reference_row(e, rows, r).filter(|b| b.model != r.model);
        let delta = difference_of(reference.and_then(|b| r.paired_with(b)).as_ref(), 3);
        let mut cells = vec![r.model.clone(), text, format!("{} x {}", r.chunks, r.ctx), r.tokens.to_string(), ppl, delta, format_bytes(r.weight_bytes)];
        if with_kl {
            cells.push(match (r.kl, r.kl_lo, r.kl_hi) {
                (Some(kl), Some(lo), Some(hi)) => format!("{kl:.4} [{lo:.4}, {hi:.4}]"),
                (Some(kl), _, _) => format!("{kl:.4}"),
                _ => "-".into(),
            });
            cells.push(r.same_top.map_or("-".into(), |s| format!("{:.1}%", 100.0 * s)));
        }
        t.row(cells);
    }
    Some(t.to_markdown())
}

/// The row of the reference file (F16, or the source itself) of `r`'s model (the
/// experiment model whose files' names `r.model` begins with, or whose reference
/// it is) on `r`'s text, chunk length and chunks.
fn reference_row<'a>(e: &Experiment, rows: &'a [PerplexityRow], r: &PerplexityRow) -> Option<&'a PerplexityRow> {
    let reference_name = |m: &super::config::ModelSpec| m.reference_path().file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let m = e.models.iter().filter(|m| r.model.starts_with(&format!("{}.", m.name)) || r.model == reference_name(m)).max_by_key(|m| m.name.len())?;
    let reference = reference_name(m);
    rows.iter().rev().find(|b| b.model == reference && (&b.task, &b.data, b.ctx, b.chunks) == (&r.task, &r.data, r.ctx, r.chunks))
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
            method_cell(r),
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
    /// Perplexity cells with a row, of all.
    pub ppl_cells: (usize, usize),
    /// Cells not run, with why.
    pub skipped: &'a [String],
    /// Plot files (PNG and SVG) in the directory.
    pub plots: &'a [PathBuf],
    /// Perplexity rows.
    pub perplexity: &'a [PerplexityRow],
    /// Paired differences to the reference and to the paper's selection, by row index.
    pub paired: &'a Pairs,
}

/// Writes `dir/README.md`.
pub fn write_readme(e: &Experiment, all: &[EvalRow], ctx: &ReportContext, dir: &Path) -> anyhow::Result<()> {
    let order = sorted(e, all);
    let rows: Vec<&EvalRow> = order.iter().map(|&i| &all[i]).collect();
    let mut s = String::new();
    writeln!(s, "# Experiment `{}`\n", ctx.name)?;
    if !e.description.trim().is_empty() {
        writeln!(s, "{}\n", e.description.trim())?;
    }
    writeln!(s, "Made by `selectinfer experiment {}` (re-running it skips finished cells; `--report-only` redraws this page). Cells with a row: {} of {}. Rows: `results.csv` (columns in the repository's docs/formats.md); per-example outputs: `outputs/`.\n", ctx.yaml.display(), ctx.done_cells, ctx.total_cells)?;
    if ctx.ppl_cells.1 > 0 {
        writeln!(s, "Perplexity cells with a row: {} of {} (`perplexity.csv`).\n", ctx.ppl_cells.0, ctx.ppl_cells.1)?;
    }
    // Perplexity rows are often written later than the task rows (by another build), so both count.
    let machines: BTreeSet<&str> = rows.iter().map(|r| r.machine.as_str()).chain(ctx.perplexity.iter().map(|r| r.machine.as_str())).collect();
    let commits: BTreeSet<&str> = rows.iter().map(|r| r.git_commit.as_str()).chain(ctx.perplexity.iter().map(|r| r.git_commit.as_str())).collect();
    writeln!(s, "Machine: {}. Commits: {}. Threads: {}.\n", joined(&machines, "; "), joined(&commits, ", "), e.threads)?;
    if rows.iter().any(|r| r.prompt_cache) {
        writeln!(s, "**Prompt cache**: prompts reuse the KV cache, and the votes, of the prefix they share with the prompt before (`prompt_cache: true`, `eval --prompt-cache`), in the reference's cells and the methods' alike; equal to prefilling each prompt whole up to rounding.\n")?;
    }
    if rows.iter().any(|r| r.synthetic) {
        writeln!(s, "**Synthetic weights**: rows marked `synthetic` come from random-weight models with a real model's shapes; they measure speed and memory only.\n")?;
    }
    let tasks: BTreeSet<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    let select_ms = rows.iter().any(|r| r.mem_cap_bytes.is_none() && r.speed_only_tokens.is_none() && r.select_ms.is_some());
    let notes = table_notes(!ctx.perplexity.is_empty(), select_ms);
    let mut noted = false;
    for task in tasks {
        if let Some(t) = task_table(e, all, &order, task, ctx) {
            if !noted {
                writeln!(s, "{notes}\n")?;
                noted = true;
            }
            writeln!(s, "## {task}\n\n{t}")?;
        }
    }
    if let Some(t) = variant_tables(e, all, &order, ctx.paired) {
        writeln!(s, "{t}")?;
    }
    if let Some(t) = perplexity_table(e, ctx.perplexity) {
        writeln!(s, "## Perplexity\n\nChunks of the text are evaluated from an empty cache and the second half of each chunk is scored, as llama.cpp's `llama-perplexity` does; only the first chunks are used. Loading only: every token is a prefill token. The interval is a 95% bootstrap over the chunks ({RESAMPLES} resamples, seed {SEED}); Δ is the paired difference to the reference file's perplexity on the same chunks (the same resamples), `*` where its interval excludes 0. Rows written before intervals existed show the point alone.\n\n{t}")?;
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

/// The set's items in order, separated by `sep`.
fn joined(items: &BTreeSet<&str>, sep: &str) -> String {
    items.iter().copied().collect::<Vec<_>>().join(sep)
}
