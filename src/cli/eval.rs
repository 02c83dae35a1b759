//! `selectinfer eval`: score one model file with one method on one task, appending
//! a CSV row.

use std::path::PathBuf;

use std::io::Write;

use anyhow::Context;

use super::generate::ComputeArgs;
use crate::eval::bootstrap::Metric;
use crate::eval::harness::{append_row, run_eval, EvalRequest, Method};
use crate::output::Table;
use crate::tasks::Task;

/// Arguments of `eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// GGUF model file (original, quantized or sliced, as the method requires).
    #[arg(short, long)]
    pub model: PathBuf,
    /// Task.
    #[arg(long, value_enum)]
    pub task: Task,
    /// What the row measures; checked against the file and --compute options.
    #[arg(long, value_enum)]
    pub method: Method,
    /// JSON Lines dataset with the task's fields (default: the bundled file). Its
    /// evaluation split is scored.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Most evaluation examples.
    #[arg(long, value_parser = super::opts::parse_count)]
    pub limit: Option<usize>,
    /// Solved examples (from the profiling split) before each prompt.
    #[arg(long, default_value_t = 0)]
    pub shots: usize,
    /// Wrap each prompt in the model's chat template.
    #[arg(long)]
    pub chat: bool,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    /// CSV file to append the row to (created with a header if new).
    #[arg(long)]
    pub out: PathBuf,
    /// Also write each example's output as JSON Lines here.
    #[arg(long)]
    pub outputs: Option<PathBuf>,
    /// Run capped at this much memory (e.g. 192MiB, 6GiB), page cache included, in a
    /// cgroup v1 memory group (root only); method disk-offload needs a cap below the
    /// model's size. The page cache is dropped first.
    #[arg(long, value_parser = super::opts::parse_mem_size)]
    pub mem_cap: Option<u64>,
    /// Speed and memory only: generate exactly N tokens per prompt, no stop strings,
    /// no scores (for synthetic random-weight models).
    #[arg(long, value_name = "N", value_parser = super::opts::parse_count)]
    pub speed_only: Option<usize>,
    /// Reuse the KV cache of the prefix each prompt shares with the one before (the
    /// shots, the chat template's system text, a paragraph asked about again) and,
    /// computing selectively, the votes of its tokens, as llama-server's prompt
    /// cache does. Equal to a run without it up to rounding (llama.cpp's results
    /// depend on where prompts are cut into batches); the row records it.
    #[arg(long)]
    pub prompt_cache: bool,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

impl EvalArgs {
    /// The evaluation these arguments ask for (the plan's defaults apply where the
    /// model file is read: [`crate::compute::SessionPlan::build`]).
    pub fn request(&self) -> anyhow::Result<EvalRequest> {
        Ok(EvalRequest {
            model: self.model.clone(),
            task: self.task,
            data: self.data.clone().unwrap_or_else(|| PathBuf::from(self.task.bundled_data())),
            limit: self.limit,
            shots: self.shots,
            method: self.method,
            compute: self.compute.request(),
            threads: self.threads.get(),
            chat: self.chat,
            mem_cap: self.mem_cap,
            speed_only: self.speed_only,
            prompt_cache: self.prompt_cache,
        })
    }
}

pub fn run(a: EvalArgs) -> anyhow::Result<()> {
    // Both outputs are checked before the run, and land together or not at all.
    crate::fsutil::prepare_output(&a.out)?;
    if let Some(path) = &a.outputs {
        crate::fsutil::check_output_target(path)?;
    }
    let outcome = run_eval(&a.request()?)?;
    let staged = match &a.outputs {
        Some(path) => {
            let lines: Vec<String> = outcome
                .outputs
                .iter()
                .map(|(id, out)| serde_json::json!({ "id": id, "output": out }).to_string())
                .collect();
            let mut f = crate::fsutil::AtomicFile::create(path).with_context(|| format!("writing {}", path.display()))?;
            f.write_all((lines.join("\n") + "\n").as_bytes()).with_context(|| format!("writing {}", path.display()))?;
            Some(f)
        }
        None => None,
    };
    append_row(&a.out, &outcome.row)?;
    if let Some(f) = staged {
        let path = f.target().to_path_buf();
        f.commit().with_context(|| format!("writing {}", path.display()))?;
    }
    let r = &outcome.row;
    let scores: Vec<String> = Metric::of_task(a.task)
        .iter()
        .filter_map(|&m| r.interval(m).map(|iv| format!("{} {:.2} [{:.2}, {:.2}]", m.label(), iv.point, iv.lo, iv.hi)))
        .collect();
    let mut t = Table::new(["method", "task", "examples", "scores [95% CI]", "decode tok/s", "peak RSS"]);
    t.row([
        r.method.clone(),
        r.task.clone(),
        r.examples.to_string(),
        scores.join(", "),
        format!("{:.1}", r.decode_tps),
        crate::output::format_bytes(r.peak_rss_bytes),
    ]);
    print!("{}", t.to_markdown());
    eprintln!("eval: appended a row to {}", a.out.display());
    Ok(())
}
