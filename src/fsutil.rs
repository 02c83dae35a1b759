//! Output files that appear whole or not at all.
//!
//! Every file selectinfer writes (converted models, sliced models, profiles, CSV
//! rows) goes through [`AtomicFile`]: data goes to a temporary name in the target's
//! directory and is renamed over the target only once complete, so an error or a
//! crash never leaves a partial output behind.

use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written under a temporary name; [`commit`](Self::commit) renames it
/// to its target, dropping it uncommitted deletes it.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<File>,
    tmp: PathBuf,
    target: PathBuf,
}

impl AtomicFile {
    /// Opens `<dir>/.<name>.<pid>-<n>.tmp` for writing.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let tmp = temp_path(target);
        let file = File::create(&tmp)?;
        Ok(AtomicFile { file: Some(file), tmp, target: target.to_path_buf() })
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary path the data is written to until [`commit`](Self::commit).
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Flushes to disk and renames the temporary file to the target.
    pub fn commit(mut self) -> io::Result<()> {
        let file = self.file.take().expect("committed once");
        file.sync_all()?;
        drop(file);
        fs::rename(&self.tmp, &self.target)
    }
}

/// A fresh temporary name for `target`, unique within this process as well as
/// across processes: two threads writing the same target (tests that build a
/// shared fixture concurrently) must not write into one temporary file, where the
/// loser's truncation would corrupt the winner's data.
pub fn temp_path(target: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// A temporary file name next to a target ([`temp_path`]) that another writer
/// (llama.cpp's quantizer) fills; removed when dropped.
pub struct TempPath(PathBuf);

impl TempPath {
    /// A fresh temporary name beside `target`.
    pub fn beside(target: &Path) -> TempPath {
        TempPath(temp_path(target))
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Seek for AtomicFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.as_mut().expect("not committed").seek(pos)
    }
}

/// Whether two paths name the same existing file (so an output would overwrite its input).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Writes `bytes` to `target` atomically.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(target)?;
    f.write_all(bytes)?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads of one process writing the same target each get their own temporary
    /// file, so whichever rename lands last leaves a whole file, never a mix.
    #[test]
    fn concurrent_writers_of_one_target_never_leave_a_torn_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::thread::scope(|s| {
            for t in 0u8..4 {
                let target = &target;
                s.spawn(move || {
                    for _ in 0..20 {
                        write_atomic(target, &vec![t; 64 * 1024]).unwrap();
                    }
                });
            }
        });
        let bytes = fs::read(&target).unwrap();
        assert_eq!(bytes.len(), 64 * 1024);
        assert!(bytes.iter().all(|&b| b == bytes[0]));
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("out.bin")]);
    }
}
