//! The child `selectinfer eval` of one experiment cell, typed.
//!
//! An [`EvalCall`] holds everything a cell's child is told. Both its command line
//! ([`EvalCall::args`], parsed by the real clap definition in `src/cli/eval.rs`;
//! the test below parses it back) and the key of the CSV row it writes
//! ([`EvalCall::row_key`]) come from it, so a renamed flag fails a unit test rather
//! than an experiment, and the runner's question "does this cell have a row?"
//! cannot drift from what the child writes.

use std::path::{Path, PathBuf};

use super::config::{share_text, Cell, Prep, Reference};
use crate::eval::harness::EvalRow;
use crate::tasks::TEMPLATE_VERSION;

/// One cell's child `selectinfer eval`: the cell (method, task, dataset, settings),
/// its prepared model file, and the number of examples it scores.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalCall<'a> {
    /// The cell.
    pub cell: &'a Cell,
    /// The cell's model file (prepared by [`super::run::prepare_file`]).
    pub model: PathBuf,
    /// The examples the row says it scored: the cell's count, or fewer where the
    /// dataset's evaluation split is smaller (see [`super::run::scored_examples`]).
    pub examples: usize,
    /// What the cell's model is compared with and sliced from. With
    /// [`Reference::Source`] a slice's base is the downloaded file itself, whose
    /// quantization only that file says: its row's `base=` label is whatever eval
    /// read there, so [`EvalCall::matches`] does not compare it.
    pub reference: Reference,
}

impl<'a> EvalCall<'a> {
    /// The child of `cell`, whose file is `model` and which scores `examples`
    /// examples; its model's slices are cut from the F16 reference.
    pub fn new(cell: &'a Cell, model: PathBuf, examples: usize) -> EvalCall<'a> {
        EvalCall { cell, model, examples, reference: Reference::F16 }
    }

    /// The same call for a model whose reference is `reference`.
    pub fn with_reference(self, reference: Reference) -> EvalCall<'a> {
        EvalCall { reference, ..self }
    }

    /// The load γ and static δ the row records: the file's (1 and 0 for an
    /// unsliced file), δ 0 under `--no-static`.
    fn shares(&self) -> (f64, f64) {
        match &self.cell.prep {
            Prep::ProfileSlice { load, static_share, .. } | Prep::RandomSlice { load, static_share, .. } => (*load, if self.cell.no_static { 0.0 } else { *static_share }),
            Prep::F16 | Prep::Quant(_) => (1.0, 0.0),
        }
    }

    /// The child's arguments (after the executable): append the row to `csv`, the
    /// per-example outputs to `outputs`, on `threads` CPU threads.
    pub fn args(&self, csv: &Path, outputs: Option<&Path>, threads: i32) -> Vec<String> {
        let c = self.cell;
        let mut a: Vec<String> = vec!["eval".into(), "-m".into(), self.model.display().to_string(), "--task".into(), c.task.name().into()];
        a.extend(["--method".into(), c.method.name().into(), "--data".into(), c.data.display().to_string()]);
        a.extend(["--limit".into(), c.examples.to_string(), "--shots".into(), c.shots.to_string(), "-t".into(), threads.to_string()]);
        a.extend(["--out".into(), csv.display().to_string()]);
        if let Some((phi, alpha)) = c.compute {
            a.extend(["--compute".into(), phi.to_string(), "--token-share".into(), alpha.to_string()]);
        }
        if c.compute.is_some() && c.vote != crate::compute::Vote::Abs {
            a.extend(["--vote".into(), c.vote.name().into()]);
        }
        if c.compute.is_some() && c.decode_bias {
            a.push("--decode-bias".into());
        }
        match c.decode_refit {
            Some(ridge) => a.extend(["--decode-refit".into(), ridge.to_string()]),
            // eval refits a refit slice's decode by default; a cell without the key
            // gets the cells' own default (the plan's).
            None if c.compute.is_some() && !c.decode_bias => a.extend(["--decode-refit".into(), crate::compute::session_plan::CELL_DECODE_REFIT.arg()]),
            None => {}
        }
        if c.no_static {
            a.push("--no-static".into());
        }
        if let Some(l) = &c.compute_layers {
            a.extend(["--compute-layers".into(), format!("{}..{}", l.start, l.end)]);
        }
        if let Some(cap) = c.mem_cap {
            a.extend(["--mem-cap".into(), cap.to_string()]);
        }
        if let Some(n) = c.speed_only {
            a.extend(["--speed-only".into(), n.to_string()]);
        }
        if c.prompt_cache {
            a.push("--prompt-cache".into());
        }
        if let Some(o) = outputs {
            a.extend(["--outputs".into(), o.display().to_string()]);
        }
        a
    }

    /// The key of the row this child writes.
    pub fn row_key(&self) -> RowKey {
        let (c, (load, static_share)) = (self.cell, self.shares());
        RowKey {
            model: file_name(&self.model),
            method: c.method.name().into(),
            task: c.task.name().into(),
            data: file_name(&c.data),
            examples: self.examples,
            shots: c.shots,
            template_version: TEMPLATE_VERSION.into(),
            load: Setting(load),
            static_share: Setting(static_share),
            compute: c.compute.map(|v| Setting(v.0)),
            token_share: c.compute.map(|v| Setting(v.1)),
            mem_cap_bytes: c.mem_cap,
            speed_only_tokens: c.speed_only,
            chat: false,
            variant: self.comparable_variant(&cell_variant(c)),
            prompt_cache: c.prompt_cache,
        }
    }

    /// A row's variant as this call compares it: without its `base=` part where the
    /// base is the source file (see [`EvalCall::reference`]).
    fn comparable_variant(&self, variant: &str) -> String {
        match self.reference {
            Reference::Source => variant.split(',').filter(|p| !p.starts_with("base=")).collect::<Vec<_>>().join(","),
            Reference::F16 => variant.to_string(),
        }
    }

    /// Whether `row` is this child's result.
    pub fn matches(&self, row: &EvalRow) -> bool {
        let mut key = RowKey::of_row(row);
        key.variant = self.comparable_variant(&key.variant);
        key == self.row_key()
    }

    /// The file name of the per-example outputs: the model file's stem, method,
    /// task and dataset, then the settings a file name does not already say.
    pub fn outputs_name(&self) -> String {
        let data = self.cell.data.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        self.outputs_name_with(Some(&data))
    }

    /// The name [`EvalCall::outputs_name`] had before it named the dataset, which
    /// two cells on two datasets of one task shared (so the outputs of one
    /// overwrote the other's). Only read, for outputs written then: a file that
    /// belongs to another dataset does not reproduce the row's scores, and is not
    /// used (see [`super::intervals`]).
    pub fn legacy_outputs_name(&self) -> String {
        self.outputs_name_with(None)
    }

    fn outputs_name_with(&self, data: Option<&str>) -> String {
        let stem = self.model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let c = self.cell;
        let mut n = format!("{stem}.{}.{}", c.method.name(), c.task);
        if let Some(d) = data {
            n += &format!(".{d}");
        }
        if let Some((phi, alpha)) = c.compute {
            n += &format!(".compute{}-alpha{}", share_text(phi), share_text(alpha));
        }
        // The vote changes the answers but not the file: without it in the name a
        // signed-vote cell would overwrite the default's outputs.
        if c.vote != crate::compute::Vote::default() {
            n += &format!(".vote-{}", c.vote.name());
        }
        if c.decode_bias {
            n += ".decode-bias";
        }
        if let Some(ridge) = c.decode_refit {
            n += &format!(".decode-refit{ridge}");
        }
        if let Some(cap) = c.mem_cap {
            n += &format!(".cap{cap}");
        }
        if let Some(s) = c.speed_only {
            n += &format!(".speed{s}");
        }
        if c.prompt_cache {
            n += ".prompt-cache";
        }
        n + &format!(".n{}.jsonl", c.examples)
    }
}

/// The file name of `p` (empty where it has none).
pub fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A share or setting in a row key: equal within 1e-9 (the CSV's text round trip).
#[derive(Debug, Clone, Copy)]
pub struct Setting(pub f64);

impl PartialEq for Setting {
    fn eq(&self, other: &Setting) -> bool {
        (self.0 - other.0).abs() < 1e-9
    }
}

/// The columns of a results row that say which cell it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct RowKey {
    /// Model file name.
    pub model: String,
    pub method: String,
    pub task: String,
    /// Dataset file name.
    pub data: String,
    pub examples: usize,
    pub shots: usize,
    pub template_version: String,
    pub load: Setting,
    pub static_share: Setting,
    pub compute: Option<Setting>,
    pub token_share: Option<Setting>,
    pub mem_cap_bytes: Option<u64>,
    pub speed_only_tokens: Option<usize>,
    pub chat: bool,
    /// Selection variant beyond the paper's ([`crate::eval::harness::variant_label`]).
    pub variant: String,
    /// Prompts reused the prefix they share with the one before.
    pub prompt_cache: bool,
}

impl RowKey {
    /// The key of a row read from a results CSV.
    pub fn of_row(r: &EvalRow) -> RowKey {
        RowKey {
            model: r.model.clone(),
            method: r.method.clone(),
            task: r.task.clone(),
            data: r.data.clone(),
            examples: r.examples,
            shots: r.shots,
            template_version: r.template_version.clone(),
            load: Setting(r.load),
            static_share: Setting(r.static_share),
            compute: r.compute.map(Setting),
            token_share: r.token_share.map(Setting),
            mem_cap_bytes: r.mem_cap_bytes,
            speed_only_tokens: r.speed_only_tokens,
            chat: r.chat,
            variant: r.variant.clone(),
            prompt_cache: r.prompt_cache,
        }
    }
}

/// What a cell's row records as its variant ([`crate::eval::harness::variant_label`]).
fn cell_variant(cell: &Cell) -> String {
    let mut parts: Vec<String> = match &cell.prep {
        Prep::ProfileSlice { variant, base, down, .. } => {
            let mut v: Vec<String> = Some(variant.label()).filter(|l| !l.is_empty()).into_iter().collect();
            v.extend(crate::select::rewrite::source_labels(base.quant(), *down));
            v
        }
        _ => Vec::new(),
    };
    if cell.compute.is_some() {
        parts.extend(crate::compute::decode_labels(cell.vote, cell.decode_bias, cell.decode_refit));
    }
    parts.join(",")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::config::Experiment;

    const TWO_PAIRS: &str = "
models:
  - name: tiny
    source: models/tiny.gguf
    profile: profiles/tiny
tasks:
  - {task: translate, examples: 10, shots: 3}
  - {task: translate, examples: 10, shots: 3, data: data/wmt16_cs_en_newstest2016_500.jsonl}
  - {task: qa, examples: 5}
methods:
  - method: reference
  - method: selectinfer
    compute: [0.3, 0.4]
  - method: selectinfer
    base: q4_k_m
    down_layout: neurons
  - method: coreinfer
    layers: 2..5
  - method: coreinfer-loading
  - {method: selectinfer, compute: 0.4, vote: signed}
  - {method: selectinfer, compute: 0.4, decode_bias: true}
  - {method: selectinfer, compute: 0.4, decode_refit: 1.0}
  - {method: selectinfer, compute: 0.4, decode_refit: 0.5}
  - method: disk-offload
    mem_cap: 192MiB
    speed_only: 16
";

    /// The cells of an experiment with every kind of method (shared with
    /// `cli/experiment.rs`'s tests, which parse their arguments back).
    pub(crate) fn cells() -> Vec<Cell> {
        Experiment::parse(TWO_PAIRS).unwrap().cells()
    }

    pub(crate) fn calls(cells: &[Cell]) -> Vec<EvalCall<'_>> {
        cells.iter().map(|c| EvalCall::new(c, c.prep.path("tiny"), c.examples - 1)).collect()
    }

    #[test]
    fn a_call_matches_the_row_it_writes_and_no_other() {
        let cells = cells();
        let calls = calls(&cells);
        let row_of = |c: &EvalCall| {
            let k = c.row_key();
            let mut r: EvalRow = csv::Reader::from_reader(crate::eval::row::OLD_LAYOUT.as_bytes()).deserialize().next().unwrap().unwrap();
            (r.model, r.method, r.task, r.data) = (k.model, k.method, k.task, k.data);
            (r.examples, r.shots, r.template_version, r.load, r.static_share) = (k.examples, k.shots, k.template_version, k.load.0, k.static_share.0);
            (r.compute, r.token_share) = (k.compute.map(|s| s.0), k.token_share.map(|s| s.0));
            (r.mem_cap_bytes, r.speed_only_tokens, r.chat, r.variant) = (k.mem_cap_bytes, k.speed_only_tokens, k.chat, k.variant);
            r
        };
        for (i, a) in calls.iter().enumerate() {
            for (j, b) in calls.iter().enumerate() {
                assert_eq!(a.matches(&row_of(b)), i == j, "{a:?} vs {b:?}");
            }
        }
        // A share read back as text still matches; a chat row is never an experiment cell's.
        let c = calls.iter().find(|c| c.cell.compute.is_some()).unwrap();
        let mut r = row_of(c);
        r.compute = r.compute.map(|v| v.to_string().parse::<f64>().unwrap() + 1e-12);
        assert!(c.matches(&r));
        r.chat = true;
        assert!(!c.matches(&r));
    }

    #[test]
    fn a_slice_of_the_source_file_matches_the_base_eval_reads_from_it() {
        // The main job's model: a Q4_K_M download that is its own reference. eval
        // labels the slice's row `base=q4_k_m` (read from the file's type), which
        // the experiment cannot know without the file; the call still matches it,
        // and a row of another layout still does not.
        let e = Experiment::parse(
            "models:\n  - {name: q, source: models/q.gguf, reference: source, profile: profiles/q}\ntasks:\n  - {task: qa, examples: 4}\nmethods:\n  - method: reference\n  - {method: selectinfer, down_layout: neurons}\n",
        )
        .unwrap();
        let cells = e.cells();
        let m = &e.models[0];
        let calls: Vec<EvalCall> = cells.iter().map(|c| EvalCall::new(c, m.file(&c.prep), 4).with_reference(m.reference)).collect();
        let slice = calls.iter().find(|c| c.cell.compute.is_some()).unwrap();
        let mut r: EvalRow = csv::Reader::from_reader(crate::eval::row::OLD_LAYOUT.as_bytes()).deserialize().next().unwrap().unwrap();
        let k = slice.row_key();
        (r.model, r.method, r.task, r.data, r.examples, r.shots, r.template_version) = (k.model, k.method, k.task, k.data, k.examples, k.shots, k.template_version);
        (r.load, r.static_share, r.compute, r.token_share) = (k.load.0, k.static_share.0, k.compute.map(|s| s.0), k.token_share.map(|s| s.0));
        (r.mem_cap_bytes, r.speed_only_tokens, r.chat) = (k.mem_cap_bytes, k.speed_only_tokens, k.chat);
        r.variant = "base=q4_k_m,down=neurons".into();
        assert!(slice.matches(&r), "{:?} vs {}", slice.row_key(), r.variant);
        r.variant = "base=q4_k_m".into();
        assert!(!slice.matches(&r), "the column layout is another cell");
        // The reference row names the source file, which the report labels with the model's name.
        let reference = calls.iter().find(|c| c.cell.method == crate::eval::harness::Method::Reference).unwrap();
        assert_eq!(reference.row_key().model, "q.gguf");
        r.model = "q.gguf".into();
        assert_eq!(crate::experiment::report::model_label(&e, &r), "q");
    }

    #[test]
    fn outputs_names_differ_between_datasets_of_one_task() {
        let cells = cells();
        let calls = calls(&cells);
        let mut names: Vec<String> = calls.iter().map(EvalCall::outputs_name).collect();
        assert_eq!(names[0], "tiny.F16.reference.translate.wmt16_de_en_newstest2016_500.n10.jsonl");
        assert_eq!(calls[0].legacy_outputs_name(), "tiny.F16.reference.translate.n10.jsonl");
        assert_eq!(calls[1].legacy_outputs_name(), calls[0].legacy_outputs_name(), "the collision the dataset removes");
        names.sort();
        names.dedup();
        assert_eq!(names.len(), calls.len(), "every cell has its own outputs file");
    }
}
