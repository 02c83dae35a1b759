//! Running an experiment: prepare the files its cells need (cached by content), run
//! each unfinished cell as a child `selectinfer eval`, one CSV row per cell.
//!
//! Each cell's child is an [`super::child::EvalCall`]. Cells run as child processes so that each row's peak RSS, major faults and
//! memory cap belong to that cell alone, and so that a crash or Ctrl-C loses at
//! most the running cell: rows are appended atomically by the child, and a re-run
//! skips every cell whose row is already in the CSV.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use super::config::{Cell, Experiment, ModelSpec, Prep};
use crate::gguf::GgufFile;
use crate::model::ModelInfo;
use crate::select::SliceMeta;
use crate::tasks::{read_examples, Split};

/// Reads the rows of a results CSV (none if it does not exist yet).
pub fn read_rows<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    match std::fs::read(path) {
        Ok(bytes) => crate::eval::harness::parse_rows(&bytes, path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Runs child `selectinfer` commands, sharing the terminal with the bars.
pub struct Runner {
    exe: PathBuf,
    /// Print what would run and run nothing.
    pub dry_run: bool,
    /// Steps a dry run has listed already (it writes no files to find later).
    listed: std::cell::RefCell<std::collections::HashSet<String>>,
}

impl Runner {
    /// A runner that starts this same executable.
    pub fn new(dry_run: bool) -> anyhow::Result<Runner> {
        Ok(Runner { exe: std::env::current_exe().context("locating the selectinfer executable")?, dry_run, listed: Default::default() })
    }

    /// Runs a preparation step with its output on the terminal.
    fn step(&self, what: &str, args: &[String]) -> anyhow::Result<()> {
        let line = format!("selectinfer {}", args.join(" "));
        if self.dry_run {
            if self.listed.borrow_mut().insert(line.clone()) {
                eprintln!("experiment: would prepare {what}: {line}");
            }
            return Ok(());
        }
        eprintln!("experiment: {what}: {line}");
        let status = Command::new(&self.exe).args(args).stdout(Stdio::null()).status().with_context(|| format!("starting {}", self.exe.display()))?;
        if !status.success() {
            bail!("{what} failed ({status})");
        }
        Ok(())
    }
}

/// A text file next to a prepared model saying how it was made; a prepared file is
/// reused only when its recipe (inputs' hashes included) is unchanged.
fn recipe_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".recipe");
    file.with_file_name(name)
}

fn recipe_matches(file: &Path, recipe: &str) -> bool {
    file.exists() && std::fs::read_to_string(recipe_path(file)).is_ok_and(|r| r == recipe)
}

fn write_recipe(file: &Path, recipe: &str) -> anyhow::Result<()> {
    crate::fsutil::write_atomic(&recipe_path(file), recipe.as_bytes()).with_context(|| format!("writing the recipe of {}", file.display()))
}

fn sha(path: &Path) -> anyhow::Result<String> {
    crate::util::hash::file_sha256(path).with_context(|| format!("hashing {}", path.display()))
}

/// What was prepared for one model.
#[derive(Debug, Clone)]
pub struct PreparedModel {
    /// The F16 reference.
    pub f16: PathBuf,
    /// Its sha256.
    pub f16_sha256: String,
    /// The sha256 of each quantized slice source hashed so far (its cells share it).
    quant_sha256: std::cell::RefCell<HashMap<PathBuf, String>>,
}

impl PreparedModel {
    /// The sha256 of `source`: the F16 reference or one of its quantizations, each
    /// hashed once per run.
    fn source_sha256(&self, source: &Path) -> anyhow::Result<String> {
        if source == self.f16 {
            return Ok(self.f16_sha256.clone());
        }
        if let Some(s) = self.quant_sha256.borrow().get(source) {
            return Ok(s.clone());
        }
        let s = sha(source)?;
        self.quant_sha256.borrow_mut().insert(source.to_path_buf(), s.clone());
        Ok(s)
    }
}

/// Makes (or finds) the reference (the F16 conversion, or the source itself) and
/// the profile of a model.
pub fn prepare_model(r: &Runner, m: &ModelSpec, e: &Experiment, cells: &[&Cell]) -> anyhow::Result<PreparedModel> {
    let f16 = m.reference_path();
    if let Some(parent) = f16.parent().filter(|_| !r.dry_run) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let recipe = if let Some(src) = &m.source {
        if !src.exists() {
            match &m.setup {
                Some(key) if !r.dry_run => {
                    eprintln!("experiment: fetching {} with scripts/setup.sh ({key})", src.display());
                    let st = Command::new("scripts/setup.sh").env("SELECTINFER_MODELS", key).status().context("running scripts/setup.sh")?;
                    if !st.success() || !src.exists() {
                        bail!("scripts/setup.sh did not provide {}", src.display());
                    }
                }
                Some(_) => {}
                None => bail!("model {}: source {} does not exist", m.name, src.display()),
            }
        }
        format!("convert --to f16 from {} sha256 {}\n", src.display(), if src.exists() { sha(src)? } else { "(missing)".into() })
    } else {
        format!("synth --shape {} --type f16 --seed 1\n", m.synth.as_deref().unwrap_or_default())
    };
    // A source reference is used as it is: nothing to convert.
    if m.reference == super::config::Reference::F16 && !recipe_matches(&f16, &recipe) {
        let args: Vec<String> = match (&m.source, &m.synth) {
            (Some(src), _) => vec!["convert".into(), src.display().to_string(), "--to".into(), "f16".into(), "-o".into(), f16.display().to_string()],
            (_, Some(shape)) => vec!["synth".into(), "--shape".into(), shape.clone(), "--type".into(), "f16".into(), "--seed".into(), "1".into(), "-o".into(), f16.display().to_string()],
            _ => unreachable!("checked when the experiment was read"),
        };
        r.step(&format!("{} F16 reference", m.name), &args)?;
        if !r.dry_run {
            write_recipe(&f16, &recipe)?;
        }
    }
    let f16_sha256 = if f16.exists() { sha(&f16)? } else { String::new() };

    // Profiles: every task a profile slice needs, plus the merge.
    let mut tasks: Vec<_> = cells.iter().filter_map(|c| if let Prep::ProfileSlice { task, .. } = c.prep { Some(task) } else { None }).collect();
    tasks.sort();
    tasks.dedup();
    let missing: Vec<_> = tasks.iter().filter(|t| !crate::profile::ranking::task_ranking_path(&m.profile, **t).exists()).collect();
    if !missing.is_empty() || (!tasks.is_empty() && !crate::profile::ranking::model_ranking_path(&m.profile).exists()) {
        // Profile only the tasks without a ranking; merge re-ranks from every raw file.
        for spec in e.tasks.iter().filter(|s| missing.contains(&&s.task)) {
            let mut args: Vec<String> = vec!["profile".into(), "-m".into(), f16.display().to_string(), "--task".into(), spec.task.name().into()];
            // The file's token budget, else its prompt count (not `profile`'s default budget).
            match m.profile_tokens {
                Some(n) => args.extend(["--tokens".into(), n.to_string()]),
                None => args.extend(["--limit".into(), m.profile_prompts.to_string(), "--tokens".into(), "all".into()]),
            }
            args.extend(["--gen-tokens".into(), m.profile_gen_tokens.to_string()]);
            args.extend(["-o".into(), m.profile.display().to_string(), "--no-merge".into(), "-t".into(), e.threads.to_string()]);
            if let Some(d) = &spec.data {
                args.extend(["--data".into(), d.display().to_string()]);
            }
            r.step(&format!("{} profile {}", m.name, spec.task), &args)?;
        }
        r.step(&format!("{} profile merge", m.name), &["profile".into(), "merge".into(), m.profile.display().to_string()])?;
    }
    Ok(PreparedModel { f16, f16_sha256, quant_sha256: Default::default() })
}

/// Makes (or finds) the file of one cell.
pub fn prepare_file(r: &Runner, m: &ModelSpec, pm: &PreparedModel, prep: &Prep) -> anyhow::Result<PathBuf> {
    let path = m.file(prep);
    let f16 = pm.f16.display().to_string();
    match prep {
        Prep::F16 => {}
        Prep::Quant(q) => {
            let recipe = format!("convert --to {q} from F16 sha256 {}\n", pm.f16_sha256);
            if !recipe_matches(&path, &recipe) {
                r.step(&format!("{} {q}", m.name), &["convert".into(), f16, "--to".into(), q.to_string(), "-o".into(), path.display().to_string()])?;
                if !r.dry_run {
                    write_recipe(&path, &recipe)?;
                }
            }
        }
        Prep::ProfileSlice { task, load, static_share, layers, variant, base, down } => {
            // A quantized base is llama.cpp's quantization of the F16 reference (made
            // first); the profile, made on the F16 file, applies to it. A source
            // reference is sliced itself (quantized bases are refused for it).
            let source = match base.quant() {
                None => pm.f16.clone(),
                Some(q) => prepare_file(r, m, pm, &Prep::Quant(q))?,
            };
            if variant.budget == crate::select::variant::Budget::Output {
                measure_sensitivity(r, m, pm, *task, variant.importance)?;
            }
            if variant.compensation == crate::select::variant::Compensation::Refit {
                measure_moments(r, m, pm, *task)?;
            }
            if !slice_is_current(&path, pm, &source, prep, Some(&m.profile))? {
                let mut args = vec!["slice".into(), "-m".into(), source.display().to_string(), "--profile".into(), m.profile.display().to_string(), "--task".into(), task.name().into()];
                args.extend(["--down-layout".into(), down.name().into()]);
                args.extend(["--importance".into(), variant.importance.name().into(), "--compensate".into(), variant.compensation.name().into()]);
                args.extend(["--budget".into(), variant.budget.name().into()]);
                if variant.budget.is_per_layer() {
                    args.extend(["--budget-floor".into(), variant.budget_floor.to_string()]);
                }
                args.extend(["--secondary".into(), variant.secondary.name().into()]);
                if variant.compensation == crate::select::variant::Compensation::RefitComputed {
                    let f = variant.computed_fit;
                    args.extend(["--fit-compute".into(), f.compute.to_string(), "--fit-token-share".into(), f.token_share.to_string()]);
                    args.extend(["--fit-decode-share".into(), f.decode_share.to_string()]);
                }
                args.extend(slice_args(*load, *static_share, layers, &path));
                r.step(&format!("{} slice", m.name), &args)?;
            }
        }
        Prep::RandomSlice { load, static_share, layers, seed } => {
            if !slice_is_current(&path, pm, &pm.f16, prep, None)? {
                let mut args = vec!["slice".into(), "-m".into(), f16, "--random".into(), "--random-seed".into(), seed.to_string()];
                args.extend(slice_args(*load, *static_share, layers, &path));
                r.step(&format!("{} random slice", m.name), &args)?;
            }
        }
    }
    Ok(path)
}

/// Runs `selectinfer profile KIND -m F16 --task T [extra] PROFILE` unless `file` (what
/// it writes into the profile) is there: the measurements a slice variant reads, one
/// file per task (and ranking) for every load of the sweep.
fn measure_once(r: &Runner, m: &ModelSpec, pm: &PreparedModel, kind: &str, task: crate::tasks::Task, file: &Path, extra: &[&str]) -> anyhow::Result<()> {
    if file.exists() {
        return Ok(());
    }
    let mut args: Vec<String> = ["profile", kind, "-m", &pm.f16.display().to_string(), "--task", task.name()].map(String::from).into();
    args.extend(extra.iter().map(|a| a.to_string()));
    args.push(m.profile.display().to_string());
    r.step(&format!("{} {task} {kind}", m.name), &args)
}

/// The task's per-layer output sensitivity (the default gamma 0.7, delta 0.3), which
/// `--budget output` reads.
fn measure_sensitivity(r: &Runner, m: &ModelSpec, pm: &PreparedModel, task: crate::tasks::Task, importance: crate::profile::ranking::Importance) -> anyhow::Result<()> {
    let dir = importance.ranking_dir(&m.profile);
    if crate::profile::sensitivity::find_sensitivity(&dir, task, &pm.f16_sha256, &[])?.is_some() {
        return Ok(());
    }
    let file = crate::profile::sensitivity::sensitivity_path(&dir, task, &pm.f16_sha256);
    measure_once(r, m, pm, "sensitivity", task, &file, &["--importance", importance.name()])
}

/// The task's activation moments, which `--compensate refit` reads.
fn measure_moments(r: &Runner, m: &ModelSpec, pm: &PreparedModel, task: crate::tasks::Task) -> anyhow::Result<()> {
    if crate::profile::moments::find_moments(&m.profile, task, &pm.f16_sha256, &[])?.is_some() {
        return Ok(());
    }
    measure_once(r, m, pm, "moments", task, &crate::profile::moments::moments_path(&m.profile, task, &pm.f16_sha256), &[])
}

fn slice_args(load: f64, static_share: f64, layers: &Option<std::ops::Range<usize>>, out: &Path) -> Vec<String> {
    let mut a = vec!["--load".into(), load.to_string(), "--static".into(), static_share.to_string()];
    if let Some(l) = layers {
        a.extend(["--layers".into(), format!("{}..{}", l.start, l.end)]);
    }
    a.extend(["-o".into(), out.display().to_string()]);
    a
}

/// Whether an existing slice was cut from `source` (the F16 file or its quantization;
/// and profile) with these settings, read from the slice's own metadata.
fn slice_is_current(path: &Path, pm: &PreparedModel, source: &Path, prep: &Prep, profile: Option<&Path>) -> anyhow::Result<bool> {
    if !path.exists() || !source.exists() {
        return Ok(false);
    }
    let g = GgufFile::read(path)?;
    let Some(meta) = SliceMeta::from_gguf(&g)? else { return Ok(false) };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let (load, static_share, layers) = match prep {
        Prep::ProfileSlice { load, static_share, layers, .. } | Prep::RandomSlice { load, static_share, layers, .. } => (*load, *static_share, layers),
        _ => return Ok(false),
    };
    let info = ModelInfo::from_gguf(&GgufFile::read(&pm.f16)?)?;
    let range = layers.clone().unwrap_or_else(|| crate::select::default_layer_range(info.n_layer));
    // A per-layer budget chooses its own range (the layers that keep fewer than all).
    let range_ok = (meta.layer_start == range.start && meta.layer_end == range.end) || meta.variant.budget.is_per_layer();
    let source_sha256 = pm.source_sha256(source)?;
    let layout_ok = match prep {
        Prep::ProfileSlice { down, .. } => crate::select::rewrite::DownLayout::of(&g) == *down,
        _ => true,
    };
    let source_ok = layout_ok && meta.source_sha256 == source_sha256 && close(meta.load, load) && close(meta.static_share, static_share) && range_ok;
    let selection_ok = match prep {
        Prep::ProfileSlice { task, variant, .. } => {
            let dir = profile.expect("profile slices come with a profile");
            meta.selection == "profile" && meta.variant == *variant && meta.profile_sha256 == Some(variant.selection_sha256(dir, *task, &source_sha256, &crate::profile::ranking::lineage(&GgufFile::read(source)?))?)
        }
        Prep::RandomSlice { seed, .. } => meta.selection == "random" && meta.random_seed == Some(*seed),
        _ => false,
    };
    Ok(source_ok && selection_ok)
}

/// Examples a cell scores: its count, or fewer if the evaluation split is smaller.
pub fn scored_examples(cell: &Cell, split_sizes: &mut HashMap<(PathBuf, crate::tasks::Task), usize>) -> anyhow::Result<usize> {
    let key = (cell.data.clone(), cell.task);
    if !split_sizes.contains_key(&key) {
        let ex = read_examples(&cell.data, cell.task)?;
        split_sizes.insert(key.clone(), Split::Eval.select(&ex).len());
    }
    Ok(cell.examples.min(split_sizes[&key]))
}

/// Runs one cell's child, feeding its progress lines to `bar`; on failure returns
/// the child's last stderr lines.
pub fn run_cell(r: &Runner, args: &[String], bar: &indicatif::ProgressBar) -> anyhow::Result<()> {
    let mut child = Command::new(&r.exe)
        .args(args)
        .env(crate::output::PROGRESS_LINES_ENV, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", r.exe.display()))?;
    let stderr = child.stderr.take().expect("piped");
    let mut tail: Vec<String> = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.unwrap_or_default();
        if let Some((pos, len)) = crate::output::parse_progress_line(&line) {
            bar.set_length(len);
            bar.set_position(pos);
        } else if !line.trim().is_empty() {
            tail.push(line);
            if tail.len() > 12 {
                tail.remove(0);
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{status}: {}", tail.join("\n"));
    }
    Ok(())
}

/// Whether memory caps can be set here (root and cgroup v1), tried for real.
pub fn caps_available() -> Result<(), String> {
    let dir = Path::new(crate::memory::CGROUP_V1_MEMORY).join(format!("selectinfer-probe-{}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("cannot create a memory group under {}: {e}", crate::memory::CGROUP_V1_MEMORY))?;
    let ok = std::fs::write(dir.join("memory.limit_in_bytes"), "1073741824").map_err(|e| format!("cannot set a memory limit: {e}"));
    let _ = std::fs::remove_dir(&dir);
    ok
}
