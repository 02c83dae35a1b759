//! The README's "Run it on your own model" commands, run as written: the first
//! ```sh block under that heading is read from README.md, `model.gguf` is a tiny
//! random-weight llama model copied into an empty folder, and each line runs there
//! with this build's `selectinfer`, in order. Each must exit 0 and leave the file or
//! folder it names with `-o` (generate must print its speed line). Nothing is added to the
//! commands: a README edit that breaks one, or a default that makes one fail on a
//! fresh folder, fails here.

mod common;

use std::path::Path;
use std::process::Command;

use selectinfer::synth::SynthArch;

const HEADING: &str = "## Run it on your own model";
const PLACEHOLDER: &str = "model.gguf";

/// The lines of the first ```sh block after `heading`.
fn first_sh_block_after(text: &str, heading: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| l.trim() != heading).skip(1);
    let mut block = Vec::new();
    for l in lines.by_ref() {
        assert!(!l.starts_with("## "), "no ```sh block under {heading} before the next section");
        if l.trim() == "```sh" {
            break;
        }
    }
    for l in lines {
        if l.trim_start().starts_with("```") {
            return block;
        }
        let l = l.trim();
        if !l.is_empty() && !l.starts_with('#') {
            block.push(l.to_string());
        }
    }
    panic!("the ```sh block under {heading} is not closed");
}

/// A command line split into words as the shell would for what the README uses:
/// blanks separate words, double or single quotes group them. Anything the shell
/// would expand (`$`, backticks, pipes, redirections, globs) is refused, so the test
/// runs exactly what a reader types.
fn words(line: &str) -> Vec<String> {
    assert!(!line.contains(['$', '`', '|', '>', '<', ';', '&', '*', '?', '\\']), "{line}: the test runs plain commands only");
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "{line}: unclosed quote");
    out.extend(word);
    out
}

#[test]
fn the_word_splitter_reads_quotes() {
    assert_eq!(words(r#"selectinfer generate -m a.gguf -p "The capital is" -n 'x y'"#), ["selectinfer", "generate", "-m", "a.gguf", "-p", "The capital is", "-n", "x y"]);
    let text = "# t\n## Run it on your own model\n\ntext\n```sh\nselectinfer a\n\n# note\nselectinfer b\n```\n```sh\nselectinfer c\n```\n";
    assert_eq!(first_sh_block_after(text, HEADING), ["selectinfer a", "selectinfer b"]);
}

#[test]
fn the_readme_commands_on_your_own_model_run_as_written() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let commands = first_sh_block_after(&readme, HEADING);
    assert!(commands.len() >= 3, "expected profile, slice and a run under {HEADING}, found {commands:?}");
    assert!(commands.iter().any(|c| c.contains(PLACEHOLDER)), "no command names {PLACEHOLDER}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::tiny_model(SynthArch::Llama), dir.path().join(PLACEHOLDER)).unwrap();
    for line in &commands {
        let w = words(line);
        assert_eq!(w[0], "selectinfer", "{line}: every command of the block runs selectinfer");
        let start = std::time::Instant::now();
        let o = Command::new(env!("CARGO_BIN_EXE_selectinfer")).args(&w[1..]).current_dir(dir.path()).output().unwrap();
        let (stdout, stderr) = common::text(&o);
        assert!(o.status.success(), "{line}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", o.status);
        eprintln!("{line}: {:.1} s", start.elapsed().as_secs_f64());
        if let Some(i) = w.iter().position(|a| a == "-o" || a == "--output") {
            let out = dir.path().join(&w[i + 1]);
            assert!(out.exists(), "{line}: exited 0 but wrote no {}", out.display());
            if out.is_dir() {
                assert!(std::fs::read_dir(&out).unwrap().next().is_some(), "{line}: {} is empty", out.display());
            } else {
                assert!(out.metadata().unwrap().len() > 0, "{line}: {} is empty", out.display());
            }
        }
        if w[1] == "generate" {
            // Random weights may generate nothing printable; the speed line says it ran.
            assert!(stderr.contains("decode:"), "{line}: no speed line\nstderr:\n{stderr}");
        }
    }
}
