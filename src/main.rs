//! `selectinfer`: parse the command line, run it, map the outcome to an exit code
//! (0 success, 1 error, 2 usage error from the parser).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before any thread starts: Ctrl-C and SIGTERM remove temporary files and memory groups.
    selectinfer::fsutil::install_interrupt_cleanup();
    let args = selectinfer::cli::Args::parse();
    match selectinfer::cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // A closed stdout (`selectinfer generate ... | head`) is not a failure.
            if err.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)) {
                return ExitCode::SUCCESS;
            }
            eprintln!("selectinfer: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
