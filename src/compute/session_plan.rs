//! The session plan: what a command line asks of a session's computation
//! ([`ComputeRequest`], typed, before any file is read) plus the model file gives a
//! [`SessionPlan`]: which neurons decode computes ([`ComputePlan`]), what prompt
//! tokens rank their neurons by, and what decode compensates. Each default is
//! decided here, once, and the plan keeps the reason it applied ([`Decided`]).
//!
//! Every command that runs a selective session (generate, chat, bench, eval,
//! perplexity --answers) builds it with [`SessionPlan::build`] and opens it with
//! [`SessionPlan::open`]; `--help` and docs/commands.md print [`help_defaults`].

use std::ops::Range;

use super::{ComputeOptions, ComputePlan, Layout, SelectiveSession, Vote};
use crate::engine::{Model, SessionOptions};
use crate::gguf::GgufFile;
use crate::model::ModelInfo;
use crate::select::variant::{Compensation, SliceVariant};
use crate::select::{DownLayout, SliceMeta};
use crate::util::Decided;

pub use super::refit::DEFAULT_RIDGE;

/// alpha when `--token-share` is not given: each prompt token votes for a fifth of
/// the loaded neurons (the paper's setting).
pub const DEFAULT_TOKEN_SHARE: f64 = 0.2;

/// What prompt tokens rank their neurons by when `--vote` is not given: |activation|.
pub const DEFAULT_VOTE: Vote = Vote::Abs;

/// The per-prompt refit of an experiment cell without the `decode_refit` key: off,
/// as cells have always run, so that rows stay comparable across experiments (a
/// plain `eval` refits a refit slice's decode by default instead).
pub const CELL_DECODE_REFIT: DecodeRefit = DecodeRefit::Off;

/// The defaults `--help` prints and docs/commands.md states, as (option, value).
pub fn help_defaults() -> Vec<(&'static str, String)> {
    vec![("--token-share", DEFAULT_TOKEN_SHARE.to_string()), ("--vote", DEFAULT_VOTE.name().to_string()), ("--decode-refit", DEFAULT_RIDGE.to_string())]
}

/// How a session holds its weights: llama.cpp's repacking and the decode layout
/// ([`decide_holding`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Holding {
    /// Let llama.cpp repack weights for its CPU kernels (`--no-repack`: false).
    pub repack: Decided<bool>,
    /// How decode reaches the computed neurons (`None`: in place where every
    /// sparsified layer allows it, else a copy).
    pub layout: Decided<Option<Layout>>,
}

/// The share of a file's weight bytes added for the runtime (KV cache, compute
/// buffers, the process) when telling whether a file fits the memory a process may
/// use: the 1.5B model's dense file peaks 10% above its weights uncapped, and its
/// prefill touches more.
pub const RUNTIME_SHARE: f64 = 0.25;

/// How a session on a file of `weight_bytes` holds its weights, given what the
/// command line asked and the memory the process may use (`usable`:
/// [`crate::memory::usable_memory`]). Asked values win. By default, a selective
/// decode of a file that does not fit (weights + [`RUNTIME_SHARE`] above `usable`)
/// runs the device case: weights unrepacked and file-backed, decode from a
/// gathered copy, so that the kernel evicts the loaded neurons decode skips rather
/// than weights every token reads (in place, every page a swap touched would be
/// anonymous memory, which cannot be evicted without swap). Otherwise llama.cpp's
/// repacking, in place where it can.
pub fn decide_holding(asked_layout: Option<Layout>, no_repack: bool, selective: bool, weight_bytes: u64, usable: Option<u64>) -> Holding {
    let needed = weight_bytes as f64 * (1.0 + RUNTIME_SHARE);
    let device = match usable {
        Some(u) if selective && needed > u as f64 => Some(format!(
            "the file's {} MiB of weights (about {} MiB with the runtime) do not fit the {} MiB this process may use",
            weight_bytes >> 20,
            (needed as u64) >> 20,
            u >> 20
        )),
        _ => None,
    };
    let repack = match (no_repack, &device) {
        (true, _) => Decided::asked(false, "--no-repack"),
        (false, Some(why)) => Decided::by_default(false, format!("{why}: weights file-backed, so that the neurons decode skips can be evicted")),
        (false, None) => Decided::by_default(true, "llama.cpp repacks what its CPU kernels run faster"),
    };
    let layout = match (asked_layout, &device) {
        (Some(l), _) => Decided::asked(Some(l), "--layout"),
        (None, Some(why)) => Decided::by_default(Some(Layout::Copy), format!("{why}: decode reads a gathered copy, the rest of the file can be evicted")),
        (None, None) => Decided::by_default(None, "in place where every sparsified layer allows it"),
    };
    Holding { repack, layout }
}

impl Holding {
    /// The holding of a session on `g` as `req` and `--no-repack` ask, with the
    /// memory this process may use.
    pub fn for_file(req: &ComputeRequest, no_repack: bool, g: &GgufFile) -> anyhow::Result<Holding> {
        let selective = decide_phi(req.compute, req.file_tuning, g).value.is_some();
        let bytes = ModelInfo::from_gguf(g)?.total_bytes;
        Ok(decide_holding(req.layout, no_repack, selective, bytes, crate::memory::usable_memory()))
    }

    /// `req` with this holding's layout.
    pub fn apply(&self, req: ComputeRequest) -> ComputeRequest {
        ComputeRequest { layout: self.layout.value, ..req }
    }

    /// A line for the plan where the device case applies by default.
    pub fn describe(&self) -> Option<String> {
        (self.layout.default && self.layout.value == Some(Layout::Copy)).then(|| format!("layout copy, no repacking {}", self.layout.reason()))
    }
}

/// `--decode-refit` as asked: `off`, or the ridge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DecodeRefit {
    /// No per-prompt refit.
    Off,
    /// The per-prompt refit with this ridge (above 0).
    Ridge(f64),
}

impl DecodeRefit {
    /// The option's value on a command line (`off`, or the ridge).
    pub fn arg(self) -> String {
        match self {
            DecodeRefit::Off => "off".into(),
            DecodeRefit::Ridge(r) => r.to_string(),
        }
    }
}

/// What a command line asks of a session's computation.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeRequest {
    /// phi (`--compute`); `None`: decode computes every loaded neuron (dense).
    pub compute: Option<f64>,
    /// alpha (`--token-share`).
    pub token_share: f64,
    /// `--vote`.
    pub vote: Vote,
    /// `--decode-bias`.
    pub decode_bias: bool,
    /// `--decode-refit`; `None`: the default ([`decide_decode_refit`]).
    pub decode_refit: Option<DecodeRefit>,
    /// `--no-static`.
    pub no_static: bool,
    /// `--layout`; `None`: in place where every sparsified layer allows it, else a
    /// copy ([`SelectiveSession::new`]).
    pub layout: Option<Layout>,
    /// `--compute-layers` (a file that is not sliced).
    pub layers: Option<Range<usize>>,
    /// Without phi, take the one a tuned file records ([`tuned_phi`]): a tuned
    /// slice runs as `tune` chose it (generate, chat). Commands that name what
    /// they measure (bench, eval) leave it off.
    pub file_tuning: bool,
}

impl Default for ComputeRequest {
    fn default() -> ComputeRequest {
        ComputeRequest { compute: None, token_share: DEFAULT_TOKEN_SHARE, vote: DEFAULT_VOTE, decode_bias: false, decode_refit: None, no_static: false, layout: None, layers: None, file_tuning: false }
    }
}

impl ComputeRequest {
    /// The compute options for phi = `compute`.
    pub fn options(&self, compute: f64) -> ComputeOptions {
        ComputeOptions { compute, token_share: self.token_share, layers: self.layers.clone(), no_static: self.no_static }
    }

    /// The compute options of the request's phi (`None`: dense).
    pub fn compute_options(&self) -> Option<ComputeOptions> {
        self.compute.map(|phi| self.options(phi))
    }

    /// The same request at phi = `compute` (`bench` times several in one run; a
    /// `None` there is dense, whatever the file's tuning).
    pub fn at(&self, compute: Option<f64>) -> ComputeRequest {
        ComputeRequest { compute, file_tuning: false, ..self.clone() }
    }

    /// The same request, taking a tuned file's phi when none is asked for.
    pub fn with_file_tuning(self) -> ComputeRequest {
        ComputeRequest { file_tuning: true, ..self }
    }
}

/// The phi a `tune`-written file records (`selectinfer.tune.compute`), if any.
pub fn tuned_phi(g: &GgufFile) -> Option<f64> {
    match g.get(&crate::select::meta::key("tune.compute"))? {
        crate::gguf::Value::F64(v) => Some(*v),
        crate::gguf::Value::F32(v) => Some(f64::from(*v)),
        _ => None,
    }
}

/// Whether a `tune`-written file's point computes dynamic neurons only
/// (`selectinfer.tune.no_static`; absent in files tuned before it existed: false).
pub fn tuned_no_static(g: &GgufFile) -> bool {
    matches!(g.get(&crate::select::meta::key("tune.no_static")), Some(crate::gguf::Value::Bool(true)))
}

/// phi and why: as asked; else, where `file_tuning`, the phi the tuned file `g`
/// records; else none (decode computes every loaded neuron).
pub fn decide_phi(asked: Option<f64>, file_tuning: bool, g: &GgufFile) -> Decided<Option<f64>> {
    match (asked, file_tuning.then(|| tuned_phi(g)).flatten()) {
        (Some(phi), _) => Decided::asked(Some(phi), "--compute"),
        (None, Some(phi)) => Decided::by_default(Some(phi), "the file's tuning, selectinfer.tune.compute"),
        (None, None) => Decided::by_default(None, "decode computes every loaded neuron"),
    }
}

/// What a session computes and compensates, each default with its reason.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    /// The computed neurons per layer (dense without phi).
    pub compute: ComputePlan,
    /// phi; `None`: dense.
    pub phi: Option<f64>,
    /// phi is the tuned file's, not asked for ([`decide_phi`]).
    pub from_tuning: bool,
    /// What prompt tokens rank their neurons by.
    pub vote: Vote,
    /// Decode shifts the down biases by the skipped neurons' mean contribution.
    pub decode_bias: bool,
    /// The per-prompt refit's ridge (`None`: off), and why.
    pub decode_refit: Decided<Option<f64>>,
    /// How decode reaches the computed neurons, where asked (`--layout`).
    pub layout: Option<Layout>,
}

impl SessionPlan {
    /// The plan of `req` on the model file `g`.
    pub fn build(req: &ComputeRequest, g: &GgufFile) -> anyhow::Result<SessionPlan> {
        let phi = decide_phi(req.compute, req.file_tuning, g);
        let from_tuning = phi.default && phi.value.is_some();
        // A tuned point's selection comes with its phi.
        let req = &ComputeRequest { no_static: req.no_static || (from_tuning && tuned_no_static(g)), ..req.clone() };
        let compute = match phi.value {
            Some(p) => ComputePlan::for_model(g, &req.options(p))?,
            None => ComputePlan::dense(ModelInfo::from_gguf(g)?.n_layer),
        };
        let compensation = SliceVariant::from_gguf(g).compensation;
        let down = SliceMeta::from_gguf(g).ok().flatten().map(|m| m.down_layout);
        let decode_refit = decide_decode_refit(req.decode_refit, req.decode_bias, phi.value.is_some(), compensation, down);
        Ok(SessionPlan { compute, phi: phi.value, from_tuning, vote: req.vote, decode_bias: req.decode_bias, decode_refit, layout: req.layout })
    }

    /// A session of `model` (the file the plan was built on) that computes as planned.
    pub fn open<'m>(&self, model: &'m Model, opts: SessionOptions) -> anyhow::Result<SelectiveSession<'m>> {
        let mut s = SelectiveSession::new(model, self.compute.clone(), opts)?;
        s.set_vote(self.vote);
        s.set_decode_bias(self.decode_bias)?;
        s.set_decode_refit(self.decode_refit.value)?;
        if let (Some(layout), Some(_)) = (self.layout, self.phi) {
            s.set_layout(layout)?;
        }
        Ok(s)
    }

    /// (vote, decode bias, decode refit) of a selective plan, as rows label them
    /// ([`super::decode_labels`]); `None` when dense.
    pub fn decode(&self) -> Option<(Vote, bool, Option<f64>)> {
        self.phi.map(|_| (self.vote, self.decode_bias, self.decode_refit.value))
    }

    /// One line for people: `compute 0.4 (alpha 0.2, vote abs), decode refit 1
    /// (default: ...)`, or `compute dense`.
    pub fn describe(&self) -> String {
        let Some(phi) = self.phi else { return "compute dense".into() };
        let decode = match (self.decode_bias, self.decode_refit.value) {
            (true, _) => "decode bias".to_string(),
            (false, Some(r)) => format!("decode refit {r} {}", self.decode_refit.reason()),
            (false, None) => format!("decode refit off {}", self.decode_refit.reason()),
        };
        let tuned = if self.from_tuning { " from the file's tuning" } else { "" };
        format!("compute {phi}{tuned} (alpha {}, vote {}), {decode}", self.compute.token_share, self.vote.name())
    }
}

/// The per-prompt decode refit's ridge (`None`: off) and why: as asked; else
/// [`DEFAULT_RIDGE`] when decode computes selectively (`selective`) on a slice made
/// with `--compensate refit` (`compensation`) whose `ffn_down` is column-major
/// (`down`; `None`: not sliced) and `--decode-bias` is not given (the combination
/// measured to keep the most of every task's score, docs/selection.md); off otherwise.
pub fn decide_decode_refit(asked: Option<DecodeRefit>, decode_bias: bool, selective: bool, compensation: Compensation, down: Option<DownLayout>) -> Decided<Option<f64>> {
    match asked {
        Some(DecodeRefit::Off) => Decided::asked(None, "--decode-refit off"),
        Some(DecodeRefit::Ridge(r)) => Decided::asked(Some(r), "--decode-refit"),
        None if decode_bias => Decided::by_default(None, "--decode-bias shifts the down bias instead"),
        None if !selective => Decided::by_default(None, "decode computes every loaded neuron"),
        None if compensation != Compensation::Refit => Decided::by_default(None, "the file is not a slice made with --compensate refit"),
        // The refit changes ffn_down's columns, which a neuron-major file does not hold.
        None if down != Some(DownLayout::Columns) => Decided::by_default(None, "ffn_down is neuron-major; the refit changes its columns"),
        None => Decided::by_default(Some(DEFAULT_RIDGE), "the slice carries a refit"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_case_holds_weights_unrepacked_and_gathered_where_the_file_does_not_fit() {
        let mib = |m: u64| m << 20;
        // 1060 MiB of weights need about 1325 MiB: a 1000 MiB group does not hold them.
        let tight = decide_holding(None, false, true, mib(1060), Some(mib(1000)));
        assert_eq!((tight.repack.value, tight.layout.value), (false, Some(Layout::Copy)));
        assert!(tight.repack.default && tight.layout.default);
        assert!(tight.layout.why.contains("1060 MiB of weights (about 1325 MiB with the runtime) do not fit the 1000 MiB"), "{}", tight.layout.why);
        assert!(tight.describe().is_some());
        // The same file with room, a dense decode, or nothing known: llama.cpp's way, in place.
        for (selective, usable) in [(true, Some(mib(24 << 10))), (false, Some(mib(1000))), (true, None)] {
            let h = decide_holding(None, false, selective, mib(1060), usable);
            assert_eq!((h.repack.value, h.layout.value, h.describe()), (true, None, None), "{selective} {usable:?}");
        }
        // Asked values win either way.
        let asked = decide_holding(Some(Layout::InPlace), true, true, mib(1060), Some(mib(1000)));
        assert_eq!((asked.repack.value, asked.layout.value), (false, Some(Layout::InPlace)));
        assert!(!asked.repack.default && !asked.layout.default && asked.describe().is_none());
        let roomy = decide_holding(Some(Layout::Copy), true, true, mib(1060), Some(mib(24 << 10)));
        assert_eq!((roomy.repack.value, roomy.layout.value), (false, Some(Layout::Copy)));
    }

    #[test]
    fn each_decode_refit_default_is_decided_once() {
        use Compensation::{None as Plain, Refit};
        use DownLayout::{Columns, Neurons};
        let r = Some(DecodeRefit::Ridge(0.5));
        let off = Some(DecodeRefit::Off);
        // (asked, --decode-bias, selective, compensation, ffn_down) -> (ridge, a default, why contains)
        let table: [(Option<DecodeRefit>, bool, bool, Compensation, Option<DownLayout>, Option<f64>, bool, &str); 9] = [
            (None, false, true, Refit, Some(Columns), Some(1.0), true, "carries a refit"),
            (None, false, true, Refit, Some(Neurons), None, true, "neuron-major"),
            (None, false, true, Plain, Some(Columns), None, true, "not a slice made"),
            (None, false, true, Plain, None, None, true, "not a slice made"),
            (None, false, false, Refit, Some(Columns), None, true, "every loaded neuron"),
            (None, true, true, Refit, Some(Columns), None, true, "--decode-bias"),
            (r, false, false, Plain, None, Some(0.5), false, "--decode-refit"),
            (r, false, true, Refit, Some(Neurons), Some(0.5), false, "--decode-refit"),
            (off, false, true, Refit, Some(Columns), None, false, "--decode-refit off"),
        ];
        for (asked, bias, selective, comp, down, ridge, default, why) in table {
            let d = decide_decode_refit(asked, bias, selective, comp, down);
            assert_eq!((d.value, d.default), (ridge, default), "{asked:?} {bias} {selective} {comp:?} {down:?}");
            assert!(d.why.contains(why), "{}", d.why);
        }
        assert_eq!(DEFAULT_RIDGE, 1.0);
    }

    #[test]
    fn the_request_defaults_are_the_plans_constants() {
        let req = ComputeRequest::default();
        assert_eq!((req.compute, req.token_share, req.vote, req.decode_bias, req.decode_refit), (None, 0.2, Vote::Abs, false, None));
        assert_eq!(help_defaults(), vec![("--token-share", "0.2".to_string()), ("--vote", "abs".to_string()), ("--decode-refit", "1".to_string())]);
        assert_eq!(CELL_DECODE_REFIT.arg(), "off");
        assert_eq!(DecodeRefit::Ridge(0.5).arg(), "0.5");
        let o = req.at(Some(0.4)).compute_options().unwrap();
        assert_eq!((o.compute, o.token_share, o.no_static, o.layers), (0.4, 0.2, false, None));
    }
}
