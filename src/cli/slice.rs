//! `selectinfer slice`: selective loading, as a rewritten GGUF.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::fit::chain::FitText;
use crate::output::{format_bytes, Table};
use crate::select::rewrite::parse_layer_range;
use crate::select::variant::{decide_compensation, Budget, Compensation, ComputedFit, Importance, Secondary, SliceVariant};
use crate::select::{slice_model_with, DownLayout, SliceReport, SliceRequest, SliceSource};
use crate::tasks::Task;

/// Arguments of `slice`.
#[derive(Debug, clap::Args)]
pub struct SliceArgs {
    /// Source GGUF (the paper slices the original model: an F16 conversion).
    #[arg(short, long)]
    pub model: PathBuf,
    /// Profile directory made by `selectinfer profile` for this model.
    #[arg(long, required_unless_present = "random")]
    pub profile: Option<PathBuf>,
    /// Task whose ranking gives the static ("base") neurons.
    #[arg(long, value_enum, required_unless_present = "random")]
    pub task: Option<Task>,
    /// gamma: share of each sparsified layer's N neurons that is loaded, in (0, 1].
    #[arg(long = "load", default_value_t = 0.7, value_parser = super::opts::parse_share)]
    pub load: f64,
    /// delta: share of N taken first from the task ranking (the static neurons), in [0, gamma].
    #[arg(long = "static", default_value_t = 0.3, value_parser = super::opts::parse_static_share)]
    pub static_share: f64,
    /// Sparsified layers START..END (end exclusive); others stay whole. Default: all
    /// but the first round(0.15 n) and last round(0.07 n) layers (4..26 of 28, as in the paper).
    #[arg(long, value_parser = parse_layer_range)]
    pub layers: Option<std::ops::Range<usize>>,
    /// Keep a uniformly random gamma*N neurons per layer instead (the paper's
    /// random-loading ablation); no profile needed.
    #[arg(long)]
    pub random: bool,
    /// Seed of --random.
    #[arg(long, default_value_t = 0)]
    pub random_seed: u64,
    /// How ffn_down is stored: `columns` ([n_ff, n_embd], llama.cpp's layout; also
    /// loads in stock llama.cpp) or `neurons` ([n_embd, n_ff], one row per neuron; our
    /// engine only): `--compute` then needs no copy of the computed neurons on any
    /// type. A quantized ffn_down is requantized once; K-quants take llama.cpp's
    /// fallback types (Q4_K/Q5_K -> Q5_0, Q6_K -> Q8_0), which the fast kernel serves.
    #[arg(long, value_enum, default_value_t = DownLayout::default())]
    pub down_layout: DownLayout,
    /// Neuron importance of the profile's rankings: mean |activation| (the paper's)
    /// or contribution, mean a^2 x ||W_down[:, n]||^2 (DIR/contribution/, written by
    /// `profile merge` from profiles that record squared activations).
    #[arg(long, value_enum, default_value_t = Importance::Activation)]
    pub importance: Importance,
    /// Spread of the loaded neurons over layers: the same gamma*N in every
    /// sparsified layer (uniform), or the same total FFN bytes with per-layer widths
    /// where each neuron captures the largest share of its layer's importance mass
    /// (sensitivity), or where it saves the most of the layer's measured cost to
    /// the output (output: reads DIR/sensitivity/TASK.json from `profile
    /// sensitivity`). With either the sparsified range becomes the layers that keep
    /// fewer than all their neurons, and --layers only sets the byte budget.
    #[arg(long, value_enum, default_value_t = Budget::Uniform)]
    pub budget: Budget,
    /// Least load share of any layer under --budget sensitivity or output (at least the phi
    /// that decode will compute).
    #[arg(long, default_value_t = 0.4, value_parser = super::opts::parse_share)]
    pub budget_floor: f64,
    /// Compensation of the dropped neurons: none, or their mean contribution over the
    /// profiling tokens added back as an ffn_down bias, or refit: the kept ffn_down
    /// columns and a bias fitted by ridge regression to the whole layer's output over
    /// the task's profiling text (needs `profile moments`), or refit-chained: the same
    /// fit layer after layer, each on the activations of the slice with the layers
    /// before it refitted (runs the --fit-data text once per sparsified layer), or
    /// refit-computed: the refit for the selective computation decode runs (--fit-compute,
    /// --fit-token-share, --fit-decode-share; runs the --fit-data text once). llama,
    /// gemma3, qwen2 and qwen3 only: the builders that load an optional down bias
    /// (gemma3's with patch 0009, qwen2's and qwen3's with 0010). Default: refit for a
    /// profile slice of such a model without down biases of its own (the task's moments are measured on first use,
    /// as `profile moments` would), none elsewhere and for --random. `none` is the
    /// paper's selection.
    #[arg(long = "compensate", value_enum)]
    pub compensation: Option<Compensation>,
    /// Text of --compensate refit-chained and refit-computed: a JSON Lines task file whose profiling
    /// split is read (default: the task's bundled files, as `profile moments` reads).
    #[arg(long)]
    pub fit_data: Option<PathBuf>,
    /// Chunk length in tokens of the refit-chained and refit-computed text (for
    /// refit-computed also the span whose tokens vote together, as one prompt).
    #[arg(long, default_value_t = crate::fit::chain::FIT_CTX as u32, value_parser = super::opts::parse_ctx)]
    pub fit_ctx: u32,
    /// Most chunks of the refit-chained and refit-computed text.
    #[arg(long, default_value_t = crate::fit::chain::FIT_CHUNKS, value_parser = super::opts::parse_count)]
    pub fit_chunks: usize,
    /// phi that --compensate refit-computed fits for: the computed share of N, as
    /// `--compute` will run the slice (in [--static, --load]).
    #[arg(long, default_value_t = ComputedFit::default().compute, value_parser = super::opts::parse_share)]
    pub fit_compute: f64,
    /// alpha that --compensate refit-computed fits for: the share of the loaded
    /// neurons each token votes for, as `--token-share` will run the slice.
    #[arg(long, default_value_t = ComputedFit::default().token_share, value_parser = super::opts::parse_share)]
    pub fit_token_share: f64,
    /// Share of the refit-computed fit given to decode: each token weighs 1 - share
    /// with every loaded neuron (as prefill computes) and share with only the
    /// static and the chunk's dynamic neurons (as decode computes), in [0, 1].
    #[arg(long, default_value_t = ComputedFit::default().decode_share, value_parser = super::opts::parse_static_share)]
    pub fit_decode_share: f64,
    /// CPU threads of the refit-chained and refit-computed passes.
    #[command(flatten)]
    pub threads: super::opts::ThreadsArg,
    /// Ranking of the loaded neurons after the static delta*N: the model-wide
    /// ranking, the mean over the profile's tasks (model, the paper's), or the task's
    /// own (task: the slice keeps the task's top gamma*N neurons).
    #[arg(long, value_enum, default_value_t = Secondary::Model)]
    pub secondary: Secondary,
    /// Output GGUF; written under a temporary name and renamed when complete.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
}

pub fn run(a: SliceArgs) -> anyhow::Result<()> {
    let source = slice_source(&a)?;
    let req = SliceRequest {
        model: a.model,
        output: a.output,
        source,
        load: a.load,
        static_share: a.static_share,
        layers: a.layers,
        verify: true,
        source_sha256: None,
        down_layout: a.down_layout,
    };
    let compensation = match a.compensation {
        Some(c) => c,
        None => default_compensation(&req.model, a.random)?,
    };
    if a.budget.is_per_layer() && a.budget_floor < a.static_share {
        return Err(crate::fsutil::guard::UsageError(format!(
            "--budget-floor {} is below --static {}: a layer kept at the floor would lose part of its static neurons; give a floor of at least --static",
            a.budget_floor, a.static_share
        ))
        .into());
    }
    let computed_fit = ComputedFit { compute: a.fit_compute, token_share: a.fit_token_share, decode_share: a.fit_decode_share };
    let variant = SliceVariant { importance: a.importance, budget: a.budget, budget_floor: a.budget_floor, compensation, secondary: a.secondary, computed_fit };
    if a.random && !variant.is_default() {
        bail!("--importance, --budget, --compensate and --secondary need a profile, not --random");
    }
    let fit = FitText { data: a.fit_data, ctx: a.fit_ctx as usize, chunks: a.fit_chunks, threads: a.threads.get() };
    let r = slice_model_with(&req, &variant, &fit)?;
    if a.json.json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    print_report(&r);
    Ok(())
}

/// Where the neurons' order comes from: the profile's task ranking, or --random.
fn slice_source(a: &SliceArgs) -> anyhow::Result<SliceSource> {
    Ok(if a.random {
        SliceSource::Random { seed: a.random_seed }
    } else {
        match (&a.profile, a.task) {
            (Some(dir), Some(task)) => SliceSource::Profile { dir: dir.clone(), task },
            _ => bail!("slice needs --profile DIR and --task TASK, or --random"),
        }
    })
}

/// The compensation when --compensate is not given (noted on stderr where it
/// falls back); slice measures the refit's moments on first use.
fn default_compensation(model: &Path, random: bool) -> anyhow::Result<Compensation> {
    let src = crate::gguf::GgufFile::read(model).with_context(|| format!("cannot slice {}", model.display()))?;
    let info = crate::model::ModelInfo::from_gguf(&src)?;
    let d = decide_compensation(None, &src, &info, !random, || Ok(()));
    if let Some(note) = d.note(!random) {
        eprintln!("slice: {note}");
    }
    Ok(d.value)
}

/// The size table on stdout and the sliced widths on stderr.
fn print_report(r: &SliceReport) {
    let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
    let mut t = Table::new(["", "source", "sliced", "ratio"]);
    t.row(["FFN bytes".into(), format_bytes(r.source_ffn_bytes), format_bytes(r.ffn_bytes), format!("{:.1}%", pct(r.ffn_bytes, r.source_ffn_bytes))]);
    t.row([
        "total bytes".into(),
        format_bytes(r.source_total_bytes),
        format_bytes(r.total_bytes),
        format!("{:.1}%", pct(r.total_bytes, r.source_total_bytes)),
    ]);
    print!("{}", t.to_markdown());
    let widths = &r.n_ff[r.layers.clone()];
    let widths = if widths.iter().all(|&w| w == widths[0]) { format!("{}", widths[0]) } else { format!("{widths:?}") };
    eprintln!(
        "slice: layers {}..{} sliced to n_ff {}{} -> {}",
        r.layers.start,
        r.layers.end,
        widths,
        match (r.down_requantized, r.down_layout) {
            (true, DownLayout::Columns) => " (quantized ffn_down requantized in its own type; kept widths rounded to its block size)",
            (true, DownLayout::Neurons) => " (ffn_down neuron-major, requantized)",
            (false, DownLayout::Neurons) => " (ffn_down neuron-major)",
            (false, DownLayout::Columns) => "",
        },
        r.output
    );
}
