//! Progress on stderr: a bar on a terminal; under `selectinfer experiment`, one
//! line per update that the parent turns into its own per-cell bar; elsewhere (a
//! log file, a pipe) a plain line every [`PLAIN_LINE_EVERY`].

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a progress line is written when stderr is not a terminal.
pub const PLAIN_LINE_EVERY: Duration = Duration::from_secs(20);

/// A progress bar on stderr (hidden when `show` is false; plain lines when stderr
/// is no terminal).
pub fn progress_bar(show: bool, len: u64, prefix: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    if std::env::var_os(PROGRESS_LINES_ENV).is_some() {
        // Under `selectinfer experiment`: report positions as lines on stderr for
        // the parent's per-cell bar instead of drawing a bar of our own.
        let target = indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(LineTerm::for_parent()), 2);
        let bar = indicatif::ProgressBar::with_draw_target(Some(len), target);
        bar.set_style(indicatif::ProgressStyle::with_template("{pos} {len}").expect("valid template"));
        return bar;
    }
    if !std::io::stderr().is_terminal() {
        // A log: "profile qa: 12/64 45 tok/s ETA 3m" every 20 s, nothing for runs
        // shorter than that.
        let target = indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(LineTerm::for_log()), 1);
        let bar = indicatif::ProgressBar::with_draw_target(Some(len), target);
        bar.set_style(indicatif::ProgressStyle::with_template("{prefix}: {pos}/{len} {msg} (elapsed {elapsed}, ETA {eta})").expect("valid template"));
        bar.set_prefix(prefix.to_string());
        return bar;
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(prefix.to_string());
    bar
}

/// Set by `selectinfer experiment` for its children: progress bars print
/// [`PROGRESS_LINE_PREFIX`]`POS LEN` lines on stderr instead of drawing.
pub const PROGRESS_LINES_ENV: &str = "SELECTINFER_PROGRESS_LINES";

/// Prefix of a progress line (see [`PROGRESS_LINES_ENV`]).
pub const PROGRESS_LINE_PREFIX: &str = "selectinfer-progress: ";

/// A "terminal" that writes each drawn bar as one stderr line after `prefix`: for
/// the experiment parent ([`LineTerm::for_parent`]), or for a log at most every
/// [`PLAIN_LINE_EVERY`], the first one that long after it was made
/// ([`LineTerm::for_log`]).
#[derive(Debug)]
pub struct LineTerm {
    prefix: &'static str,
    every: Option<Duration>,
    last: Mutex<Instant>,
}

impl LineTerm {
    /// Every update, as [`PROGRESS_LINE_PREFIX`]`POS LEN` lines.
    pub fn for_parent() -> LineTerm {
        LineTerm { prefix: PROGRESS_LINE_PREFIX, every: None, last: Mutex::new(Instant::now()) }
    }

    /// A plain line every [`PLAIN_LINE_EVERY`].
    pub fn for_log() -> LineTerm {
        LineTerm { prefix: "", every: Some(PLAIN_LINE_EVERY), last: Mutex::new(Instant::now()) }
    }
}

impl indicatif::TermLike for LineTerm {
    fn width(&self) -> u16 {
        200
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if !s.trim().is_empty() && self.every.is_none_or(|every| last.elapsed() >= every) {
            *last = Instant::now();
            eprintln!("{}{}", self.prefix, s.trim());
        }
        Ok(())
    }
    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Parses a progress line written under [`PROGRESS_LINES_ENV`]: (position, length).
pub fn parse_progress_line(line: &str) -> Option<(u64, u64)> {
    let (pos, len) = line.strip_prefix(PROGRESS_LINE_PREFIX)?.trim().split_once(' ')?;
    Some((pos.parse().ok()?, len.parse().ok()?))
}
