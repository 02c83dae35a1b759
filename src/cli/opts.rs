//! Options shared by several subcommands: one clap struct or one value parser per
//! option, so the same option gets the same check (and the same help) everywhere.
//!
//! The parsers refuse, with exit status 2 and the option named, every value that
//! would otherwise reach llama.cpp and abort it (a context of 0 tokens), be
//! silently clamped (a share of 1.5, a size beyond any memory), or make a result
//! meaningless (a temperature of NaN, zero repetitions).

/// `-t/--threads`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ThreadsArg {
    /// CPU threads, 1 to 1024 (default: all cores).
    #[arg(short, long, value_parser = parse_threads)]
    pub threads: Option<i32>,
}

impl ThreadsArg {
    /// The threads to use: the option, or all cores.
    pub fn get(&self) -> i32 {
        self.threads.unwrap_or_else(crate::engine::default_threads)
    }
}

/// `--json`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct JsonArg {
    /// Print JSON (every field, one object per line) instead of a table or text.
    #[arg(long)]
    pub json: bool,
}

pub use crate::engine::MAX_THREADS;
/// Largest context (tokens) a command accepts.
pub const MAX_CTX: u32 = 1 << 20;
pub use crate::memory::{parse_mem_size, MAX_SIZE};

/// `--threads`: an integer in 1..=[`MAX_THREADS`].
pub fn parse_threads(s: &str) -> Result<i32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=i64::from(MAX_THREADS)).contains(&n) => Ok(n as i32),
        _ => Err(format!("{s:?} is not a thread count from 1 to {MAX_THREADS}")),
    }
}

fn parse_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if !v.is_finite() {
        return Err(format!("{s:?} is not a finite number"));
    }
    Ok(v)
}

/// A share of a layer's neurons (`--load`, `--compute`, `--token-share`,
/// `--compute-list`, `--top`): a finite number in (0, 1].
pub fn parse_share(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(format!("{s} is not a share in (0, 1]"))
    }
}

/// `--decode-refit`'s value: the plan's type ([`crate::compute::DecodeRefit`]).
pub use crate::compute::DecodeRefit as DecodeRefitArg;

/// Parses `--decode-refit`'s value.
pub fn parse_decode_refit(s: &str) -> Result<DecodeRefitArg, String> {
    if s == "off" {
        return Ok(DecodeRefitArg::Off);
    }
    match parse_f64(s)? {
        v if v > 0.0 => Ok(DecodeRefitArg::Ridge(v)),
        _ => Err(format!("{s} is not a ridge above 0 (or `off`)")),
    }
}

/// `--static` (delta) and `--fit-decode-share`: a finite number in [0, 1]; that delta is at most `--load`
/// is checked where both are known.
pub fn parse_static_share(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is not a share in [0, 1]"))
    }
}

/// `--temp`: a finite temperature from 0 (greedy) to 100.
pub fn parse_temp(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if (0.0..=100.0).contains(&v) {
        Ok(v as f32)
    } else {
        Err(format!("{s} is not a temperature from 0 (greedy) to 100"))
    }
}

/// A finite number above 0 (`tune --min-speedup`, `--max-loss`).
pub fn parse_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a number above 0, got {s:?}")),
    }
}

/// A count that must be at least 1 (`--reps`, `--prompt-tokens`, `--limit`,
/// `--chunks`, `-n`).
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        Ok(_) => Err("must be at least 1".into()),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

/// `bench --gen`: at least 2 (decode speed counts the steps after the first token).
pub fn parse_gen(s: &str) -> Result<usize, String> {
    match parse_count(s) {
        Ok(n) if n >= 2 => Ok(n),
        Ok(_) => Err("must be at least 2 (decode speed counts the steps after the first token)".into()),
        Err(e) => Err(e),
    }
}

/// `--ctx`: a context of 16 to [`MAX_CTX`] tokens.
pub fn parse_ctx(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (16..=u64::from(MAX_CTX)).contains(&n) => Ok(n as u32),
        _ => Err(format!("{s:?} is not a context length from 16 to {MAX_CTX} tokens")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_would_mislead_are_refused() {
        assert_eq!(parse_threads("4"), Ok(4));
        assert!(parse_threads("0").is_err() && parse_threads("-2").is_err() && parse_threads("99999999999").is_err());
        assert!(parse_temp("NaN").is_err() && parse_temp("inf").is_err() && parse_temp("-1").is_err());
        assert_eq!(parse_temp("0.7"), Ok(0.7));
        assert!(parse_share("1.5").is_err() && parse_share("0").is_err() && parse_share("nan").is_err());
        assert_eq!(parse_static_share("0"), Ok(0.0));
        assert!(parse_count("0").is_err());
        assert!(parse_gen("1").is_err());
        assert!(parse_ctx("0").is_err() && parse_ctx("99999999999").is_err());
        assert!(parse_mem_size("99999999999GiB").unwrap_err().contains("more than any machine"));
        assert!(parse_mem_size("0").is_err());
        assert_eq!(parse_mem_size("300MiB"), Ok(300 << 20));
    }
}
