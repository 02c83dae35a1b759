//! The tune work folder: the point slices and what was measured, appended one
//! line per point as it is measured, so an interrupted tune resumes from the
//! points it has. `tune.json` says what the folder was made for; a folder made for
//! another file, task or set of examples is refused, never mixed.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context};
use serde::{de::DeserializeOwned, Serialize};

use super::grid::Point;

/// What a work folder's measurements depend on.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// sha256 of the tuned file.
    pub model_sha256: String,
    /// Task name.
    pub task: String,
    /// Dataset file name and its sha256.
    pub data: String,
    pub data_sha256: String,
    /// Profiling-split examples scored per point, and k-shot examples before each.
    pub examples: usize,
    pub shots: usize,
    /// Profile rankings' sha256 (the slices are made from them).
    pub profile_sha256: String,
    /// How the qualities were measured ([`MEASURE`]); absent in folders of
    /// earlier versions (0).
    #[serde(default)]
    pub measure: u32,
}

/// The quality measure this version writes: 1 = the anchor's answers through the
/// decode path ([`crate::eval::answers::AnswerReference`]); folders without it
/// (0) scored against one batch per example, about 0.005 nats apart.
pub const MEASURE: u32 = 1;

/// One point's quality on the profiling split ([`crate::eval::answers::AnswerDivergence`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Quality {
    pub point: Point,
    pub kl: f64,
    pub kl_lo: f64,
    pub kl_hi: f64,
    pub same_top: f64,
    pub answer_ppl: f64,
    pub ppl_lo: f64,
    pub ppl_hi: f64,
    /// Answer tokens scored.
    pub tokens: usize,
}

/// One point's speed and memory from one round-robin `bench` run (`run`), with the
/// anchor timed in the same run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Speed {
    pub point: Point,
    pub run: usize,
    pub weight_bytes: u64,
    pub peak_rss_bytes: u64,
    pub decode_tps: f64,
    pub prefill_tps: f64,
    /// Decode over the anchor's in the same run.
    pub speedup: f64,
}

/// An open work folder.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
}

const HEADER: &str = "tune.json";
const QUALITY: &str = "quality.jsonl";
const SPEED: &str = "speed.jsonl";

impl Store {
    /// Opens `dir` for `header`, creating it; refuses a folder made for another header.
    pub fn open(dir: &Path, header: &Header) -> anyhow::Result<Store> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create the tune folder {}", dir.display()))?;
        let path = dir.join(HEADER);
        if path.exists() {
            let had = read_header(&path)?;
            ensure!(
                &had == header,
                "{} holds a tune of another file, task, dataset, example count or profile, or an earlier version's ({}); remove it or give --work another folder",
                dir.display(),
                differences(&had, header).join(", ")
            );
        } else {
            crate::fsutil::write_atomic(&path, serde_json::to_string_pretty(header)?.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
        }
        for f in [QUALITY, SPEED] {
            drop_cut_line(&dir.join(f))?;
        }
        Ok(Store { dir: dir.to_path_buf() })
    }

    /// Opens an existing folder as it is (creating and changing nothing), with the
    /// header it was made for.
    pub fn existing(dir: &Path) -> anyhow::Result<(Header, Store)> {
        let path = dir.join(HEADER);
        let header = read_header(&path).with_context(|| format!("{} is not a tune folder", dir.display()))?;
        Ok((header, Store { dir: dir.to_path_buf() }))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The slice file of gamma `load` in this folder.
    pub fn slice_path(&self, point: &Point) -> Option<PathBuf> {
        point.slice_stem().map(|s| self.dir.join(format!("{s}.gguf")))
    }

    /// Every quality measured so far.
    pub fn qualities(&self) -> anyhow::Result<Vec<Quality>> {
        read_lines(&self.dir.join(QUALITY))
    }

    /// Every speed measured so far (all runs).
    pub fn speeds(&self) -> anyhow::Result<Vec<Speed>> {
        read_lines(&self.dir.join(SPEED))
    }

    /// Appends one point's quality.
    pub fn add_quality(&self, q: &Quality) -> anyhow::Result<()> {
        append_lines(&self.dir.join(QUALITY), std::slice::from_ref(q))
    }

    /// Appends one whole bench run's speeds (all of them or, on failure, none).
    pub fn add_speeds(&self, s: &[Speed]) -> anyhow::Result<()> {
        append_lines(&self.dir.join(SPEED), s)
    }
}

/// A folder's header file.
fn read_header(path: &Path) -> anyhow::Result<Header> {
    let text = fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a tune header", path.display()))
}

fn differences(a: &Header, b: &Header) -> Vec<&'static str> {
    let mut d = Vec::new();
    for (differs, what) in [
        (a.model_sha256 != b.model_sha256, "model"),
        (a.task != b.task, "task"),
        (a.data != b.data || a.data_sha256 != b.data_sha256, "dataset"),
        (a.examples != b.examples || a.shots != b.shots, "examples"),
        (a.profile_sha256 != b.profile_sha256, "profile"),
        (a.measure != b.measure, "quality measure (an earlier selectinfer's)"),
    ] {
        if differs {
            d.push(what);
        }
    }
    d
}

/// Cuts a last line an interruption left without its newline, so that the next
/// append starts a line of its own.
fn drop_cut_line(path: &Path) -> anyhow::Result<()> {
    let Ok(bytes) = fs::read(path) else { return Ok(()) };
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let f = OpenOptions::new().write(true).open(path).with_context(|| format!("cannot open {}", path.display()))?;
    f.set_len(keep as u64).with_context(|| format!("cannot cut the interrupted line of {}", path.display()))
}

/// JSON lines of `path` (none when it does not exist). A last line cut short by an
/// interruption is dropped; a bad line elsewhere is an error.
fn read_lines<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(v) => out.push(v),
            Err(_) if i + 1 == lines.len() && !complete => break,
            Err(e) => return Err(e).with_context(|| format!("{} line {} is not a tune record", path.display(), i + 1)),
        }
    }
    Ok(out)
}

/// Appends `records` as whole lines in one write, then syncs.
fn append_lines<T: Serialize>(path: &Path, records: &[T]) -> anyhow::Result<()> {
    let mut text = String::new();
    for r in records {
        text += &serde_json::to_string(r)?;
        text.push('\n');
    }
    let mut f = OpenOptions::new().create(true).append(true).open(path).with_context(|| format!("cannot open {}", path.display()))?;
    f.write_all(text.as_bytes()).and_then(|_| f.sync_data()).with_context(|| format!("cannot append to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header { model_sha256: "ab".into(), task: "qa".into(), data: "d.jsonl".into(), data_sha256: "cd".into(), examples: 16, shots: 0, profile_sha256: "ef".into(), measure: MEASURE }
    }

    fn quality(load: f64) -> Quality {
        Quality { point: Point::new(load, Some(0.4)), kl: 0.1, kl_lo: 0.05, kl_hi: 0.2, same_top: 0.9, answer_ppl: 3.0, ppl_lo: 2.0, ppl_hi: 4.0, tokens: 100 }
    }

    #[test]
    fn a_store_resumes_its_points_and_refuses_another_tune() {
        let dir = std::env::temp_dir().join(format!("selectinfer-tune-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let s = Store::open(&dir, &header()).unwrap();
        s.add_quality(&quality(0.7)).unwrap();
        s.add_quality(&quality(0.85)).unwrap();
        // An interrupted append leaves a cut line: dropped on reading.
        OpenOptions::new().append(true).open(dir.join(QUALITY)).unwrap().write_all(b"{\"point\":{\"lo").unwrap();
        let again = Store::open(&dir, &header()).unwrap();
        assert_eq!(again.qualities().unwrap(), [quality(0.7), quality(0.85)]);
        again.add_quality(&quality(0.5)).unwrap();
        assert_eq!(again.qualities().unwrap(), [quality(0.7), quality(0.85), quality(0.5)]);
        assert_eq!(again.slice_path(&Point::new(0.7, None)), Some(dir.join("load0.7.gguf")));
        let mut other = header();
        other.task = "translate".into();
        let e = Store::open(&dir, &other).unwrap_err().to_string();
        assert!(e.contains("another file, task") && e.contains("(task)"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_of_an_earlier_measure_is_refused() {
        let dir = std::env::temp_dir().join(format!("selectinfer-tune-measure-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        // What a tune wrote before the header had `measure`.
        let mut old = serde_json::to_value(header()).unwrap();
        old.as_object_mut().unwrap().remove("measure");
        fs::write(dir.join(HEADER), old.to_string()).unwrap();
        let e = Store::open(&dir, &header()).unwrap_err().to_string();
        assert!(e.contains("(quality measure (an earlier selectinfer's))"), "{e}");
        assert_eq!(Store::existing(&dir).unwrap().0.measure, 0);
        fs::remove_dir_all(&dir).unwrap();
    }
}
