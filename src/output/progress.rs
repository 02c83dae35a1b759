//! Progress on stderr: a bar on a terminal, or, under `selectinfer experiment`,
//! one line per update that the parent turns into its own per-cell bar.

/// A progress bar on stderr (hidden when `show` is false or stderr is no terminal).
pub fn progress_bar(show: bool, len: u64, prefix: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    if std::env::var_os(PROGRESS_LINES_ENV).is_some() {
        // Under `selectinfer experiment`: report positions as lines on stderr for
        // the parent's per-cell bar instead of drawing a bar of our own.
        let target = indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(ProgressLines), 2);
        let bar = indicatif::ProgressBar::with_draw_target(Some(len), target);
        bar.set_style(indicatif::ProgressStyle::with_template("{pos} {len}").expect("valid template"));
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

/// A "terminal" that turns each drawn bar into one stderr line.
#[derive(Debug)]
pub struct ProgressLines;

impl indicatif::TermLike for ProgressLines {
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
        if !s.trim().is_empty() {
            eprintln!("{PROGRESS_LINE_PREFIX}{}", s.trim());
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
