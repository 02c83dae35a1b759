//! `selectinfer pair A B --task T`: the paired difference of two runs' answers on
//! the same evaluation examples (two `eval --outputs` files, or two cells of an
//! experiment's `outputs/`), with paired-bootstrap intervals
//! ([`crate::eval::bootstrap`]): how two variants compare directly, where an
//! experiment report pairs each with the reference and the paper's selection.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};

use crate::eval::bootstrap::{paired_intervals, task_intervals};
use crate::experiment::intervals::read_outputs;
use crate::output::Table;
use crate::tasks::{read_examples, Split, Task};

/// Arguments of `pair`.
#[derive(Debug, clap::Args)]
pub struct PairArgs {
    /// Outputs of run A (JSON Lines with "id" and "output", as `eval --outputs` writes).
    pub a: PathBuf,
    /// Outputs of run B: the same example ids in the same order.
    pub b: PathBuf,
    /// Task the outputs answer (its metrics score them).
    #[arg(long, value_enum)]
    pub task: Task,
    /// JSON Lines dataset whose evaluation split the outputs answer (default: the
    /// task's bundled file).
    #[arg(long)]
    pub data: Option<PathBuf>,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
}

/// One metric of the comparison.
#[derive(Debug, serde::Serialize)]
struct PairRow {
    metric: &'static str,
    a: f64,
    a_lo: f64,
    a_hi: f64,
    b: f64,
    b_lo: f64,
    b_hi: f64,
    diff: f64,
    diff_lo: f64,
    diff_hi: f64,
    /// Whether the difference's interval excludes 0.
    beyond_noise: bool,
    examples: usize,
}

pub fn run(a: PairArgs) -> anyhow::Result<()> {
    let data = crate::fsutil::bundled(&a.data.clone().unwrap_or_else(|| PathBuf::from(a.task.bundled_data())));
    let (outs_a, outs_b) = (read_outputs(&a.a)?, read_outputs(&a.b)?);
    ensure!(!outs_a.is_empty(), "{} holds no outputs", a.a.display());
    for (path, outs) in [(&a.a, &outs_a), (&a.b, &outs_b)] {
        let mut seen = std::collections::HashSet::new();
        if let Some((id, _)) = outs.iter().find(|(id, _)| !seen.insert(id.as_str())) {
            bail!("{} answers example {id} more than once; pair compares each example once (bootstrapping over copies would narrow the intervals)", path.display());
        }
    }
    ensure!(
        outs_a.len() == outs_b.len() && outs_a.iter().zip(&outs_b).all(|(x, y)| x.0 == y.0),
        "{} and {} do not answer the same examples in the same order ({} and {} outputs)",
        a.a.display(),
        a.b.display(),
        outs_a.len(),
        outs_b.len()
    );
    let refs = references(&data, a.task, outs_a.iter().map(|(id, _)| id.as_str()))?;
    let answers = |o: &[(String, String)]| o.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>();
    let (pa, pb) = (answers(&outs_a), answers(&outs_b));
    let (sa, sb) = (task_intervals(a.task, &pa, &refs)?, task_intervals(a.task, &pb, &refs)?);
    let diffs = paired_intervals(a.task, &pa, &pb, &refs)?;
    let rows: Vec<PairRow> = diffs
        .iter()
        .zip(sa.iter().zip(&sb))
        .map(|((m, d), ((ma, x), (mb, y)))| {
            debug_assert!(m == ma && m == mb, "one metric order");
            PairRow {
                metric: m.label(),
                a: x.point,
                a_lo: x.lo,
                a_hi: x.hi,
                b: y.point,
                b_lo: y.lo,
                b_hi: y.hi,
                diff: d.point,
                diff_lo: d.lo,
                diff_hi: d.hi,
                beyond_noise: d.excludes_zero(),
                examples: refs.len(),
            }
        })
        .collect();
    if a.json.json {
        for r in &rows {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(());
    }
    let name = |p: &Path| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned());
    println!("A: {}\nB: {}\n{} examples of {}", name(&a.a), name(&a.b), refs.len(), data.display());
    let mut t = Table::new(["metric", "A [95% CI]", "B [95% CI]", "A - B [95% CI]", ""]);
    for r in &rows {
        t.row([
            r.metric.into(),
            format!("{:.1} [{:.1}, {:.1}]", r.a, r.a_lo, r.a_hi),
            format!("{:.1} [{:.1}, {:.1}]", r.b, r.b_lo, r.b_hi),
            format!("{:+.1} [{:+.1}, {:+.1}]", r.diff, r.diff_lo, r.diff_hi),
            if r.beyond_noise { "*".into() } else { String::new() },
        ]);
    }
    print!("{}", t.to_markdown());
    Ok(())
}

/// The references of the evaluation examples `ids` of `data`, in that order.
fn references<'a>(data: &Path, task: Task, ids: impl Iterator<Item = &'a str>) -> anyhow::Result<Vec<Vec<String>>> {
    let examples = read_examples(data, task).with_context(|| format!("reading {}", data.display()))?;
    let by_id: HashMap<&str, &Vec<String>> = Split::Eval.select(&examples).iter().map(|e| (e.id.as_str(), &e.references)).collect();
    ids.map(|id| match by_id.get(id) {
        Some(r) => Ok((*r).clone()),
        None => bail!("example {id} is not in the evaluation split of {}", data.display()),
    })
    .collect()
}
