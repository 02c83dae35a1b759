//! The one check every writer goes through before any work: no output may be, or
//! resolve to, a path the same command reads (through a symlink, a hard link or
//! `..`), lie inside a folder it reads (a profile directory), or be another output
//! of the same run. A refused command line is a [`UsageError`] (exit status 2)
//! naming both paths; nothing has been read or written by then.
//!
//! Files compare by (device, inode) and by canonical path; a path that does not
//! exist yet compares by its canonical folder plus its file name.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// A command line refused before any work (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// How an output is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// One file, replaced or appended to.
    File,
    /// A folder the command fills with files of its own naming: no input may be in it.
    Dir,
    /// A cache folder of content-named files (chat's slices): it may hold inputs,
    /// but may not be, or lie in, an input folder.
    Cache,
}

/// A path as the guard compares it.
#[derive(Debug, Clone)]
struct Resolved {
    canon: PathBuf,
    /// (device, inode) of an existing file or folder.
    id: Option<(u64, u64)>,
    is_dir: bool,
}

fn resolve(p: &Path) -> Resolved {
    if let (Ok(canon), Ok(m)) = (p.canonicalize(), std::fs::metadata(p)) {
        return Resolved { canon, id: Some((m.dev(), m.ino())), is_dir: m.is_dir() };
    }
    // Not there yet: its folder's canonical path plus its name, else the lexical absolute path.
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut canon = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                canon.pop();
            }
            Component::CurDir => {}
            other => canon.push(other),
        }
    }
    if let (Some(parent), Some(name)) = (canon.parent(), canon.file_name()) {
        if let Ok(real) = parent.canonicalize() {
            canon = real.join(name);
        }
    }
    Resolved { canon, id: None, is_dir: false }
}

/// (device, inode) of every file under `dir` (a few levels; profile folders are shallow).
fn ids_under(dir: &Path, depth: usize, out: &mut Vec<((u64, u64), PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten().take(10_000) {
        let p = e.path();
        let Ok(m) = std::fs::metadata(&p) else { continue };
        if m.is_dir() {
            if depth > 0 {
                ids_under(&p, depth - 1, out);
            }
        } else {
            out.push(((m.dev(), m.ino()), p));
        }
    }
}

/// The inputs and outputs of one command line.
#[derive(Debug, Default, Clone)]
pub struct Paths {
    inputs: Vec<(String, PathBuf)>,
    outputs: Vec<(String, PathBuf, Written)>,
}

impl Paths {
    /// A path the command reads, named by the option that gives it.
    pub fn input(&mut self, flag: impl Into<String>, path: impl Into<PathBuf>) -> &mut Self {
        self.inputs.push((flag.into(), path.into()));
        self
    }

    /// A path the command writes.
    pub fn output(&mut self, flag: impl Into<String>, path: impl Into<PathBuf>, how: Written) -> &mut Self {
        self.outputs.push((flag.into(), path.into(), how));
        self
    }

    /// Refuses an output that would overwrite an input or another output.
    pub fn check(&self) -> Result<(), UsageError> {
        let refuse = |of: &str, o: &Path, what: String| Err(UsageError(format!("{of} {} {what}; nothing was written, choose another path", o.display())));
        let outs: Vec<(&str, &Path, Written, Resolved)> = self.outputs.iter().map(|(f, p, w)| (f.as_str(), p.as_path(), *w, resolve(p))).collect();
        for (i, (of, op, how, o)) in outs.iter().enumerate() {
            for (f, p) in &self.inputs {
                let r = resolve(p);
                let same = o.canon == r.canon || (o.id.is_some() && o.id == r.id);
                if same {
                    return refuse(of, op, format!("is the input {f} {}", p.display()));
                }
                if r.is_dir && o.canon.starts_with(&r.canon) {
                    return refuse(of, op, format!("is inside the input folder {f} {}", p.display()));
                }
                if *how == Written::Dir && r.canon.starts_with(&o.canon) {
                    return refuse(of, op, format!("holds the input {f} {}, which the run could overwrite", p.display()));
                }
                if r.is_dir && *how == Written::File {
                    if let Some(id) = o.id {
                        let mut ids = Vec::new();
                        ids_under(&r.canon, 3, &mut ids);
                        if let Some((_, hit)) = ids.iter().find(|(x, _)| *x == id) {
                            return refuse(of, op, format!("is {} (a link into the input folder {f} {})", hit.display(), p.display()));
                        }
                    }
                }
            }
            for (f, p, _, r) in &outs[..i] {
                if o.canon == r.canon || (o.id.is_some() && o.id == r.id) || o.canon.starts_with(&r.canon) && r.is_dir || r.canon.starts_with(&o.canon) && *how == Written::Dir {
                    return refuse(of, op, format!("is also the output {f} {}", p.display()));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(inputs: &[(&str, &Path)], outputs: &[(&str, &Path, Written)]) -> Result<(), UsageError> {
        let mut p = Paths::default();
        inputs.iter().for_each(|(f, x)| {
            p.input(*f, *x);
        });
        outputs.iter().for_each(|(f, x, w)| {
            p.output(*f, *x, *w);
        });
        p.check()
    }

    #[test]
    fn outputs_that_resolve_to_inputs_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("m.gguf");
        std::fs::write(&m, b"model").unwrap();
        let prof = d.path().join("prof");
        std::fs::create_dir_all(prof.join("moments")).unwrap();
        std::fs::write(prof.join("task-qa.json"), b"{}").unwrap();
        let link = d.path().join("link.gguf");
        std::os::unix::fs::symlink(&m, &link).unwrap();
        let hard = d.path().join("hard.json");
        std::fs::hard_link(prof.join("task-qa.json"), &hard).unwrap();
        let dotdot = prof.join("../m.gguf");
        let ins = [("-m", m.as_path()), ("--profile", prof.as_path())];
        let file = Written::File;
        for bad in [&m, &link, &dotdot, &prof.join("task-qa.json"), &prof.join("moments/qa.bin"), &hard] {
            let e = check(&ins, &[("-o", bad, file)]).unwrap_err().to_string();
            assert!(e.contains("-o ") && (e.contains("m.gguf") || e.contains("prof")), "{e}");
        }
        assert!(check(&ins, &[("-o", &d.path().join("new.gguf"), file)]).is_ok());
        let out = d.path().join("o.jsonl");
        assert!(check(&ins, &[("--out", &out, file), ("--outputs", &out, file)]).unwrap_err().to_string().contains("is also the output --out"));
        // A folder output may not hold an input; a cache folder may.
        assert!(check(&ins, &[("--out-dir", d.path(), Written::Dir)]).is_err());
        assert!(check(&ins, &[("--cache-dir", d.path(), Written::Cache)]).is_ok());
        assert!(check(&ins, &[("--cache-dir", &prof.join("slices"), Written::Cache)]).is_err());
    }
}
