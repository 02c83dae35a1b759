//! `selectinfer`: parse the command line, run it, map the outcome to an exit code
//! (0 success, 1 error, 2 usage error: from the parser, or an output that would
//! overwrite an input).

use std::process::ExitCode;

fn main() -> ExitCode {
    // Before any thread starts: Ctrl-C and SIGTERM remove temporary files and memory groups.
    selectinfer::fsutil::install_interrupt_cleanup();
    let (args, paths) = selectinfer::cli::parse();
    match selectinfer::cli::run(args, paths) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // A closed stdout (`selectinfer generate ... | head`) is not a failure.
            if err.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)) {
                return ExitCode::SUCCESS;
            }
            eprintln!("selectinfer: error: {err:#}");
            if err.chain().any(|e| e.is::<selectinfer::fsutil::guard::UsageError>()) {
                return ExitCode::from(2);
            }
            ExitCode::FAILURE
        }
    }
}
