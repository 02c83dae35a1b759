//! Which paths of a command line are read and which are written, found from the
//! clap definitions themselves, so a new path option is guarded without new code:
//! every option whose value is a path is an input, except the output options named
//! in [`OUTPUT_ARGS`]. Inputs a command reads without an option (the bundled
//! dataset when --data is left out, an experiment's models and profiles) are added
//! by [`implicit_inputs`]. The check itself is [`crate::fsutil::guard`].

use std::any::TypeId;
use std::path::{Path, PathBuf};

use clap::{ArgMatches, CommandFactory};

use crate::fsutil::guard::{Paths, Written};

/// Argument ids that name outputs, and how each is written. An output whose clap
/// value hint is a folder (`profile -o DIR`) is a folder the command fills.
pub const OUTPUT_ARGS: &[(&str, Written)] =
    &[("output", Written::File), ("out", Written::File), ("outputs", Written::File), ("per_example", Written::File), ("out_dir", Written::Dir), ("work", Written::Dir), ("cache_dir", Written::Cache)];

/// Whether an argument takes a path.
pub fn is_path(arg: &clap::Arg) -> bool {
    arg.get_value_parser().type_id() == TypeId::of::<PathBuf>()
}

/// How an argument is written, if it is an output.
pub fn output_kind(arg: &clap::Arg) -> Option<Written> {
    let (_, how) = OUTPUT_ARGS.iter().find(|(id, _)| arg.get_id() == *id)?;
    Some(if *how == Written::File && arg.get_value_hint() == clap::ValueHint::DirPath { Written::Dir } else { *how })
}

/// The option's name as typed (`--out`, `-m`, or a positional's `<DIR>`).
pub fn flag(arg: &clap::Arg) -> String {
    match (arg.get_long(), arg.get_short()) {
        (Some(l), _) => format!("--{l}"),
        (None, Some(s)) => format!("-{s}"),
        _ => format!("<{}>", arg.get_id().as_str().to_uppercase()),
    }
}

/// Each subcommand level of a parsed command line (`profile`, then `moments`) with
/// its definition.
pub fn levels(matches: &ArgMatches) -> Vec<(clap::Command, ArgMatches)> {
    let mut out = Vec::new();
    let (mut cmd, mut m) = (super::Args::command(), matches.clone());
    while let Some((name, sub)) = m.subcommand() {
        let Some(next) = cmd.find_subcommand(name).cloned() else { break };
        out.push((next.clone(), sub.clone()));
        (cmd, m) = (next, sub.clone());
    }
    out
}

/// Every path of the parsed command line, inputs and outputs.
pub fn declared(matches: &ArgMatches) -> Paths {
    let mut paths = Paths::default();
    for (cmd, sub) in levels(matches) {
        for arg in cmd.get_arguments().filter(|a| is_path(a)) {
            let Ok(Some(values)) = sub.try_get_many::<PathBuf>(arg.get_id().as_str()) else { continue };
            for v in values {
                match output_kind(arg) {
                    Some(how) => paths.output(flag(arg), v, how),
                    None => paths.input(flag(arg), v),
                };
            }
        }
    }
    paths
}

/// Inputs read without an option naming them.
pub fn implicit_inputs(command: &super::Command, paths: &mut Paths) {
    use super::Command as C;
    let mut bundled = |what: &str, p: &str| {
        paths.input(what, crate::fsutil::bundled(Path::new(p)));
    };
    match command {
        C::Eval(a) if a.data.is_none() => bundled("(the bundled dataset)", a.task.bundled_data()),
        C::Pair(a) if a.data.is_none() => bundled("(the bundled dataset)", a.task.bundled_data()),
        C::Tune(a) if a.data.is_none() => bundled("(the bundled dataset)", a.task.bundled_data()),
        C::Slice(a) if a.fit_data.is_none() && a.task.is_some() => a.task.into_iter().flat_map(|t| t.profiling_data()).for_each(|p| bundled("(the bundled profiling text)", p)),
        C::Profile(a) if a.action.is_none() && a.run.data.is_none() => a.run.task.into_iter().flat_map(|t| t.profiling_data()).for_each(|p| bundled("(the bundled dataset)", p)),
        C::Perplexity(a) if a.data.is_none() => bundled("(the bundled text)", a.task.map_or("data/wikitext2_raw_test.txt", |t| t.bundled_data())),
        C::Experiment(a) => {
            // An unreadable file is reported by the command itself.
            let Ok(e) = crate::experiment::config::Experiment::read(&a.file) else { return };
            for m in &e.models {
                paths.input("(an experiment profile)", &m.profile);
                if let Some(s) = &m.source {
                    paths.input("(an experiment model)", s);
                }
            }
            for t in &e.tasks {
                let data = t.data.clone().unwrap_or_else(|| PathBuf::from(t.task.bundled_data()));
                paths.input("(an experiment dataset)", crate::fsutil::bundled(&data));
            }
            if a.out_dir.is_none() {
                paths.output("(results folder)", crate::experiment::default_results_dir(&a.file), Written::Dir);
            }
        }
        _ => {}
    }
}
