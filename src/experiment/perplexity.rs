//! Perplexity cells of an experiment: a low-noise measure beside the task scores.
//!
//! With a `perplexity:` section, every file a scored cell evaluates also gets a
//! child `selectinfer perplexity`: on wikitext-2 (one cell per file) and on the
//! task's evaluation text (one per file and task: each evaluation prompt followed
//! by its reference). Rows go to `perplexity.csv` beside `results.csv`; a cell is
//! done when a row names its file, text, chunk length and chunk count.
//!
//! Perplexity evaluates every token as a prefill token, so it measures what is
//! loaded (a slice, a quantization), not selective computation: a computing
//! method's perplexity is that of its file computed densely.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::config::{Cell, Experiment, ModelSpec, Prep};
use crate::eval::perplexity::PerplexityRow;
use crate::tasks::Task;

/// The bundled wikitext-2 test set.
pub const WIKITEXT2: &str = "data/wikitext2_raw_test.txt";

/// [`WIKITEXT2`] from the working directory, or else from this crate's sources (as
/// `bench` reads it), so an experiment run elsewhere still finds it.
fn wikitext2() -> PathBuf {
    let here = PathBuf::from(WIKITEXT2);
    if here.exists() {
        return here;
    }
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join(WIKITEXT2);
    if bundled.exists() {
        bundled
    } else {
        here
    }
}

/// The `perplexity:` section of an experiment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerplexitySpec {
    /// Chunk length in tokens (the second half of each chunk is scored).
    #[serde(default = "default_ctx")]
    pub ctx: usize,
    /// Most chunks per text (the first ones).
    pub chunks: usize,
    /// Which texts: `wikitext-2`, `task` (default both).
    #[serde(default = "default_texts")]
    pub texts: Vec<PplText>,
    /// Also each file's mean KL divergence from its model's reference file over
    /// the same tokens (`perplexity --kl-reference`; the reference's own cells
    /// have none).
    #[serde(default)]
    pub kl: bool,
}

fn default_ctx() -> usize {
    512
}
fn default_texts() -> Vec<PplText> {
    vec![PplText::Wikitext2, PplText::Task]
}

/// A text perplexity is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PplText {
    /// The bundled wikitext-2 test set, for every file.
    #[serde(rename = "wikitext-2")]
    Wikitext2,
    /// Each task's evaluation text, for the files evaluated on that task.
    #[serde(rename = "task")]
    Task,
}

impl PerplexitySpec {
    /// Errors for values no cell could run with.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.ctx >= 16, "perplexity.ctx must be at least 16 tokens, not {}", self.ctx);
        anyhow::ensure!(self.chunks > 0, "perplexity.chunks must be at least 1");
        anyhow::ensure!(!self.texts.is_empty(), "perplexity.texts: an empty list would give no cells");
        Ok(())
    }
}

/// One perplexity run: a file and a text -> one row.
#[derive(Debug, Clone, PartialEq)]
pub struct PplCell {
    /// Index into [`Experiment::models`].
    pub model: usize,
    /// How the file is made.
    pub prep: Prep,
    /// The task whose evaluation text is scored (None: wikitext-2).
    pub task: Option<Task>,
    /// Text file, or the task's dataset.
    pub data: PathBuf,
    /// Chunk length.
    pub ctx: usize,
    /// Most chunks.
    pub chunks: usize,
    /// Measure the KL divergence from the model's reference file too.
    pub kl: bool,
}

/// The perplexity cells of an experiment whose eval cells are `cells`: per model,
/// wikitext-2 for each file a scored cell uses, then each (file, task) text.
pub fn ppl_cells(e: &Experiment, cells: &[Cell]) -> Vec<PplCell> {
    let Some(spec) = &e.perplexity else { return Vec::new() };
    let mut out = Vec::new();
    for mi in 0..e.models.len() {
        let scored: Vec<&Cell> = cells.iter().filter(|c| c.model == mi && c.speed_only.is_none()).collect();
        for text in [PplText::Wikitext2, PplText::Task].into_iter().filter(|t| spec.texts.contains(t)) {
            for c in &scored {
                let (task, data) = match text {
                    PplText::Wikitext2 => (None, wikitext2()),
                    PplText::Task => (Some(c.task), c.data.clone()),
                };
                let kl = spec.kl && c.prep != Prep::F16;
                let p = PplCell { model: mi, prep: c.prep.clone(), task, data, ctx: spec.ctx, chunks: spec.chunks, kl };
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl PplCell {
    /// A short label, e.g. `m perplexity wikitext-2 [models/m.F16.gguf]`.
    pub fn label(&self, model: &ModelSpec) -> String {
        let text = self.task.map_or("wikitext-2".to_string(), |t| format!("{t} evaluation text"));
        format!("{} perplexity {text} of {}", model.name, file_name(&model.file(&self.prep)))
    }

    /// The arguments of the child `selectinfer perplexity` of `file`, whose model's
    /// reference file is `reference`.
    pub fn args(&self, file: &Path, reference: &Path, csv: &Path, threads: i32) -> Vec<String> {
        let mut a: Vec<String> = vec!["perplexity".into(), "-m".into(), file.display().to_string(), "--data".into(), self.data.display().to_string()];
        if let Some(t) = self.task {
            a.extend(["--task".into(), t.name().into()]);
        }
        a.extend(["--ctx".into(), self.ctx.to_string(), "--chunks".into(), self.chunks.to_string(), "-t".into(), threads.to_string()]);
        a.extend(["--out".into(), csv.display().to_string()]);
        if self.kl {
            a.extend(["--kl-reference".into(), reference.display().to_string()]);
        }
        a
    }

    /// Whether `row` is this cell's result (for model `model`).
    pub fn matches(&self, row: &PerplexityRow, model: &ModelSpec) -> bool {
        row.model == file_name(&model.file(&self.prep))
            && row.task.as_deref() == self.task.map(Task::name)
            && row.data == file_name(&self.data)
            && row.ctx == self.ctx
            && row.max_chunks == Some(self.chunks)
            && (!self.kl || row.kl.is_some())
    }
}

/// The perplexity of `file` (a row's `model`) on wikitext-2 (`task` None) or on a
/// task's evaluation text of dataset `data`, among `rows` (the last such row wins).
pub fn lookup<'a>(rows: &'a [PerplexityRow], file: &str, task: Option<&str>, data: &str) -> Option<&'a PerplexityRow> {
    let want_data = task.map_or(file_name(Path::new(WIKITEXT2)), |_| data.to_string());
    rows.iter().rev().find(|r| r.model == file && r.task.as_deref() == task && r.data == want_data)
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "
models:
  - {name: m, source: models/m.gguf, profile: profiles/m}
tasks:
  - {task: qa, examples: 10}
  - {task: translate, examples: 10}
methods:
  - method: reference
  - method: coreinfer
  - method: selectinfer
  - {method: disk-offload, mem_cap: 100MiB, tasks: [translate], speed_only: 8}
perplexity: {chunks: 4}
";

    #[test]
    fn one_cell_per_file_and_text() {
        let e = Experiment::parse(YAML).unwrap();
        let cells = ppl_cells(&e, &e.cells());
        let labels: Vec<String> = cells.iter().map(|c| c.label(&e.models[0])).collect();
        // reference and coreinfer share the F16 file; the speed-only cell adds none.
        assert_eq!(
            labels,
            [
                "m perplexity wikitext-2 of m.F16.gguf",
                "m perplexity wikitext-2 of m.F16.qa-load0.7.gguf",
                "m perplexity wikitext-2 of m.F16.translate-load0.7.gguf",
                "m perplexity qa evaluation text of m.F16.gguf",
                "m perplexity translate evaluation text of m.F16.gguf",
                "m perplexity qa evaluation text of m.F16.qa-load0.7.gguf",
                "m perplexity translate evaluation text of m.F16.translate-load0.7.gguf",
            ]
        );
        assert_eq!((cells[0].ctx, cells[0].chunks), (512, 4));
        let args = cells[3].args(Path::new("models/m.F16.gguf"), Path::new("models/m.F16.gguf"), Path::new("out/perplexity.csv"), 2);
        assert_eq!(args.join(" "), "perplexity -m models/m.F16.gguf --data data/qa_squad11dev_xquad_en_500.jsonl --task qa --ctx 512 --chunks 4 -t 2 --out out/perplexity.csv");

        let only = Experiment::parse(&YAML.replace("{chunks: 4}", "{chunks: 2, ctx: 256, texts: [wikitext-2]}")).unwrap();
        assert_eq!(ppl_cells(&only, &only.cells()).len(), 3);
        let none = Experiment::parse(&YAML.replace("perplexity: {chunks: 4}\n", "")).unwrap();
        assert!(ppl_cells(&none, &none.cells()).is_empty());
        let e = format!("{:#}", Experiment::parse(&YAML.replace("{chunks: 4}", "{chunks: 0}")).unwrap_err());
        assert!(e.contains("perplexity.chunks"), "{e}");
        let e = format!("{:#}", Experiment::parse(&YAML.replace("{chunks: 4}", "{chunks: 4, texts: [wiki]}")).unwrap_err());
        assert!(e.contains("perplexity") && e.contains("wiki"), "{e}");
    }

    #[test]
    fn rows_match_their_cell() {
        let e = Experiment::parse(YAML).unwrap();
        let cells = ppl_cells(&e, &e.cells());
        let m = &e.models[0];
        let row = |model: &str, task: Option<&str>, data: &str, chunks: Option<usize>| PerplexityRow {
            timestamp: String::new(),
            git_commit: String::new(),
            machine: String::new(),
            model: model.into(),
            task: task.map(String::from),
            data: data.into(),
            ctx: 512,
            max_chunks: chunks,
            chunks: 4,
            tokens: 1020,
            ppl: 9.8,
            ppl_lo: None,
            ppl_hi: None,
            mean_nll: 9.8f64.ln(),
            weight_bytes: 1,
            wall_s: 1.0,
            threads: 2,
            chunk_nll: String::new(),
            kl_reference: None,
            kl: None,
            kl_lo: None,
            kl_hi: None,
            same_top: None,
        };
        let wiki = row("m.F16.gguf", None, "wikitext2_raw_test.txt", Some(4));
        assert!(cells[0].matches(&wiki, m) && !cells[1].matches(&wiki, m) && !cells[3].matches(&wiki, m));
        assert!(!cells[0].matches(&row("m.F16.gguf", None, "wikitext2_raw_test.txt", Some(8)), m), "another chunk count");
        let qa = row("m.F16.gguf", Some("qa"), "qa_squad11dev_xquad_en_500.jsonl", Some(4));
        assert!(cells[3].matches(&qa, m));
        let rows = [wiki, qa];
        assert_eq!(lookup(&rows, "m.F16.gguf", None, "anything").map(|r| r.task.clone()), Some(None));
        assert!(lookup(&rows, "m.F16.gguf", Some("qa"), "qa_squad11dev_xquad_en_500.jsonl").is_some());
        assert!(lookup(&rows, "m.F16.gguf", Some("translate"), "wmt.jsonl").is_none());
    }
}
