//! The operating-system calls selectinfer makes beside llama.cpp (libc: signals,
//! `access`, `malloc_trim`, `mallopt`, `wait4`), as safe functions, at the bottom of
//! the data flow: the only `unsafe` outside `src/engine` (whose `unsafe` is
//! llama.cpp's FFI). Their users are `fsutil` (interrupt cleanup, output checks),
//! `memory` (heap trimming) and `bench --processes` (a child's peak RSS).

use std::ffi::CStr;
use std::io;

/// Whether the calling process may write in the folder `dir` (`access(W_OK)`).
pub fn can_write(dir: &CStr) -> io::Result<()> {
    // SAFETY: access only reads the NUL-terminated path.
    if unsafe { libc::access(dir.as_ptr(), libc::W_OK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Returns freed heap memory to the operating system (glibc's `malloc_trim`).
pub fn trim_heap() {
    // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Makes glibc's allocator serve every allocation of at least `bytes` with its own
/// memory map, returned to the operating system when freed (`mallopt(M_MMAP_THRESHOLD)`;
/// this also turns off glibc's raising of that threshold after large frees, which
/// keeps later large blocks on the heap, resident after they are freed).
pub fn map_large_allocations(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only changes the allocator's policy for later allocations.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
        }
    }
}

/// The parent process's id.
pub fn parent_pid() -> u32 {
    // SAFETY: getppid cannot fail.
    unsafe { libc::getppid() as u32 }
}

/// SIGINT, SIGTERM and SIGHUP: the signals that end a run and get its cleanup.
pub struct TerminationSignals(libc::sigset_t);

// SAFETY: a sigset_t is plain data.
unsafe impl Send for TerminationSignals {}

impl TerminationSignals {
    fn set() -> libc::sigset_t {
        // SAFETY: libc calls on a local, zero-initialized signal set.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            set
        }
    }

    /// Blocks them in the calling thread (and the threads it starts later); None
    /// if the mask could not be set.
    pub fn block() -> Option<TerminationSignals> {
        let set = Self::set();
        // SAFETY: a valid set; the old mask is not asked for.
        (unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } == 0).then_some(TerminationSignals(set))
    }

    /// Unblocks them in the calling thread.
    pub fn unblock_all() {
        let set = Self::set();
        // SAFETY: a valid set; the old mask is not asked for.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }

    /// Waits until one of them arrives; its number, or None if sigwait failed.
    pub fn wait(&self) -> Option<i32> {
        let mut sig: libc::c_int = 0;
        // SAFETY: sigwait on the set blocked by `block`.
        (unsafe { libc::sigwait(&self.0, &mut sig) } == 0).then_some(sig)
    }
}

/// Asks the kernel to send this process SIGTERM when its parent dies.
pub fn terminate_with_parent() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and changes only this
    // process's death signal.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    }
}

/// Ends the process at once with `code` (`_exit`: no destructors, no atexit
/// handlers; llama.cpp's threads may be mid-computation).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

/// What the kernel counted of a child process that has exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildUsage {
    /// Peak resident memory (`ru_maxrss`), bytes.
    pub peak_rss_bytes: u64,
    /// Page faults that read from disk (`ru_majflt`).
    pub major_faults: u64,
}

/// Waits for `child` to exit and returns its exit status with its peak resident
/// memory and major faults: what a benchmark measures of a process it cannot ask
/// itself (stock llama.cpp's client).
pub fn wait_with_usage(child: &mut std::process::Child) -> io::Result<(std::process::ExitStatus, ChildUsage)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data that wait4 fills in; pid is our own un-waited
    // child (std's Child does not reap it unless wait is called on it).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; wait4 only writes them.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let used = ChildUsage { peak_rss_bytes: usage.ru_maxrss.max(0) as u64 * 1024, major_faults: usage.ru_majflt.max(0) as u64 };
    Ok((std::process::ExitStatus::from_raw(status), used))
}
