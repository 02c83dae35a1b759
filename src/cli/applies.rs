//! Options that modify another option apply only with it: each [`MODIFIERS`] entry
//! names a modifier and the options (and, for some, their values) it modifies. A
//! modifier typed without any of its bases is refused with exit status 2 before
//! any work, rather than silently doing nothing. A base with a default value
//! (`bench --compute-list`) is always there. The check reads the parsed command
//! line, so it covers every subcommand that has both options.

use clap::parser::ValueSource;
use clap::ArgMatches;

/// A modifier and what it modifies.
#[derive(Debug, Clone, Copy)]
pub struct Modifier {
    /// Argument id of the modifier.
    pub arg: &'static str,
    /// Argument ids of the options it modifies (any one of them suffices).
    pub bases: &'static [&'static str],
    /// Values of the base it applies to (empty: any value).
    pub values: &'static [&'static str],
}

const fn m(arg: &'static str, bases: &'static [&'static str], values: &'static [&'static str]) -> Modifier {
    Modifier { arg, bases, values }
}

const SELECTIVE: &[&str] = &["compute", "compute_list"];
const SLICING: &[&str] = &["load", "mem_budget"];

/// Every modifier of every subcommand.
pub const MODIFIERS: &[Modifier] = &[
    m("token_share", SELECTIVE, &[]),
    m("vote", SELECTIVE, &[]),
    m("decode_bias", SELECTIVE, &[]),
    m("decode_refit", SELECTIVE, &[]),
    m("no_static", SELECTIVE, &[]),
    m("compute_layers", SELECTIVE, &[]),
    m("random_seed", &["random"], &[]),
    m("budget_floor", &["budget"], &["sensitivity", "output"]),
    m("fit_data", &["compensation"], &["refit-chained", "refit-computed"]),
    m("fit_ctx", &["compensation"], &["refit-chained", "refit-computed"]),
    m("fit_chunks", &["compensation"], &["refit-chained", "refit-computed"]),
    m("fit_compute", &["compensation"], &["refit-computed"]),
    m("fit_token_share", &["compensation"], &["refit-computed"]),
    m("fit_decode_share", &["compensation"], &["refit-computed"]),
    m("static_share", SLICING, &[]),
    m("layers", SLICING, &[]),
    m("down_layout", SLICING, &[]),
    m("compensation", SLICING, &[]),
];

fn typed(m: &ArgMatches, id: &str) -> bool {
    m.try_contains_id(id).unwrap_or(false) && m.value_source(id) == Some(ValueSource::CommandLine)
}

/// Typed, or holding a default value (a flag's default `false` is not there).
fn present(arg: &clap::Arg, m: &ArgMatches) -> bool {
    let id = arg.get_id().as_str();
    typed(m, id) || (arg.get_action().takes_values() && m.try_contains_id(id).unwrap_or(false) && m.value_source(id).is_some())
}

/// The first modifier typed without what it modifies, as a message naming both.
pub fn unapplied(cmd: &clap::Command, m: &ArgMatches) -> Option<String> {
    let name = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id).map_or(id.to_string(), super::paths::flag);
    let arg = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id);
    let defined = |id: &str| arg(id).is_some();
    for x in MODIFIERS.iter().filter(|x| defined(x.arg) && x.bases.iter().any(|b| defined(b))) {
        if !typed(m, x.arg) {
            continue;
        }
        let applies = x.bases.iter().filter(|b| defined(b)).any(|b| {
            let value_ok = x.values.is_empty() || m.get_raw(b).into_iter().flatten().any(|v| x.values.iter().any(|w| v.to_str() == Some(*w)));
            if x.values.is_empty() { arg(b).is_some_and(|a| present(a, m)) } else { typed(m, b) && value_ok }
        });
        if !applies {
            let bases: Vec<String> = x.bases.iter().filter(|b| defined(b)).map(|b| name(b)).collect();
            let with = if x.values.is_empty() { bases.join(" or ") } else { format!("{} {}", bases.join(" or "), x.values.join("|")) };
            return Some(format!("{} applies only with {with}; without it the option would do nothing", name(x.arg)));
        }
    }
    None
}
