//! `selectinfer chat`: streaming chat with selective loading and computation.
//!
//! Each user turn is rendered with the model's chat template over the whole
//! conversation; the tokens the KV cache already holds are kept and only the new
//! suffix is decoded. That prefill selects the turn's dynamic neurons (with
//! `--compute`), and the answer streams as it is decoded.

use std::io::{BufRead, IsTerminal, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::generate::{ComputeArgs, SamplingArgs};
use crate::compute::{Holding, SelectionStats, SelectiveSession, SessionPlan};
use crate::engine::{GenerateOptions, GenerateStats, LoadOptions, Model, SessionOptions, Token};
use crate::memory::{trim_heap, MemorySnapshot};
use crate::model::ModelInfo;
use crate::output::format_bytes;
use crate::select::budget::choose_load;
use crate::select::variant::Compensation;
use crate::select::{slice_model_with, SliceMeta, SliceRequest, SliceSource};
use crate::tasks::Task;
use crate::tune::frontier::Limits;
use crate::tune::DEFAULT_MAX_LOSS;

/// Arguments of `chat`.
#[derive(Debug, Clone, clap::Args)]
pub struct ChatArgs {
    /// GGUF model: a full model (sliced on the fly with --load or --mem-budget) or
    /// an already sliced file.
    #[arg(short, long)]
    pub model: PathBuf,
    /// Profile directory of the model (needed to slice).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Base task whose ranking gives the static neurons; /task switches it.
    #[arg(long, value_enum)]
    pub task: Option<Task>,
    /// gamma: loaded share of each sparsified layer (slices the model, cached).
    #[arg(long = "load", value_parser = super::opts::parse_share)]
    pub load: Option<f64>,
    /// delta: static share (from the task ranking).
    #[arg(long = "static", default_value_t = 0.3, value_parser = super::opts::parse_static_share)]
    pub static_share: f64,
    /// Sparsified layers START..END (default as for `slice`).
    #[arg(long, value_parser = crate::select::rewrite::parse_layer_range)]
    pub layers: Option<Range<usize>>,
    /// Bytes allowed for weights + KV cache (e.g. 300MiB): picks the largest gamma
    /// that fits and slices (or reuses a cached slice). The accounting is in docs/commands.md (chat).
    /// The budget bounds the process's peak resident memory: after loading, a
    /// warm-up prefill of a full batch measures it, and gamma is chosen again
    /// with the measured runtime overhead (compute buffers, the process) until it
    /// fits.
    #[arg(long, value_parser = super::opts::parse_mem_size)]
    pub mem_budget: Option<u64>,
    /// How slices made by chat store ffn_down (see `slice --down-layout`). Default
    /// `neurons` on CPU builds: --compute then reorders the loaded weights in place,
    /// with no copy that the memory budget would have to hold.
    #[arg(long, value_enum, default_value_t = if cfg!(feature = "cuda") { crate::select::DownLayout::Columns } else { crate::select::DownLayout::Neurons })]
    pub down_layout: crate::select::DownLayout,
    /// Compensation of the neurons slices made by chat drop (see `slice
    /// --compensate`). Default: refit on llama, gemma3, qwen2 and qwen3 models when the task's
    /// moments are in the profile (`profile moments`, measured beforehand, as the
    /// profile is), none otherwise (with a note). An explicit refit measures them.
    #[arg(long = "compensate", value_enum)]
    pub compensation: Option<Compensation>,
    /// Run the point `selectinfer tune` chose for --task, from the frontier its work
    /// folder holds (nothing is measured again): the fastest measured point within
    /// --mem-budget (checked again after loading, with a full KV cache),
    /// --min-speedup and --max-loss. Loads that point's slice and computes its phi.
    #[arg(long, requires = "task", conflicts_with_all = ["load", "compute", "layers", "compensation"])]
    pub tuned: bool,
    /// The tune's work folder (default: FILE.tune-TASK beside the file).
    #[arg(long, requires = "tuned", value_hint = clap::ValueHint::DirPath)]
    pub tune_work: Option<PathBuf>,
    /// With --tuned: least decode speedup over the file as it is.
    #[arg(long, requires = "tuned", value_parser = super::opts::parse_positive)]
    pub min_speedup: Option<f64>,
    /// With --tuned: most mean KL from the file as it is, nats per answer token
    /// (default: tune's, 0.15).
    #[arg(long, requires = "tuned", value_parser = super::opts::parse_positive)]
    pub max_loss: Option<f64>,
    /// Where slices made by chat are cached.
    #[arg(long, default_value = "models/slices")]
    pub cache_dir: PathBuf,
    /// Most tokens per answer.
    #[arg(short = 'n', long, default_value_t = 256, value_parser = super::opts::parse_count)]
    pub max_tokens: usize,
    /// --ctx also sizes the KV cache in the --mem-budget accounting.
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

/// Longest line read as one turn.
const MAX_TURN_BYTES: usize = 256 * 1024;

const HELP: &str = "commands: /stats (settings and last turn's speed), /reset (forget the conversation), \
/task qa|translate|summarize (switch the base profile: re-slices or reuses a cached slice), /help, /quit; Ctrl-D exits";

/// What ended a chat over one loaded model.
enum Next {
    Quit,
    SwitchTask(Task),
}

pub fn run(a: ChatArgs) -> anyhow::Result<()> {
    if a.tuned {
        return run_tuned(a);
    }
    if let Some(load) = a.load {
        anyhow::ensure!(a.static_share <= load, "--static (delta) {} exceeds --load (gamma) {load}; delta is a part of gamma", a.static_share);
    }
    let mut task = a.task;
    let mut messages: Vec<(String, String)> = Vec::new();
    loop {
        let (model, holding) = load_within_budget(&a, task)?;
        if let Some(line) = holding.describe() {
            eprintln!("chat: {line}");
        }
        let held = ChatArgs { compute: ComputeArgs { layout: holding.layout.value, ..a.compute.clone() }, ..a.clone() };
        match chat_with(&held, &model, &mut messages)? {
            Next::Quit => return Ok(()),
            Next::SwitchTask(t) => {
                let given_sliced = model.path() == a.model && SliceMeta::from_gguf(model.gguf())?.is_some();
                if a.profile.is_none() || given_sliced {
                    eprintln!("chat: /task needs --profile and a full model to slice");
                    continue;
                }
                task = Some(t);
                eprintln!("chat: base task now {t}; the conversation is kept and re-read");
            }
        }
    }
}

/// `--tuned`: the base task's point from its tune's frontier; /task switches to
/// the point of another task's tune, when there is one.
fn run_tuned(a: ChatArgs) -> anyhow::Result<()> {
    let limits = Limits { mem_budget: a.mem_budget, min_speedup: a.min_speedup, max_loss: a.max_loss.unwrap_or(DEFAULT_MAX_LOSS) };
    let mut task = a.task.context("--tuned needs --task")?;
    let mut c = crate::tune::cached::choose(&a.model, task, a.tune_work.as_deref(), &limits)?;
    let mut messages: Vec<(String, String)> = Vec::new();
    loop {
        eprintln!(
            "chat: tuned point {} for {task} ({}): decode {:.2}x the file, KL {:.4}, peak RSS {} as tuned; {}",
            c.point(),
            c.work.display(),
            c.measured.speedup,
            c.measured.quality.kl,
            format_bytes(c.measured.peak_rss_bytes),
            c.file.display()
        );
        let mut b = ChatArgs { model: c.file.clone(), mem_budget: None, tuned: false, ..a.clone() };
        b.compute.compute = c.point().compute;
        b.compute.no_static = c.point().no_static;
        let model = Model::load(&b.model, &LoadOptions::default()).with_context(|| format!("cannot load {}", b.model.display()))?;
        if let Some(budget) = a.mem_budget {
            let (_, predicted) = full_cache_peak(&b, &model)?;
            anyhow::ensure!(
                predicted <= budget,
                "the tuned point {} needs {} with a full KV cache at --ctx {}, over --mem-budget {}; give a smaller --ctx or --mem-budget to choose a smaller point",
                c.point(),
                format_bytes(predicted),
                b.sampling.ctx,
                format_bytes(budget)
            );
        }
        match chat_with(&b, &model, &mut messages)? {
            Next::Quit => return Ok(()),
            // The switch's choice is kept, not made again (it hashes the file).
            Next::SwitchTask(t) => match crate::tune::cached::choose(&a.model, t, a.tune_work.as_deref(), &limits) {
                Ok(next) => {
                    (task, c) = (t, next);
                    eprintln!("chat: base task now {t}; the conversation is kept and re-read");
                }
                Err(e) => eprintln!("chat: {e:#}; staying with {task}"),
            },
        }
    }
}

/// Loads the model (or its slice). With --mem-budget, measures the peak resident
/// memory of loading it and prefilling one full batch, and while that exceeds the
/// budget, chooses gamma again for the budget less the measured overhead over the
/// accounted weights + KV cache (at most four rounds).
///
/// Without a budget, a file that does not fit the memory this process may use runs
/// the device case ([`Holding`]); with one, the chosen slice fits it.
fn load_within_budget(a: &ChatArgs, task: Option<Task>) -> anyhow::Result<(Model, Holding)> {
    // The reservation that fitted in an earlier run with these settings, if any,
    // is made from the start (kept beside the cached slices).
    let memo = a.mem_budget.map(|_| runtime_memo(a));
    let mut overhead = memo.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).and_then(|t| t.trim().parse().ok()).unwrap_or(0u64);
    for _ in 0..4 {
        let path = resolve_model(a, task, overhead)?;
        let _ = crate::memory::reset_peak_rss();
        let request = a.compute.request().with_file_tuning();
        let holding = match a.mem_budget {
            None => Holding::for_file(&request, false, &crate::gguf::GgufFile::read(&path).with_context(|| format!("cannot load {}", path.display()))?)?,
            Some(_) => crate::compute::session_plan::decide_holding(request.layout, false, false, 0, None),
        };
        let model = Model::load(&path, &LoadOptions { repack: holding.repack.value, ..Default::default() }).with_context(|| format!("cannot load {}", path.display()))?;
        let Some(budget) = a.mem_budget else { return Ok((model, holding)) };
        let (runtime, predicted) = full_cache_peak(a, &model)?;
        if predicted <= budget {
            // Remember the reservation that fitted: the next run with these
            // settings starts from it, chooses the same gamma and reuses the slice.
            if let Some(p) = &memo {
                let _ = std::fs::create_dir_all(&a.cache_dir).and_then(|_| crate::fsutil::write_atomic(p, overhead.to_string().as_bytes()));
            }
            return Ok((model, holding));
        }
        if SliceMeta::from_gguf(model.gguf())?.is_some() && path == a.model {
            bail!("{} needs {} at its peak with a full KV cache, over the budget of {}", path.display(), format_bytes(predicted), format_bytes(budget));
        }
        // The next round reserves what this one measured beyond the accounting,
        // plus 1% of the budget for what varies from run to run.
        overhead = overhead.max(runtime + budget / 100);
        eprintln!("chat: over the budget of {}; choosing again with {} reserved for the runtime", format_bytes(budget), format_bytes(overhead));
    }
    bail!("could not fit the budget of {} within four rounds", format_bytes(a.mem_budget.unwrap_or(0)))
}

/// The runtime beyond weights + KV cache and the predicted peak resident memory
/// with a full KV cache, from a warm-up prefill ([`warm_up_peak`]).
fn full_cache_peak(a: &ChatArgs, model: &Model) -> anyhow::Result<(u64, u64)> {
    let (peak, warm_tokens) = warm_up_peak(a, model)?;
    let info = ModelInfo::from_gguf(model.gguf())?;
    let ctx = u64::from(a.sampling.ctx);
    let kv = crate::select::budget::kv_cache_bytes(model.gguf(), &info, ctx);
    // The warm-up wrote warm_tokens of the ctx positions of the KV cache; the
    // rest of the peak beyond the weights is the runtime (compute buffers, the
    // process), and a full cache adds the unwritten part.
    let runtime = peak.saturating_sub(info.total_bytes + kv * warm_tokens as u64 / ctx);
    let predicted = info.total_bytes + kv + runtime;
    eprintln!(
        "chat: measured peak resident memory {} after {warm_tokens} tokens: weights {} + runtime {}; with a full KV cache ({}) {}",
        format_bytes(peak),
        format_bytes(info.total_bytes),
        format_bytes(runtime),
        format_bytes(kv),
        format_bytes(predicted)
    );
    Ok((runtime, predicted))
}

/// Where the measured runtime for these settings is remembered: keyed by the
/// model file (name and size), n_ctx, phi and the threads.
fn runtime_memo(a: &ChatArgs) -> PathBuf {
    let size = std::fs::metadata(&a.model).map_or(0, |m| m.len());
    let key = crate::util::hash::sha256_hex(format!("{}|{size}|{}|{:?}|{}", a.model.display(), a.sampling.ctx, a.compute.compute, a.sampling.threads()).as_bytes());
    let stem = a.model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    a.cache_dir.join(format!("{stem}.runtime-{}.bytes", &key[..12]))
}

/// Peak resident memory after a session prefills min(n_ctx, 512) tokens (the
/// largest batch chat decodes at once, so its compute buffer is touched whole)
/// and the KV cache is written.
fn warm_up_peak(a: &ChatArgs, model: &Model) -> anyhow::Result<(u64, usize)> {
    let opts = SessionOptions { n_ctx: a.sampling.ctx, threads: a.sampling.threads(), ..Default::default() };
    // The chat session's own plan: the per-prompt refit holds the prompt's
    // activation rows, which the measured peak must include.
    let mut s = SessionPlan::build(&a.compute.request().with_file_tuning(), model.gguf())?.open(model, opts)?;
    let n = (a.sampling.ctx as usize).min(512).saturating_sub(1).max(1);
    let filler = model.tokenize(&"the ".repeat(n), true, false);
    let n = n.min(filler.len());
    s.prefill_and_select(&filler[..n])?;
    Ok((MemorySnapshot::now().peak_rss_bytes, n))
}

/// The file to load: the model itself, or a (cached) slice of it. `overhead` is
/// held back from --mem-budget for the runtime beyond weights + KV cache.
fn resolve_model(a: &ChatArgs, task: Option<Task>, overhead: u64) -> anyhow::Result<PathBuf> {
    let g = crate::gguf::GgufFile::read(&a.model).with_context(|| format!("cannot chat with {}", a.model.display()))?;
    let info = ModelInfo::from_gguf(&g)?;
    if SliceMeta::from_gguf(&g)?.is_some() {
        if a.load.is_some() || a.mem_budget.is_some() {
            bail!("{} is already sliced; --load and --mem-budget apply to a full model", a.model.display());
        }
        return Ok(a.model.clone());
    }
    let range = a.layers.clone().unwrap_or_else(|| crate::select::default_layer_range(info.n_layer));
    let load = chosen_load(a, &g, &range, overhead)?;
    if load >= 1.0 {
        return Ok(a.model.clone());
    }
    let (Some(profile), Some(task)) = (&a.profile, task) else {
        bail!("loading {load} of the neurons needs --profile DIR and --task TASK to choose them");
    };
    let compensation = match a.compensation {
        Some(c) => c,
        None => default_compensation(&g, &info, profile, task),
    };
    std::fs::create_dir_all(&a.cache_dir).with_context(|| format!("creating {}", a.cache_dir.display()))?;
    let (out, model_sha) = cached_slice_path(a, profile, task, load, &range, compensation)?;
    if out.exists() {
        eprintln!("chat: reusing {}", out.display());
    } else {
        eprintln!("chat: slicing {} at load {load} (base task {task}) -> {}", a.model.display(), out.display());
        let variant = crate::select::variant::SliceVariant { compensation, ..Default::default() };
        let fit = crate::fit::chain::FitText { threads: a.sampling.threads(), ..Default::default() };
        slice_model_with(&SliceRequest {
            model: a.model.clone(),
            output: out.clone(),
            source: SliceSource::Profile { dir: profile.clone(), task },
            load,
            static_share: a.static_share.min(load),
            layers: Some(range),
            verify: true,
            source_sha256: Some(model_sha),
            down_layout: a.down_layout,
        }, &variant, &fit)?;
    }
    // Slicing read whole tensors into memory; hand the freed heap back to the
    // system so that it does not count against the budget (glibc keeps it).
    trim_heap();
    Ok(out)
}

/// gamma: --load, or with --mem-budget the largest that fits the budget less
/// `overhead`, or 1 (the whole model).
fn chosen_load(a: &ChatArgs, g: &crate::gguf::GgufFile, range: &Range<usize>, overhead: u64) -> anyhow::Result<f64> {
    Ok(match (a.mem_budget, a.load) {
        (Some(_), Some(_)) => bail!("give --load or --mem-budget, not both"),
        (Some(budget), None) => {
            // gamma never goes below what --compute computes.
            let floor = a.static_share.max(a.compute.compute.unwrap_or(0.0));
            let c = choose_load(g, budget.saturating_sub(overhead), u64::from(a.sampling.ctx), floor, range).map_err(|e| {
                if overhead > 0 {
                    e.context(format!("the budget less {} measured for the runtime does not fit", format_bytes(overhead)))
                } else {
                    e
                }
            })?;
            eprintln!(
                "chat: budget {}: load (gamma) {} -> weights {} + KV cache {} at n_ctx {}",
                format_bytes(budget),
                c.load,
                format_bytes(c.weight_bytes),
                format_bytes(c.kv_bytes),
                a.sampling.ctx
            );
            c.load
        }
        (None, Some(l)) => l,
        (None, None) => 1.0,
    })
}

/// Where the slice at `load` is cached, and the model file's SHA-256. The key
/// covers everything the slice depends on: the model, both rankings the selection
/// reads (base and secondary), and the settings.
fn cached_slice_path(
    a: &ChatArgs,
    profile: &Path,
    task: Task,
    load: f64,
    range: &Range<usize>,
    compensation: Compensation,
) -> anyhow::Result<(PathBuf, String)> {
    let model_sha = crate::util::hash::file_sha256(&a.model).with_context(|| format!("hashing {}", a.model.display()))?;
    let profile_sha = crate::select::rewrite::profile_sha256(profile, task)
        .with_context(|| format!("reading the {task} and model rankings in {}", profile.display()))?;
    let key = crate::util::hash::sha256_hex(
        format!(
            "{}|{}|{}|{}|{}|{:?}{}{}",
            model_sha,
            profile_sha,
            task,
            load,
            a.static_share,
            range,
            // Column slices keep the key they always had (existing caches stay valid).
            if a.down_layout == crate::select::DownLayout::Neurons { "|neurons" } else { "" },
            // So do slices without compensation (the paper's selection).
            if compensation == Compensation::None { String::new() } else { format!("|compensate={}", compensation.name()) }
        )
        .as_bytes(),
    );
    let stem = a.model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((a.cache_dir.join(format!("{stem}.{task}.load{load}.{}.gguf", &key[..12])), model_sha))
}

/// The compensation of chat's own slices when none is asked for: `slice`'s default,
/// the refit, where its moments were measured beforehand (`profile moments`, like
/// the profile itself: measuring them loads the whole model, which a memory budget
/// may not hold); the paper's selection otherwise, with a note naming the command.
fn default_compensation(g: &crate::gguf::GgufFile, info: &ModelInfo, profile: &std::path::Path, task: Task) -> Compensation {
    let ready = || match has_moments(g, profile, task) {
        true => Ok(()),
        false => Err(format!("the refit needs the {task} moments: selectinfer profile moments -m {} --task {task} {}", g.path.display(), profile.display())),
    };
    let d = crate::select::variant::decide_compensation(None, g, info, true, ready);
    if let Some(note) = d.note(true) {
        eprintln!("chat: {note}");
    }
    d.value
}

/// Whether the profile holds the task's moments for the model `g` (or a file it
/// was converted from).
fn has_moments(g: &crate::gguf::GgufFile, profile: &std::path::Path, task: Task) -> bool {
    let Ok(sha) = crate::util::hash::file_sha256(&g.path) else { return false };
    crate::profile::moments::find_moments(profile, task, &sha, &crate::profile::ranking::lineage(g)).ok().flatten().is_some()
}

/// One line of input, as the chat loop reads it.
enum Line {
    /// End of input.
    End,
    /// Nothing to do (empty, or refused with a note).
    Skip,
    /// A turn or a /command, trimmed.
    Text(String),
}

fn chat_with(a: &ChatArgs, model: &Model, messages: &mut Vec<(String, String)>) -> anyhow::Result<Next> {
    let info = ModelInfo::from_gguf(model.gguf())?;
    let threads = a.sampling.threads();
    let plan = SessionPlan::build(&a.compute.request().with_file_tuning(), model.gguf())?;
    let mut s = plan.open(model, SessionOptions { n_ctx: a.sampling.ctx, threads, ..Default::default() })?;
    let interactive = std::io::stdin().is_terminal();
    let mut history: Vec<Token> = Vec::new();
    let mut last: Option<(GenerateStats, f64)> = None;
    let opts = a.sampling.generate_options(a.max_tokens);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    if interactive {
        eprintln!("selectinfer chat: {} ({}). {HELP}", model.path().display(), describe(&plan, &info));
    }
    loop {
        let text = match read_line(&mut input, interactive)? {
            Line::End => return Ok(Next::Quit),
            Line::Skip => continue,
            Line::Text(t) => t,
        };
        if let Some(cmd) = text.strip_prefix('/') {
            let mut parts = cmd.split_whitespace();
            match parts.next().unwrap_or("") {
                "quit" | "exit" => return Ok(Next::Quit),
                "help" => eprintln!("{HELP}"),
                "reset" => {
                    messages.clear();
                    history.clear();
                    s.clear();
                    eprintln!("chat: conversation cleared");
                }
                "stats" => print_stats(a, &plan, &info, model.path(), last.as_ref()),
                "task" => match parts.next().and_then(Task::from_name) {
                    Some(t) => return Ok(Next::SwitchTask(t)),
                    None => eprintln!("chat: /task needs one of qa, translate, summarize"),
                },
                other => eprintln!("chat: unknown command /{other}; {HELP}"),
            }
            continue;
        }
        messages.push(("user".into(), text));
        let refs: Vec<(&str, &str)> = messages.iter().map(|(r, c)| (r.as_str(), c.as_str())).collect();
        let rendered = model.apply_chat_template(&refs)?;
        let tokens = model.tokenize(&rendered, true, true);
        if tokens.len() + a.max_tokens.min(16) > a.sampling.ctx as usize {
            messages.pop();
            eprintln!(
                "chat: the conversation with that turn is {} tokens, over the context of {} (--ctx); turn refused (shorten it, or /reset)",
                tokens.len(),
                a.sampling.ctx
            );
            continue;
        }
        let (answer, stats, sel) = answer_turn(&mut s, &mut history, &tokens, &opts)?;
        messages.push(("assistant".into(), answer.trim().to_string()));
        report_turn(&plan, &info, &stats, &sel);
        last = Some((stats, sel.select_ms));
    }
}

/// Reads one line of stdin (after a "> " prompt when interactive); a line that is
/// not UTF-8 or too long is refused with a note.
fn read_line(input: &mut impl BufRead, interactive: bool) -> anyhow::Result<Line> {
    if interactive {
        print!("> ");
        std::io::stdout().flush()?;
    }
    let mut raw = Vec::new();
    if input.read_until(b'\n', &mut raw).context("reading stdin")? == 0 {
        if interactive {
            println!();
        }
        return Ok(Line::End);
    }
    // One bad line refuses that turn only; the conversation goes on.
    let Ok(line) = String::from_utf8(raw) else {
        eprintln!("chat: that line is not valid UTF-8; turn refused");
        return Ok(Line::Skip);
    };
    if line.len() > MAX_TURN_BYTES {
        eprintln!("chat: that line has {} bytes, more than the {MAX_TURN_BYTES} a turn may have; turn refused", line.len());
        return Ok(Line::Skip);
    }
    let text = line.trim();
    Ok(if text.is_empty() { Line::Skip } else { Line::Text(text.to_string()) })
}

/// Decodes the conversation's `tokens` after the part the KV cache already holds
/// and streams the answer to stdout; `history` becomes the tokens the cache holds.
fn answer_turn(
    s: &mut SelectiveSession,
    history: &mut Vec<Token>,
    tokens: &[Token],
    opts: &GenerateOptions,
) -> anyhow::Result<(String, GenerateStats, SelectionStats)> {
    let common = history.iter().zip(tokens).take_while(|(x, y)| x == y).count();
    if !s.session().truncate(common) {
        history.clear();
    }
    let keep = s.session().n_past();
    let mut answer = String::new();
    let mut out = std::io::stdout().lock();
    let (generated, stats, sel) = s.generate(&tokens[keep..], opts, |piece| {
        answer.push_str(piece);
        out.write_all(piece.as_bytes()).and_then(|_| out.flush()).is_ok()
    })?;
    writeln!(out)?;
    drop(out);
    let n_past = s.session().n_past();
    *history = tokens.iter().chain(&generated).copied().take(n_past).collect();
    Ok((answer, stats, sel))
}

/// The line on stderr after each answer: speeds, compute, weights and RSS.
fn report_turn(plan: &SessionPlan, info: &ModelInfo, stats: &GenerateStats, sel: &SelectionStats) {
    eprintln!(
        "[prefill {:.1} tok/s | decode {:.1} tok/s | compute {} | weights {} | RSS {}{}]",
        stats.prefill_tps(),
        stats.decode_tps(),
        match plan.phi {
            Some(phi) => format!("{phi} ({} of {} neurons)", sel.computed_neurons, sel.loaded_neurons),
            None => "dense".into(),
        },
        format_bytes(info.total_bytes),
        format_bytes(MemorySnapshot::now().rss_bytes),
        if sel.select_ms > 0.0 { format!(" | selection {:.0} ms", sel.select_ms) } else { String::new() }
    );
}

fn describe(plan: &SessionPlan, info: &ModelInfo) -> String {
    format!("{} layers, weights {}, {}", info.n_layer, format_bytes(info.total_bytes), plan.describe())
}

fn print_stats(a: &ChatArgs, plan: &SessionPlan, info: &ModelInfo, path: &Path, last: Option<&(GenerateStats, f64)>) {
    let mem = MemorySnapshot::now();
    eprintln!("model {} ({})", path.display(), describe(plan, info));
    eprintln!("RSS {} (peak {}), n_ctx {}", format_bytes(mem.rss_bytes), format_bytes(mem.peak_rss_bytes), a.sampling.ctx);
    match last {
        Some((st, sel)) => eprintln!(
            "last turn: {} prompt tokens at {:.1} tok/s, {} generated at {:.1} tok/s, selection {sel:.0} ms",
            st.prompt_tokens,
            st.prefill_tps(),
            st.generated_tokens,
            st.decode_tps()
        ),
        None => eprintln!("no turn yet"),
    }
}
