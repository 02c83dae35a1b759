//! Output files that appear whole or not at all, and nothing left behind.
//!
//! Every file selectinfer writes (converted models, sliced models, profiles, CSV
//! rows) goes through [`AtomicFile`]: data goes to a temporary name in the target's
//! directory and is renamed over the target only once complete, so an error or a
//! crash never leaves a partial output behind. Targets that are not regular files
//! (`/dev/null`, a folder) are refused before anything is written
//! ([`check_output_target`]). Temporary files are registered while they exist:
//! SIGINT, SIGTERM or SIGHUP remove them ([`install_interrupt_cleanup`]), and the
//! temporary files of a process that no longer runs are swept when the same
//! target is written again. Before any of this, [`guard`] refuses an output that
//! is, or resolves to, one of the command's inputs.

pub mod guard;
pub mod os;

use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A file being written under a temporary name; [`commit`](Self::commit) renames it
/// to its target, dropping it uncommitted deletes it.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<File>,
    tmp: PathBuf,
    target: PathBuf,
}

impl AtomicFile {
    /// Opens `<dir>/.<name>.<pid>-<n>.tmp` for writing, after
    /// [`check_output_target`].
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        check_output_target(target)?;
        let tmp = temp_path(target);
        register(Cleanup::File(tmp.clone()));
        let file = File::create(&tmp).inspect_err(|_| unregister_file(&tmp))?;
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
        let synced = file.sync_all();
        drop(file);
        let done = synced.and_then(|_| fs::rename(&self.tmp, &self.target));
        if done.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        unregister_file(&self.tmp);
        done
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
    sweep_stale(dir, &name);
    dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// Removes `<dir>/.<name>.<pid>-<n>.tmp` files of processes that no longer run
/// (killed before they could clean up: SIGKILL, a power cut).
fn sweep_stale(dir: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)).and_then(|r| r.strip_suffix(".tmp")) else { continue };
        let Some((pid, n)) = rest.split_once('-') else { continue };
        let (Ok(pid), Ok(_)) = (pid.parse::<u32>(), n.parse::<u64>()) else { continue };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Refuses an output path that is not, or cannot become, a regular file: an
/// existing device, folder or pipe (`-o /dev/null` would otherwise be replaced by
/// a regular file), or a path whose folder does not exist or is not writable.
pub fn check_output_target(target: &Path) -> io::Result<()> {
    let refuse = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    if let Ok(m) = fs::metadata(target) {
        if m.is_dir() {
            return Err(refuse(format!("output {} is a folder; give the path of a file to write", target.display())));
        }
        if !m.is_file() {
            return Err(refuse(format!("output {} is not a regular file (a device, pipe or socket); give the path of a file to write", target.display())));
        }
    }
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(refuse(format!("output {}: {} is not a folder", target.display(), dir.display()))),
        Err(_) => return Err(refuse(format!("output {}: the folder {} does not exist", target.display(), dir.display()))),
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| refuse(format!("bad path {}", dir.display())))?;
    if let Err(e) = os::can_write(&c) {
        return Err(io::Error::new(e.kind(), format!("output {}: cannot write in {}: {e}", target.display(), dir.display())));
    }
    Ok(())
}

/// [`check_output_target`] for a file whose folder is created if missing (CSV
/// files that rows are appended to).
pub fn prepare_output(target: &Path) -> io::Result<()> {
    if let Some(dir) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !dir.exists() {
            fs::create_dir_all(dir).map_err(|e| io::Error::new(e.kind(), format!("output {}: cannot create {}: {e}", target.display(), dir.display())))?;
        }
    }
    check_output_target(target)
}

/// A temporary file name next to a target ([`temp_path`]) that another writer
/// (llama.cpp's quantizer) fills; removed when dropped.
pub struct TempPath(PathBuf);

impl TempPath {
    /// A fresh temporary name beside `target`.
    pub fn beside(target: &Path) -> TempPath {
        let p = temp_path(target);
        register(Cleanup::File(p.clone()));
        TempPath(p)
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Renames the file to `target` (beside it): the end of a write that was
    /// checked before it took its final name.
    pub fn persist(self, target: &Path) -> io::Result<()> {
        fs::rename(&self.0, target)
        // Dropping self finds nothing left to remove and unregisters the name.
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
        unregister_file(&self.0);
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
            unregister_file(&self.tmp);
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

/// Something to undo if the process is interrupted.
#[derive(Debug, Clone, PartialEq)]
pub enum Cleanup {
    /// A temporary file to remove.
    File(PathBuf),
    /// A cgroup v1 memory group (its folder) to leave and remove.
    Cgroup(PathBuf),
}

static PENDING: Mutex<Vec<Cleanup>> = Mutex::new(Vec::new());

/// Registers `c` to be undone on SIGINT/SIGTERM/SIGHUP.
pub fn register(c: Cleanup) {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).push(c);
}

/// Makes what `c` undoes and registers `c` under the registry's lock, when `make`
/// succeeds: a signal's cleanup ([`run_cleanups`]) then runs either before `make`
/// starts (and the process exits before it can) or after `c` is registered, never
/// in between, where what `make` made would be left behind.
pub fn register_made<T, E>(c: Cleanup, make: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let made = make()?;
    pending.push(c);
    Ok(made)
}

/// Forgets `c` (undone by its owner).
pub fn unregister(c: &Cleanup) {
    let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = p.iter().rposition(|x| x == c) {
        p.remove(i);
    }
}

fn unregister_file(path: &Path) {
    unregister(&Cleanup::File(path.to_path_buf()));
}

/// Undoes everything registered, newest first: removes temporary files, leaves
/// and removes memory groups.
pub fn run_cleanups() {
    let mut registry = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for c in std::mem::take(&mut *registry).iter().rev() {
        match c {
            Cleanup::File(p) => {
                let _ = fs::remove_file(p);
            }
            Cleanup::Cgroup(dir) => leave_group(dir),
        }
    }
    // The process exits next: the registry stays locked, so that no thread makes
    // something [`register_made`] would register after the cleanups ran.
    std::mem::forget(registry);
}

/// Where cgroup v1 memory groups are created.
pub const CGROUP_V1_MEMORY: &str = "/sys/fs/cgroup/memory";

/// Moves this process back to the root group, then removes the (now empty)
/// group `dir`; its leftover page cache charges move to the parent. Also run on
/// SIGINT/SIGTERM ([`run_cleanups`]). A memory group is
/// [`crate::memory::MemoryCap`]'s, kept here so that the cleanup needs nothing above it.
pub fn leave_group(dir: &std::path::Path) {
    let root_procs = std::path::Path::new(CGROUP_V1_MEMORY).join("cgroup.procs");
    // Children started inside the group (`sync` while entering it) move out too;
    // a process that is just forking can land in the group a moment later, so
    // removing is retried briefly.
    for _ in 0..200 {
        let _ = std::fs::write(&root_procs, std::process::id().to_string());
        for pid in std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default().split_whitespace() {
            let _ = std::fs::write(&root_procs, pid);
        }
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in every thread and handles them in a
/// thread of their own, which runs [`run_cleanups`] and exits with 128 + the
/// signal number. Call first in `main`, before any thread starts (threads inherit
/// the mask). A selectinfer process started by another one (an experiment's
/// cells) also gets SIGTERM when its parent dies, so an interrupted experiment
/// stops its running cell, which cleans up after itself.
pub fn install_interrupt_cleanup() {
    let Some(signals) = os::TerminationSignals::block() else { return };
    if parent_is_selectinfer() {
        os::terminate_with_parent();
    }
    let spawned = std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.wait() {
            run_cleanups();
            os::exit_now(128 + sig);
        }
    });
    if spawned.is_err() {
        // No handler thread: restore the default behavior rather than ignore Ctrl-C.
        os::TerminationSignals::unblock_all();
    }
}

fn parent_is_selectinfer() -> bool {
    let ppid = os::parent_pid();
    match (fs::read_link(format!("/proc/{ppid}/exe")), fs::read_link("/proc/self/exe")) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A file the repository bundles (`data/...`) given as a relative path that does
/// not exist from the current folder: found in the repository the binary was
/// built in (the first ancestor folder of the binary that holds `path`), else in
/// the source tree it was compiled from. Other paths come back unchanged.
pub fn bundled(path: &Path) -> PathBuf {
    if path.is_absolute() || path.exists() {
        return path.to_path_buf();
    }
    let exe = std::env::current_exe().ok();
    let from_exe = exe.as_deref().into_iter().flat_map(Path::ancestors).skip(1).map(|d| d.join(path)).find(|p| p.exists());
    from_exe
        .or_else(|| Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).filter(|p| p.exists()))
        .unwrap_or_else(|| path.to_path_buf())
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

    #[test]
    fn non_regular_targets_are_refused_and_stale_temporaries_swept() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_output_target(Path::new("/dev/null")).unwrap_err().to_string().contains("not a regular file"));
        assert!(check_output_target(dir.path()).unwrap_err().to_string().contains("is a folder"));
        assert!(check_output_target(&dir.path().join("no/such/x.gguf")).unwrap_err().to_string().contains("does not exist"));
        // 999999999 is above any pid_max, so that process is not running; this one is.
        let stale = dir.path().join(".out.bin.999999999-0.tmp");
        // This process's counter never reaches u64::MAX: a small number here was once
        // the very name write_atomic below chose (other tests had advanced the counter
        // to it), so the write itself renamed "mine" away.
        let mine = dir.path().join(format!(".out.bin.{}-{}.tmp", std::process::id(), u64::MAX));
        fs::write(&stale, b"x").unwrap();
        fs::write(&mine, b"x").unwrap();
        write_atomic(&dir.path().join("out.bin"), b"y").unwrap();
        assert!(!stale.exists(), "stale left");
        assert!(mine.exists(), "mine removed");
    }
}
