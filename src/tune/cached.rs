//! The operating point of a tune that already ran: `chat --tuned` chooses from the
//! frontier a tune's work folder holds, under the limits of this session, without
//! measuring anything again ([`frontier::choose`], the rule `tune` itself applies).

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};

use super::frontier::{self, Limits, Measured};
use super::grid::Point;
use super::store::Store;
use crate::tasks::Task;

/// The point chosen from a cached frontier and the file that runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedChoice {
    pub measured: Measured,
    /// The point's slice in the work folder, or the tuned file itself (the anchor).
    pub file: PathBuf,
    /// The work folder read.
    pub work: PathBuf,
}

impl CachedChoice {
    /// The chosen point.
    pub fn point(&self) -> &Point {
        self.measured.point()
    }
}

/// Every point of `store` with both a quality and a speed, each with its latest
/// measurement (a point measured again is read as last measured).
pub fn frontier_of(store: &Store) -> anyhow::Result<Vec<Measured>> {
    let (qualities, speeds) = (store.qualities()?, store.speeds()?);
    let mut out: Vec<Measured> = Vec::new();
    for q in qualities.iter().rev() {
        if out.iter().any(|m| m.point().same(&q.point)) {
            continue;
        }
        let Some(s) = speeds.iter().rev().find(|s| s.point.same(&q.point.timed_as())) else { continue };
        out.push(Measured::new(q.clone(), s));
    }
    frontier::sort(&mut out);
    Ok(out)
}

/// Chooses within `limits` from the tune of `model` for `task` in `work` (default:
/// FILE.tune-TASK beside the file). The folder must be a tune of this very file
/// (by sha256) and task; the chosen point's slice must still be in it.
pub fn choose(model: &Path, task: Task, work: Option<&Path>, limits: &Limits) -> anyhow::Result<CachedChoice> {
    let work = work.map_or_else(|| super::default_work(model, task), Path::to_path_buf);
    let again = format!("selectinfer tune -m {} --task {task}", model.display());
    ensure!(work.join("tune.json").exists(), "{} holds no tune of {} for {task}; run `{again}` first (or give --tune-work)", work.display(), model.display());
    let (header, store) = Store::existing(&work)?;
    ensure!(header.task == task.name(), "{} is a tune for {}, not {task}", work.display(), header.task);
    let sha = crate::profile::file_sha256(model).with_context(|| format!("cannot read {}", model.display()))?;
    ensure!(header.model_sha256 == sha, "{} is a tune of another file than {} (sha256 differs); run `{again}`", work.display(), model.display());
    let measured = frontier_of(&store)?;
    ensure!(!measured.is_empty(), "{} has no point measured for both quality and speed; run `{again}` to finish it", work.display());
    let chosen = frontier::choose(&measured, limits).with_context(|| format!("choosing from the {} points of {}", measured.len(), work.display()))?.clone();
    let file = match store.slice_path(chosen.point()) {
        None => model.to_path_buf(),
        Some(slice) if slice.exists() => slice,
        Some(slice) => bail!("the chosen point {}'s slice {} is gone; run `{again}` to make it again", chosen.point(), slice.display()),
    };
    Ok(CachedChoice { measured: chosen, file, work })
}
