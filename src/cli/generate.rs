//! `selectinfer generate -m MODEL -p PROMPT`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, Context};

use crate::compute::{ComputeRequest, Holding, SelectionStats, SessionPlan};
use crate::engine::{GenerateOptions, GenerateStats, LoadOptions, Model, Session, SessionOptions, Token};

/// Arguments of `generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// GGUF model file.
    #[arg(short, long)]
    pub model: PathBuf,
    /// Prompt text.
    #[arg(short, long)]
    pub prompt: String,
    /// Most tokens to generate.
    #[arg(short = 'n', long, default_value_t = 128, value_parser = super::opts::parse_count)]
    pub n_predict: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Wrap the prompt in the model's own chat template as a user turn.
    #[arg(long)]
    pub chat: bool,
    /// Read the weights into memory instead of memory-mapping the file.
    #[arg(long)]
    pub no_mmap: bool,
    /// Keep every weight in the file's layout instead of llama.cpp's repacked one
    /// (as llama.cpp's --no-repack): slower, but evictable under a memory cap.
    /// Default with --compute where the file does not fit the memory this process
    /// may use (its memory group's limit or the machine's), with --layout copy.
    #[arg(long)]
    pub no_repack: bool,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

/// Sampling, threads and context, shared by `generate` and `chat`.
#[derive(Debug, Clone, clap::Args)]
pub struct SamplingArgs {
    /// Sampling temperature, 0 to 100; 0 (the default) is greedy decoding.
    #[arg(long, default_value_t = 0.0, value_parser = super::opts::parse_temp)]
    pub temp: f32,
    /// Seed of the sampler (matters only with --temp above 0).
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    /// Context length in tokens (16 or more).
    #[arg(long, default_value_t = 2048, value_parser = super::opts::parse_ctx)]
    pub ctx: u32,
}

impl SamplingArgs {
    /// Threads to use: the flag, or all cores.
    pub fn threads(&self) -> i32 {
        self.threads.get()
    }

    /// Generation options for at most `max_tokens` tokens.
    pub fn generate_options(&self, max_tokens: usize) -> GenerateOptions {
        GenerateOptions { max_tokens, temperature: self.temp, seed: self.seed, ignore_eog: false }
    }
}

/// Selective computation options, shared by `generate`, `bench` and `chat`.
#[derive(Debug, Clone, clap::Args)]
pub struct ComputeArgs {
    /// phi: share of each sparsified layer's original N neurons that decode computes
    /// (static + dynamic, chosen during each prompt's prefill). Default: every loaded
    /// neuron (dense). Must satisfy static (delta) <= phi <= load (gamma).
    #[arg(long = "compute", value_parser = super::opts::parse_share)]
    pub compute: Option<f64>,
    /// alpha: share of the loaded neurons each prompt token votes for, by |activation|.
    #[arg(long = "token-share", default_value_t = crate::compute::DEFAULT_TOKEN_SHARE, value_parser = super::opts::parse_share)]
    pub token_share: f64,
    /// What each prompt token ranks its neurons by when it votes: |activation| (abs)
    /// or signed activation (signed, as the paper's public code does).
    #[arg(long, value_enum, default_value_t = crate::compute::DEFAULT_VOTE)]
    pub vote: crate::compute::Vote,
    /// After each prompt's prefill, add to every sparsified layer's ffn_down bias the
    /// mean contribution over the prompt's tokens of the loaded neurons decode does
    /// not compute (needs a slice made with --compensate mean or refit).
    #[arg(long)]
    pub decode_bias: bool,
    /// After each prompt's prefill, refit every sparsified layer's computed ffn_down
    /// columns and its bias so that decode's output follows the loaded FFN's over the
    /// prompt's own tokens (its last 512, the last batch, of a longer prompt;
    /// ridge regression; RIDGE scales the penalty on the change,
    /// in units of a computed neuron's summed a^2; large RIDGE = --decode-bias), or
    /// `off`. Needs a slice with an ffn_down bias (--compensate mean or refit).
    /// Default: 1 with --compute on a column-major slice made with --compensate refit
    /// (slice's default), off otherwise and with --decode-bias.
    #[arg(long, value_name = "RIDGE|off", conflicts_with = "decode_bias", value_parser = super::opts::parse_decode_refit)]
    pub decode_refit: Option<super::opts::DecodeRefitArg>,
    /// Ignore the file's static neurons: dynamic only (CoreInfer).
    #[arg(long)]
    pub no_static: bool,
    /// How decode reaches the computed neurons: in-place (the loaded FFN reordered
    /// so that they come first; no extra memory, but a reordered page of a
    /// memory-mapped file becomes anonymous memory) or copy (gathered into a buffer
    /// of phi / gamma of the sparsified FFN bytes each prompt; the file's pages stay
    /// file-backed, so a memory cap can evict those decode never reads). Default: in
    /// place where every sparsified layer allows it, else a copy; `generate` and
    /// `chat` take copy, unrepacked, where the file does not fit the memory they may
    /// use.
    #[arg(long, value_enum)]
    pub layout: Option<crate::compute::Layout>,
    /// Layers to sparsify in a file that is not sliced (CoreInfer), START..END;
    /// default as for `slice`.
    #[arg(long = "compute-layers", value_parser = crate::select::rewrite::parse_layer_range)]
    pub compute_layers: Option<std::ops::Range<usize>>,
}

impl ComputeArgs {
    /// The typed request these options make (the plan's defaults apply where an
    /// option is not given: [`SessionPlan::build`]).
    pub fn request(&self) -> ComputeRequest {
        ComputeRequest {
            compute: self.compute,
            token_share: self.token_share,
            vote: self.vote,
            decode_bias: self.decode_bias,
            decode_refit: self.decode_refit,
            no_static: self.no_static,
            layout: self.layout,
            layers: self.compute_layers.clone(),
            file_tuning: false,
        }
    }
}

/// One generation's outcome, as `--json` prints it.
#[derive(Debug, serde::Serialize)]
struct GenerateRecord {
    model: String,
    text: String,
    prompt_tokens: usize,
    generated_tokens: usize,
    prefill_tps: f64,
    decode_tps: f64,
    threads: i32,
    /// phi, when decode computed selectively.
    compute: Option<f64>,
    /// Per-prompt selection cost and size.
    selection: Option<SelectionStats>,
    /// Tensor bytes of the file.
    weight_bytes: u64,
    /// Whether the weights were memory-mapped.
    mmap: bool,
    /// Whether llama.cpp could repack weights for its CPU kernels (`--no-repack`: false).
    repack: bool,
    /// Resident memory after generation.
    #[serde(flatten)]
    memory: crate::memory::MemorySnapshot,
}

pub fn run(args: GenerateArgs) -> anyhow::Result<()> {
    if args.prompt.is_empty() {
        return Err(anyhow!("the prompt is empty"));
    }
    // How the weights are held is decided before llama.cpp loads them: a file that
    // does not fit the memory this process may use runs the device case.
    let g = crate::gguf::GgufFile::read(&args.model).with_context(|| format!("cannot load {}", args.model.display()))?;
    let holding = Holding::for_file(&args.compute.request().with_file_tuning(), args.no_repack, &g)?;
    let model = Model::load(&args.model, &LoadOptions { mmap: !args.no_mmap, repack: holding.repack.value, ..Default::default() })
        .with_context(|| format!("cannot load {}", args.model.display()))?;
    let threads = args.sampling.threads();
    let tokens = prompt_tokens(&model, &args)?;
    let mut stdout = std::io::stdout().lock();
    let out = generate_streamed(&model, &args, &holding, &tokens, threads, &mut stdout)?;
    if args.json.json {
        print_record(&args, &model, &holding, out, threads, &mut stdout)
    } else {
        print_summary(&out, threads, &mut stdout)
    }
}

/// What one generation made: its text, timings and, under `--compute`, the plan
/// and what its selection cost.
struct Generated {
    text: String,
    stats: GenerateStats,
    selection: Option<SelectionStats>,
    plan: Option<SessionPlan>,
    /// The device case's line, where it applied by default.
    holding: Option<String>,
}

/// The prompt's tokens: as typed, or wrapped in the chat template with `--chat`.
fn prompt_tokens(model: &Model, args: &GenerateArgs) -> anyhow::Result<Vec<Token>> {
    Ok(if args.chat {
        let text = model.apply_chat_template(&[("user", &args.prompt)])?;
        model.tokenize(&text, false, true)
    } else {
        model.tokenize(&args.prompt, true, false)
    })
}

/// Generates from `tokens`, writing each piece to `stdout` as it comes (unless
/// `--json`); dense decode (no `--compute`) runs the plain engine.
fn generate_streamed(
    model: &Model,
    args: &GenerateArgs,
    holding: &Holding,
    tokens: &[Token],
    threads: i32,
    stdout: &mut impl Write,
) -> anyhow::Result<Generated> {
    let session_opts = SessionOptions { n_ctx: args.sampling.ctx, threads, ..Default::default() };
    let opts = args.sampling.generate_options(args.n_predict);
    let mut text = String::new();
    let mut write_err = None;
    let on_text = |piece: &str| {
        text.push_str(piece);
        if args.json.json {
            return true;
        }
        match stdout.write_all(piece.as_bytes()).and_then(|_| stdout.flush()) {
            Ok(()) => true,
            Err(e) => {
                write_err = Some(e);
                false
            }
        }
    };
    // Dense decode (no --compute, no tuned phi in the file) runs the plain engine,
    // on any model llama.cpp reads.
    let selective = args.compute.compute.is_some() || crate::compute::session_plan::tuned_phi(model.gguf()).is_some();
    let plan = selective.then(|| SessionPlan::build(&holding.apply(args.compute.request().with_file_tuning()), model.gguf())).transpose()?;
    let (stats, selection) = match &plan {
        Some(plan) => {
            let (_, stats, sel) = plan.open(model, session_opts)?.generate(tokens, &opts, on_text)?;
            (stats, Some(sel))
        }
        None => {
            let mut s = Session::new(model, session_opts)?;
            (s.generate(tokens, &opts, on_text)?.1, None)
        }
    };
    if let Some(e) = write_err {
        return Err(e).context("writing to stdout");
    }
    Ok(Generated { text, stats, selection, plan, holding: holding.describe() })
}

/// `--json`: one [`GenerateRecord`] line on stdout.
fn print_record(args: &GenerateArgs, model: &Model, holding: &Holding, out: Generated, threads: i32, stdout: &mut impl Write) -> anyhow::Result<()> {
    let compute = out.plan.as_ref().and_then(|p| p.phi);
    let Generated { text, stats, selection, .. } = out;
    let rec = GenerateRecord {
        model: args.model.display().to_string(),
        text,
        prompt_tokens: stats.prompt_tokens,
        generated_tokens: stats.generated_tokens,
        prefill_tps: stats.prefill_tps(),
        decode_tps: stats.decode_tps(),
        threads,
        compute,
        selection,
        weight_bytes: crate::model::ModelInfo::from_gguf(model.gguf())?.total_bytes,
        mmap: !args.no_mmap,
        repack: holding.repack.value,
        memory: crate::memory::MemorySnapshot::now(),
    };
    writeln!(stdout, "{}", serde_json::to_string(&rec)?)?;
    Ok(())
}

/// Without `--json`: ends the streamed text's line, then speeds (and the plan) on stderr.
fn print_summary(out: &Generated, threads: i32, stdout: &mut impl Write) -> anyhow::Result<()> {
    writeln!(stdout)?;
    stdout.flush()?;
    let stats = &out.stats;
    let sel = match (&out.selection, out.plan.as_ref().and_then(|p| p.phi)) {
        (Some(s), Some(phi)) => format!(
            " | compute {phi}: {} of {} loaded neurons in sparsified layers, selection {:.1} ms",
            s.computed_neurons, s.loaded_neurons, s.select_ms
        ),
        _ => String::new(),
    };
    eprintln!(
        "prefill: {} tokens, {:.1} tok/s | decode: {} tokens, {:.1} tok/s | {} threads{sel}",
        stats.prompt_tokens,
        stats.prefill_tps(),
        stats.generated_tokens,
        stats.decode_tps(),
        threads
    );
    if let Some(plan) = &out.plan {
        eprintln!("plan: {}", plan.describe());
    }
    if let Some(h) = &out.holding {
        eprintln!("plan: {h}");
    }
    Ok(())
}
