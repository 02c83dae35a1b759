//! The command line: argument definitions (clap derive; each field's doc comment is
//! its help text) and one `run` function per subcommand.

mod bench;
mod bench_processes;
mod chat;
mod convert;
mod eval;
mod experiment;
pub mod generate;
mod inspect;
mod answers;
pub mod applies;
pub mod opts;
mod pair;
pub mod paths;
mod perplexity;
mod profile;
mod slice;
mod synth;
mod tune;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// What `selectinfer --help` says after the list of commands.
const AFTER_HELP: &str = "\
SelectInfer in three steps, on an F16 model (selectinfer convert MODEL --to f16 -o M.F16.gguf):
  selectinfer profile -m M.F16.gguf --task qa -o profiles/M       rank FFN neurons (once per task)
  selectinfer slice -m M.F16.gguf --profile profiles/M --task qa --load 0.7 -o M.qa.gguf
  selectinfer generate -m M.qa.gguf -p PROMPT --compute 0.4       decode computing 40% of the neurons

Each command's --help lists its options and defaults; docs/commands.md in the repository
says what each does. Exit status: 0 on success, 1 on an error, 2 on a usage error.";

/// Load and compute only the FFN neurons that matter (SelectInfer over llama.cpp).
#[derive(Debug, Parser)]
#[command(name = "selectinfer", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Args {
    /// Print llama.cpp's own log to stderr.
    #[arg(long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show a model file's architecture, FFN widths and where its bytes go.
    Inspect(inspect::InspectArgs),
    /// Generate text with a model (greedy by default), streaming it, then print speed.
    Generate(generate::GenerateArgs),
    /// Convert a model to another weight type with llama.cpp's quantizer.
    Convert(convert::ConvertArgs),
    /// Record FFN activation statistics of a task's prompts; `merge` ranks neurons,
    /// `overlap` compares tasks.
    Profile(profile::ProfileArgs),
    /// Selective loading: write a GGUF keeping gamma of each layer's FFN neurons
    /// (delta from the task ranking first, then model-wide ranking).
    Slice(slice::SliceArgs),
    /// Prefill and decode speed per computed share phi, with the ideal speedup
    /// from bytes read per token.
    Bench(bench::BenchArgs),
    /// Score a model file with one method on a task's evaluation split; appends a CSV row.
    Eval(eval::EvalArgs),
    /// Run an experiments/*.yaml reproduction (resumable), writing
    /// results/NAME/results.csv, README.md and plots.
    Experiment(experiment::ExperimentArgs),
    /// Paired difference of two runs' answers on the same examples (two `eval
    /// --outputs` files), every metric with its 95% interval.
    Pair(pair::PairArgs),
    /// Perplexity of a text (default: wikitext-2 test), chunked as llama-perplexity does.
    Perplexity(perplexity::PerplexityArgs),
    /// Streaming chat with selective loading and computation (reads turns from
    /// stdin when it is not a terminal).
    Chat(chat::ChatArgs),
    /// Write a random-weight GGUF with a real model's dimensions (speed and memory
    /// benchmarks only; the weights are synthetic).
    Synth(synth::SynthArgs),
    /// Measure a file's speed / memory / quality frontier for one task and write
    /// the slice that meets your limits (memory, speedup, loss).
    Tune(tune::TuneArgs),
    /// Compare a tune's ranking of its points (KL on the profiling split) with an
    /// experiment's task scores at the same points (Spearman, with its interval).
    TuneCheck(tune::TuneCheckArgs),
}

/// Parses the command line (a usage error exits with status 2, as clap does, and so
/// does a modifier without what it modifies, [`applies`]), with the paths it names
/// ([`paths::declared`]).
pub fn parse() -> (Args, crate::fsutil::guard::Paths) {
    let matches = Args::command().get_matches();
    for (mut cmd, m) in paths::levels(&matches) {
        if let Some(why) = applies::unapplied(&cmd, &m) {
            cmd.error(clap::error::ErrorKind::ArgumentConflict, why).exit();
        }
    }
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    (args, paths::declared(&matches))
}

/// Runs one parsed command line, after refusing any output that would overwrite
/// one of its inputs (`paths`, with the inputs it reads without naming them).
pub fn run(args: Args, mut paths: crate::fsutil::guard::Paths) -> anyhow::Result<()> {
    crate::engine::set_verbose(args.verbose);
    paths::implicit_inputs(&args.command, &mut paths);
    paths.check()?;
    match args.command {
        Command::Inspect(a) => inspect::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Convert(a) => convert::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Slice(a) => slice::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Synth(a) => synth::run(a),
        Command::Chat(a) => chat::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Perplexity(a) => perplexity::run(a),
        Command::Pair(a) => pair::run(a),
        Command::Experiment(a) => experiment::run(a),
        Command::Tune(a) => tune::run(a),
        Command::TuneCheck(a) => tune::check(a),
    }
}
