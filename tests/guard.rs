//! Every output option of every subcommand pointed at each of the command's inputs
//! (the same path, a symlink to it, a hard link to it, a `..` path to it) and at
//! its other outputs: each must exit with status 2 before any work, name both
//! options, and leave every file byte for byte as it was. The cases come from the
//! clap definitions ([`selectinfer::cli::paths`]), so a new path option is covered
//! without a new test.

mod common;

use std::path::Path;
use std::process::Command;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;
use selectinfer::cli::applies::MODIFIERS;
use selectinfer::cli::paths::{flag, is_path, output_kind};
use selectinfer::cli::Args;

/// A command line: the subcommand path, then (argument, value) pairs.
#[derive(Clone, Debug)]
struct Line {
    path: Vec<String>,
    values: Vec<(clap::Arg, String)>,
}

impl Line {
    fn render(&self) -> Vec<String> {
        let mut out = self.path.clone();
        let mut positional: Vec<(usize, String)> = Vec::new();
        for (a, v) in &self.values {
            match (a.get_long(), a.get_short(), a.get_index()) {
                (Some(l), _, _) => out.push(format!("--{l}")),
                (None, Some(s), _) => out.push(format!("-{s}")),
                (_, _, Some(i)) => positional.push((i, v.clone())),
                _ => panic!("{a:?} has neither a name nor a position"),
            }
            if a.get_index().is_none() && !v.is_empty() {
                out.push(v.clone());
            }
        }
        positional.sort();
        out.extend(positional.into_iter().map(|(_, v)| v));
        out
    }
}

/// A value clap accepts for `arg` (not a path; empty for a flag).
fn some_value(arg: &clap::Arg) -> String {
    if !arg.get_action().takes_values() {
        return String::new();
    }
    arg.get_possible_values().first().map_or_else(|| "1".into(), |v| v.get_name().to_string())
}

/// Adds the arguments clap says are missing until it accepts the line; None when
/// the arguments it needs conflict with one typed (no such command line exists).
fn complete(cmd: &clap::Command, mut line: Line, file_for: &dyn Fn(&clap::Arg) -> String) -> Option<Line> {
    for _ in 0..8 {
        let mut argv = vec!["selectinfer".to_string()];
        argv.extend(line.render());
        let Err(e) = Args::command().try_get_matches_from(&argv) else { return Some(line) };
        if e.kind() == ErrorKind::ArgumentConflict {
            return None;
        }
        assert_eq!(e.kind(), ErrorKind::MissingRequiredArgument, "{argv:?}: {e}");
        let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg) else { panic!("{e}") };
        for m in missing {
            let arg = cmd
                .get_arguments()
                .find(|a| {
                    let name = m.split([' ', '=']).next().unwrap_or("");
                    name == flag(a) || name.trim_matches(['<', '>']).eq_ignore_ascii_case(a.get_id().as_str())
                })
                .unwrap_or_else(|| panic!("no argument {m} in {}", cmd.get_name()))
                .clone();
            let v = if is_path(&arg) { file_for(&arg) } else { some_value(&arg) };
            line.values.push((arg, v));
        }
    }
    panic!("{:?} never parses", line.render())
}

/// The line with what each of its modifiers modifies ([`MODIFIERS`]), so that it
/// reaches the output check.
fn with_bases(cmd: &clap::Command, mut line: Line) -> Line {
    let typed: Vec<String> = line.values.iter().map(|(a, _)| a.get_id().to_string()).collect();
    for x in MODIFIERS.iter().filter(|x| typed.iter().any(|t| t == x.arg) && !x.values.is_empty()) {
        if let Some(b) = cmd.get_arguments().find(|a| a.get_id() == x.bases[0]) {
            line.values.push((b.clone(), x.values[0].to_string()));
        }
    }
    line
}

/// Every runnable (sub)command with its path.
fn commands() -> Vec<(Vec<String>, clap::Command)> {
    let mut out = Vec::new();
    let mut root = Args::command();
    root.build();
    for sub in root.get_subcommands() {
        out.push((vec![sub.get_name().to_string()], sub.clone()));
        for s in sub.get_subcommands() {
            out.push((vec![sub.get_name().to_string(), s.get_name().to_string()], s.clone()));
        }
    }
    out
}

#[test]
fn every_output_pointed_at_an_input_or_another_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("sub")).unwrap();
    let input = |a: &clap::Arg| {
        let p = d.join(format!("in-{}", a.get_id()));
        if !p.exists() {
            std::fs::write(&p, format!("input of {}\n", a.get_id())).unwrap();
        }
        p.display().to_string()
    };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (path, cmd) in commands() {
        let args: Vec<clap::Arg> = cmd.get_arguments().filter(|a| is_path(a)).cloned().collect();
        let outputs: Vec<&clap::Arg> = args.iter().filter(|a| output_kind(a).is_some()).collect();
        for o in &outputs {
            for i in args.iter().filter(|a| a.get_id() != o.get_id()) {
                let target = input(i);
                let aliases = [
                    target.clone(),
                    format!("{}/sub/../{}", d.display(), Path::new(&target).file_name().unwrap().to_string_lossy()),
                    d.join(format!("sym-{}", i.get_id())).display().to_string(),
                    d.join(format!("hard-{}", i.get_id())).display().to_string(),
                ];
                let _ = std::os::unix::fs::symlink(&target, &aliases[2]);
                let _ = std::fs::hard_link(&target, &aliases[3]);
                for alias in aliases {
                    let line = Line { path: path.clone(), values: vec![(i.clone(), target.clone()), ((*o).clone(), alias.clone())] };
                    // (--kl-reference, an input, cannot go with --answers, which --per-example needs.)
                    let Some(line) = complete(&cmd, line, &|a| input(a)) else { continue };
                    let line = with_bases(&cmd, line);
                    let before = common::files_under(d);
                    let out = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(line.render()).current_dir(d).output().unwrap();
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    cases += 1;
                    let named = stderr.contains(&flag(o)) && stderr.contains("nothing was written");
                    if out.status.code() != Some(2) || !named || common::files_under(d) != before {
                        failures.push(format!("{:?}: exit {:?}, {}", line.render(), out.status.code(), stderr.trim()));
                    }
                }
            }
        }
    }
    assert!(cases > 40, "only {cases} cases: are the output options still found?");
    assert!(failures.is_empty(), "{} of {cases} cases not refused:\n{}", failures.len(), failures.join("\n"));
}

/// Runs `args` in `dir` and returns what is wrong: not exit 2, `needle` not in
/// stderr, or a file of `dir` changed.
fn refused(dir: &Path, args: &[String], needle: &str) -> Option<String> {
    let before = common::files_under(dir);
    let out = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(args).current_dir(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ok = out.status.code() == Some(2) && stderr.contains(needle) && common::files_under(dir) == before;
    (!ok).then(|| format!("{args:?}: exit {:?}, files changed: {}, {}", out.status.code(), common::files_under(dir) != before, stderr.trim()))
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

/// The cases: each output over an input of the same command.
#[test]
fn the_reported_overwrites_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = |n: &str| d.join(n).display().to_string();
    std::fs::create_dir_all(d.join("prof/moments")).unwrap();
    std::fs::create_dir_all(d.join("prof/sensitivity")).unwrap();
    std::fs::create_dir_all(d.join("exp")).unwrap();
    for (f, text) in [("m.gguf", "model"), ("data.jsonl", "{}\n"), ("prof/task-qa.json", "{}"), ("prof/model.json", "{}"), ("prof/moments/qa.bin", "x"), ("prof/sensitivity/qa.json", "{}"), ("r.csv", "a\n")] {
        std::fs::write(d.join(f), text).unwrap();
    }
    std::fs::write(d.join("exp/e.yaml"), "models: []\ntasks: []\nmethods: []\n").unwrap();
    let bundled = common_bundled_qa();
    let eval = |extra: &[&str]| [strings(&["eval", "-m", &p("m.gguf"), "--task", "qa", "--method", "reference"]), strings(extra)].concat();
    let slice = |o: &str| strings(&["slice", "-m", &p("m.gguf"), "--profile", &p("prof"), "--task", "qa", "-o", &p(o)]);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (eval(&["--out", &p("r.csv"), "--outputs", &p("m.gguf")]), "--outputs"),
        (eval(&["--data", &p("data.jsonl"), "--out", &p("r.csv"), "--outputs", &p("data.jsonl")]), "is the input --data"),
        (eval(&["--out", &p("r.csv"), "--outputs", &p("r.csv")]), "is also the output --out"),
        (eval(&["--out", &p("new.csv"), "--outputs", &bundled]), "the bundled dataset"),
        (slice("prof/task-qa.json"), "is inside the input folder --profile"),
        (slice("prof/model.json"), "is inside the input folder --profile"),
        (slice("prof/moments/qa.bin"), "is inside the input folder --profile"),
        (slice("prof/moments/new.gguf"), "is inside the input folder --profile"),
        (strings(&["profile", "-m", &p("m.gguf"), "--task", "qa", "-o", d.to_str().unwrap()]), "holds the input --model"),
        (strings(&["experiment", &p("exp/e.yaml"), "--dry-run", "--out-dir", &p("exp")]), "holds the input <FILE>"),
        (strings(&["chat", "-m", &p("m.gguf"), "--profile", &p("prof"), "--cache-dir", &p("prof/slices")]), "is inside the input folder --profile"),
        (strings(&["perplexity", "-m", &p("m.gguf"), "--out", &p("m.gguf")]), "is the input --model"),
        (strings(&["profile", "sensitivity", &p("prof"), "-m", &p("m.gguf"), "--task", "qa", "--data", &p("prof/sensitivity/qa.json")]), "holds the input --data"),
        (strings(&["convert", &p("m.gguf"), "--to", "f16", "-o", &p("prof/../m.gguf")]), "is the input"),
    ];
    let failures: Vec<String> = cases.iter().filter_map(|(args, needle)| refused(d, args, needle)).collect();
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

fn common_bundled_qa() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(selectinfer::tasks::Task::Qa.bundled_data()).display().to_string()
}

/// A value clap accepts for `arg` on `cmd`'s line `line`.
fn accepted_value(line: &Line, arg: &clap::Arg, file: &str) -> Option<String> {
    if !arg.get_action().takes_values() {
        return Some(String::new());
    }
    let mut candidates: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
    if is_path(arg) {
        candidates.push(file.to_string());
    }
    candidates.extend(["0.5", "1", "0..1", "64"].map(String::from));
    candidates.into_iter().find(|v| {
        let mut l = line.clone();
        l.values.push((arg.clone(), v.clone()));
        let mut argv = vec!["selectinfer".to_string()];
        argv.extend(l.render());
        Args::command().try_get_matches_from(&argv).is_ok()
    })
}

/// Every modifier of `applies::MODIFIERS`, typed without what it modifies in every
/// subcommand that has both, is refused with exit 2 and both named; typed with it,
/// the line passes the check.
#[test]
fn every_modifier_without_its_base_is_refused() {
    use selectinfer::cli::applies::unapplied;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each path option its own file (outputs: a file not there yet), so that no
    // output is refused for being an input.
    let file_for = |a: &clap::Arg| {
        let (prefix, exists) = if output_kind(a).is_some() { ("out", false) } else { ("in", true) };
        let p = d.join(format!("{prefix}-{}", a.get_id()));
        if exists {
            std::fs::write(&p, "x").unwrap();
        }
        p.display().to_string()
    };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (path, cmd) in commands() {
        let arg = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id).cloned();
        for x in MODIFIERS {
            let (Some(modifier), bases) = (arg(x.arg), x.bases.iter().filter_map(|b| arg(b)).collect::<Vec<_>>()) else { continue };
            if bases.is_empty() || (x.values.is_empty() && bases.iter().any(|b| !b.get_default_values().is_empty())) {
                continue;
            }
            let base = Line { path: path.clone(), values: Vec::new() };
            let base = complete(&cmd, base, &file_for).expect("a command line of required arguments alone parses");
            let value = accepted_value(&base, &modifier, &file_for(&modifier)).unwrap_or_else(|| panic!("no value of {} parses", flag(&modifier)));
            let mut line = base.clone();
            line.values.push((modifier.clone(), value));
            cases += 1;
            if let Some(why) = refused(d, &line.render(), "applies only with") {
                failures.push(why);
            }
            // With its base (the first value it applies to), the line passes.
            let b = &bases[0];
            let with = match x.values.first() {
                Some(v) => Some(v.to_string()),
                None => accepted_value(&line, b, &file_for(b)),
            };
            let mut ok = line.clone();
            ok.values.push((b.clone(), with.unwrap_or_default()));
            let mut argv = vec!["selectinfer".to_string()];
            argv.extend(ok.render());
            let matches = Args::command().try_get_matches_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let sub = path.iter().fold(matches, |m, name| m.subcommand_matches(name).unwrap().clone());
            if let Some(why) = unapplied(&cmd, &sub) {
                failures.push(format!("{argv:?} refused with its base: {why}"));
            }
        }
    }
    assert!(cases >= 20, "only {cases} cases: is MODIFIERS still read?");
    assert!(failures.is_empty(), "{} of {cases} cases:\n{}", failures.len(), failures.join("\n"));
}
