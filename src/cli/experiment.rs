//! `selectinfer experiment`: run an experiments/*.yaml reproduction, resumably, and
//! write results/NAME/{results.csv, README.md, plots}.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};

use crate::experiment::config::{share_text, Cell, Experiment};
use crate::experiment::perplexity::{ppl_cells, PplCell};
use crate::experiment::plot::{write_plots, PlotPoint};
use crate::experiment::report::{model_label, write_readme, ReportContext};
use crate::experiment::child::{file_name, EvalCall};
use crate::experiment::run::{caps_available, prepare_file, prepare_model, read_rows, run_cell, scored_examples, Runner};

/// Arguments of `experiment`.
#[derive(Debug, clap::Args)]
pub struct ExperimentArgs {
    /// Experiment file: models, tasks, method grids (schema: docs/formats.md).
    pub file: PathBuf,
    /// List the cells (done or to run) and the preparation steps; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only redraw README.md and the plots from results.csv.
    #[arg(long)]
    pub report_only: bool,
    /// Print one tab-separated line per eval cell and run nothing: model file name,
    /// method, task, data file name, examples, phi, alpha, vote, decode bias
    /// (true/false), decode refit ridge, memory cap, speed-only tokens (`-` where
    /// unset), then the cell's per-example outputs file.
    #[arg(long, conflicts_with_all = ["dry_run", "report_only"])]
    pub list_outputs: bool,
    /// Results directory (default: results/NAME, NAME = the file's stem).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// Parses a child's arguments (`selectinfer` is put before them) as the child
/// will: `Err` is why it would refuse them
/// ([`crate::experiment::validate::ChildParser`]).
pub fn child_refusal(args: Vec<String>) -> Result<(), String> {
    use clap::CommandFactory;
    let argv = std::iter::once("selectinfer".to_string()).chain(args);
    let matches = match super::Args::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            let text = e.to_string();
            return Err(text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string());
        }
    };
    for (cmd, m) in super::paths::levels(&matches) {
        if let Some(why) = super::applies::unapplied(&cmd, &m) {
            return Err(why);
        }
    }
    Ok(())
}

pub fn run(a: ExperimentArgs) -> anyhow::Result<()> {
    let e = Experiment::read(&a.file)?;
    let name = a.file.file_stem().map(|s| s.to_string_lossy().into_owned()).context("the experiment file needs a name")?;
    let dir = a.out_dir.clone().unwrap_or_else(|| crate::experiment::default_results_dir(&a.file));
    let cells = e.cells();
    crate::experiment::validate::check(&e, &cells, &child_refusal).with_context(|| format!("{} is not a valid experiment", a.file.display()))?;
    if a.list_outputs {
        return list_outputs(&e, &cells, &dir.join("outputs"));
    }
    let pcells = ppl_cells(&e, &cells);
    let mut split_sizes = HashMap::new();
    let runner = Runner::new(a.dry_run)?;
    let work = Work::find(&e, &cells, &pcells, &dir, &mut split_sizes)?;
    eprintln!("experiment {name}: {} cells, {} done, {} to run, {} skipped", cells.len(), work.done, work.todo.len(), work.skipped.len());
    if !pcells.is_empty() {
        eprintln!("experiment {name}: {} perplexity cells, {} to run", pcells.len(), work.ppl_todo.len());
    }
    if a.dry_run {
        work.list(&e, &cells, &pcells);
    }
    for s in &work.skipped {
        eprintln!("experiment: skipping {s}");
    }
    let nothing_to_run = work.todo.is_empty() && work.ppl_todo.is_empty();
    let failures = if a.report_only || nothing_to_run { Vec::new() } else { run_work(&a, &e, &runner, &name, &dir, &cells, &work)? };
    if a.dry_run {
        return Ok(());
    }
    let mut skipped = work.skipped;
    skipped.extend(failures.iter().map(|f| format!("failed: {f}")));
    report(&a, &e, &name, &dir, (&cells, &pcells), &skipped, &mut split_sizes)?;
    if !failures.is_empty() {
        bail!("{} cell(s) failed:\n{}", failures.len(), failures.join("\n"));
    }
    Ok(())
}

/// `--list-outputs`: one tab-separated line per eval cell, the fields a script picks
/// a cell by, then its outputs file (the name [`EvalCall::outputs_name`] makes).
fn list_outputs(e: &Experiment, cells: &[Cell], outputs: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for cell in cells {
        let m = &e.models[cell.model];
        // The name does not depend on the scored count, so the cell's own stands in.
        let call = EvalCall::new(cell, m.file(&cell.prep), cell.examples).with_reference(m.reference);
        let fields = [
            file_name(&call.model),
            cell.method.name().to_string(),
            cell.task.name().to_string(),
            file_name(&cell.data),
            cell.examples.to_string(),
            or_dash(cell.compute.map(|c| share_text(c.0))),
            or_dash(cell.compute.map(|c| share_text(c.1))),
            cell.vote.name().to_string(),
            cell.decode_bias.to_string(),
            or_dash(cell.decode_refit.map(|r| r.to_string())),
            or_dash(cell.mem_cap.map(|c| c.to_string())),
            or_dash(cell.speed_only.map(|n| n.to_string())),
            outputs.join(call.outputs_name()).display().to_string(),
        ];
        writeln!(stdout, "{}", fields.join("\t"))?;
    }
    Ok(())
}

/// Evaluation split sizes by (data file, task), read once.
type SplitSizes = HashMap<(PathBuf, crate::tasks::Task), usize>;

/// The cells of a run still to do, those skipped (with why) and the count done.
struct Work<'c> {
    todo: Vec<(usize, &'c Cell, usize)>,
    ppl_todo: Vec<&'c PplCell>,
    skipped: Vec<String>,
    done: usize,
}

impl<'c> Work<'c> {
    /// What `dir`'s result files still lack of `cells` and `pcells`.
    fn find(e: &Experiment, cells: &'c [Cell], pcells: &'c [PplCell], dir: &Path, split_sizes: &mut SplitSizes) -> anyhow::Result<Work<'c>> {
        let rows = read_rows(&dir.join("results.csv"))?;
        let ppl_rows = read_rows(&dir.join("perplexity.csv"))?;
        let ppl_todo = pcells.iter().filter(|c| !ppl_rows.iter().any(|r| c.matches(r, &e.models[c.model]))).collect();
        let caps = caps_available();
        let mut w = Work { todo: Vec::new(), ppl_todo, skipped: Vec::new(), done: 0 };
        for (i, cell) in cells.iter().enumerate() {
            let m = &e.models[cell.model];
            let n = scored_examples(cell, split_sizes)?;
            if has_row(&rows, cell, m, n) {
                w.done += 1;
            } else if let (Some(_), Err(why)) = (cell.mem_cap, &caps) {
                w.skipped.push(format!("{}: memory caps unavailable here ({why})", cell.label(&m.name)));
            } else {
                w.todo.push((i, cell, n));
            }
        }
        Ok(w)
    }

    /// `--dry-run`: one line per cell with its state.
    fn list(&self, e: &Experiment, cells: &[Cell], pcells: &[PplCell]) {
        for (i, cell) in cells.iter().enumerate() {
            let m = &e.models[cell.model];
            let state = if self.todo.iter().any(|t| t.0 == i) { "to run" } else if self.skipped.iter().any(|s| s.starts_with(&cell.label(&m.name))) { "skipped" } else { "done" };
            println!("{:>4} {state:<7} {}  [{}]", i + 1, cell.label(&m.name), m.file(&cell.prep).display());
        }
        for (i, c) in pcells.iter().enumerate() {
            let state = if self.ppl_todo.contains(&c) { "to run" } else { "done" };
            println!("{:>4} {state:<7} {}", cells.len() + i + 1, c.label(&e.models[c.model]));
        }
    }
}

/// Prepares each model's files and runs its cells still to do, each a child
/// process; returns the failures (label: error).
fn run_work(a: &ExperimentArgs, e: &Experiment, runner: &Runner, name: &str, dir: &Path, cells: &[Cell], work: &Work) -> anyhow::Result<Vec<String>> {
    let (csv, ppl_csv) = (dir.join("results.csv"), dir.join("perplexity.csv"));
    if !a.dry_run {
        std::fs::create_dir_all(dir.join("outputs")).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut failures = Vec::new();
    // Prepare per model, then run that model's cells. One overall bar (cells,
    // ETA) and one bar per cell, fed by the child's progress lines.
    let multi = indicatif::MultiProgress::new();
    let say = |line: String| if multi.is_hidden() { eprintln!("{line}") } else { multi.suspend(|| eprintln!("{line}")) };
    let overall = multi.add(crate::output::progress_bar(true, (work.todo.len() + work.ppl_todo.len()) as u64, &format!("experiment {name}")));
    // One child: its bar (fed by its progress lines), then done or FAILED.
    let mut run_child = |label: String, len: u64, args: Vec<String>| {
        let bar = multi.add(crate::output::progress_bar(true, len, "  cell"));
        bar.set_message(label.clone());
        let t0 = Instant::now();
        match run_cell(runner, &args, &bar) {
            Ok(()) => say(format!("done {label} ({:.0} s)", t0.elapsed().as_secs_f64())),
            Err(err) => {
                say(format!("FAILED {label}: {err:#}"));
                failures.push(format!("{label}: {err:#}"));
            }
        }
        bar.finish_and_clear();
        multi.remove(&bar);
        overall.inc(1);
    };
    for (mi, m) in e.models.iter().enumerate() {
        let mine: Vec<&(usize, &Cell, usize)> = work.todo.iter().filter(|t| t.1.model == mi).collect();
        let my_ppl: Vec<&&PplCell> = work.ppl_todo.iter().filter(|c| c.model == mi).collect();
        if mine.is_empty() && my_ppl.is_empty() {
            continue;
        }
        // Profiles are needed only for the slices of cells still to run.
        let needs: Vec<Cell> = my_ppl.iter().filter_map(|p| cells.iter().find(|c| c.model == mi && c.prep == p.prep).cloned()).collect();
        let refs: Vec<&Cell> = mine.iter().map(|t| t.1).chain(&needs).collect();
        let pm = multi.suspend(|| prepare_model(runner, m, e, &refs))?;
        for &&(_, cell, n) in &mine {
            let file = multi.suspend(|| prepare_file(runner, m, &pm, &cell.prep))?;
            if !a.dry_run {
                let call = EvalCall::new(cell, file, n).with_reference(m.reference);
                let out = dir.join("outputs").join(call.outputs_name());
                run_child(cell.label(&m.name), cell.examples as u64, call.args(&csv, Some(&out), e.threads));
            }
        }
        // Perplexity after the model's task cells, so a partial run has the tables.
        for c in my_ppl {
            let file = multi.suspend(|| prepare_file(runner, m, &pm, &c.prep))?;
            if !a.dry_run {
                run_child(c.label(m), c.chunks as u64, c.args(&file, &m.reference_path(), &ppl_csv, e.threads));
            }
        }
    }
    overall.finish_and_clear();
    Ok(failures)
}

/// Reads the result files back and writes the intervals, plots and README.md.
fn report(a: &ExperimentArgs, e: &Experiment, name: &str, dir: &Path, (cells, pcells): (&[Cell], &[PplCell]), skipped: &[String], split_sizes: &mut SplitSizes) -> anyhow::Result<()> {
    let mut rows = read_rows(&dir.join("results.csv"))?;
    let ppl_rows: Vec<crate::eval::perplexity::PerplexityRow> = read_rows(&dir.join("perplexity.csv"))?;
    let paired = crate::experiment::intervals::compute(e, cells, &mut rows, &dir.join("outputs"))?;
    let ppl_done = pcells.iter().filter(|c| ppl_rows.iter().any(|r| c.matches(r, &e.models[c.model]))).count();
    let done = cells
        .iter()
        .filter(|c| scored_examples(c, split_sizes).is_ok_and(|n| has_row(&rows, c, &e.models[c.model], n)))
        .count();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let points: Vec<PlotPoint> = rows.iter().map(|r| PlotPoint { model: model_label(e, r), row: r }).collect();
    let plots = if rows.is_empty() { Vec::new() } else { write_plots(&points, &e.defaults, dir)? };
    let ctx = ReportContext {
        name,
        yaml: &a.file,
        total_cells: cells.len(),
        done_cells: done,
        ppl_cells: (ppl_done, pcells.len()),
        skipped,
        plots: &plots,
        perplexity: &ppl_rows,
        paired: &paired,
    };
    write_readme(e, &rows, &ctx, dir)?;
    eprintln!("experiment {name}: {done} of {} cells have rows; wrote {}", cells.len(), dir.join("README.md").display());
    Ok(())
}

/// Whether `rows` holds the result of `cell` (of model `m`, scoring `examples`).
fn has_row(rows: &[crate::eval::harness::EvalRow], cell: &Cell, m: &crate::experiment::config::ModelSpec, examples: usize) -> bool {
    let call = EvalCall::new(cell, m.file(&cell.prep), examples).with_reference(m.reference);
    rows.iter().any(|r| call.matches(r))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::Parser;

    use crate::cli::{Args, Command};
    use crate::compute::session_plan::CELL_DECODE_REFIT;
    use crate::compute::DecodeRefit;
    use crate::experiment::child::tests::{calls, cells};

    /// Every cell's arguments, parsed by the `selectinfer eval` clap definition,
    /// ask for what the call says.
    #[test]
    fn args_parse_back_through_the_eval_command() {
        let cells = cells();
        let calls = calls(&cells);
        assert!(cells.iter().any(|c| c.no_static) && cells.iter().any(|c| c.compute_layers.is_some()) && cells.iter().any(|c| c.mem_cap.is_some()));
        let (csv, outputs) = (Path::new("results/x/results.csv"), Path::new("results/x/outputs/o.jsonl"));
        for call in &calls {
            let mut argv = vec!["selectinfer".to_string()];
            argv.extend(call.args(csv, Some(outputs), 3));
            let parsed = Args::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let Command::Eval(a) = parsed.command else { panic!("{argv:?} is not an eval command") };
            assert_eq!((a.out.as_path(), a.outputs.as_deref()), (csv, Some(outputs)));
            let (req, cell) = (a.request().unwrap(), call.cell);
            assert_eq!((&req.model, req.method, req.task, &req.data), (&call.model, cell.method, cell.task, &cell.data), "{argv:?}");
            assert_eq!((req.limit, req.shots, req.threads, req.chat), (Some(cell.examples), cell.shots, 3, false), "{argv:?}");
            assert_eq!((req.mem_cap, req.speed_only), (cell.mem_cap, cell.speed_only), "{argv:?}");
            let c = &req.compute;
            let compute = c.compute_options().map(|o| ((o.compute, o.token_share), o.no_static, o.layers));
            let want = cell.compute.map(|c| (c, cell.no_static, cell.compute_layers.clone()));
            assert_eq!(compute, want, "{argv:?}");
            // A computing cell without the key gets the cells' default, not eval's.
            let refit = match (cell.decode_refit, cell.compute.is_some() && !cell.decode_bias) {
                (Some(r), _) => Some(DecodeRefit::Ridge(r)),
                (None, true) => Some(CELL_DECODE_REFIT),
                (None, false) => None,
            };
            assert_eq!((c.decode_bias, c.decode_refit), (cell.decode_bias, refit), "{argv:?}");
            if cell.compute.is_some() {
                assert_eq!(c.vote, cell.vote, "{argv:?}");
            }
        }
    }
}
