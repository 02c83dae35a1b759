//! File names of an experiment's prepared files: every slice, quantization and
//! F16 conversion has one deterministic path, so a re-run finds it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::{Prep, Reference};

/// The file-name suffix of a slice variant (empty for the paper's selection).
fn variant_suffix(v: &crate::select::variant::SliceVariant) -> String {
    use crate::select::variant::{Compensation, Importance, Secondary};
    let mut s = String::new();
    if v.importance == Importance::Contribution {
        s.push_str("-contribution");
    }
    if v.budget.is_per_layer() {
        s.push_str(&format!("-{}{}", v.budget.name(), share_text(v.budget_floor)));
    }
    match v.compensation {
        Compensation::None => {}
        Compensation::Mean => s.push_str("-compensate"),
        Compensation::Refit => s.push_str("-refit"),
        Compensation::RefitChained => s.push_str("-refit-chained"),
        Compensation::RefitComputed => {
            let f = v.computed_fit;
            s.push_str(&format!("-refit-computed{}-{}-{}", share_text(f.compute), share_text(f.token_share), share_text(f.decode_share)));
        }
    }
    if v.secondary == Secondary::Task {
        s.push_str("-secondary-task");
    }
    s
}

/// How a share is written in file names: at least one decimal (`0.7`, `1.0`).
pub fn share_text(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

impl Prep {
    /// The prepared file's path for model `name` with an F16 reference
    /// (deterministic, so a re-run finds it); [`ModelSpec::file`] for any model.
    pub fn path(&self, name: &str) -> PathBuf {
        self.path_with(name, Reference::F16)
    }

    /// [`Prep::path`] for a model whose reference is `reference`: slices of a
    /// source reference are tagged `source` where an F16 reference's say `F16`.
    pub(super) fn path_with(&self, name: &str, reference: Reference) -> PathBuf {
        let layers = |l: &Option<Range<usize>>| l.as_ref().map_or(String::new(), |r| format!("-layers{}-{}", r.start, r.end));
        let stat = |s: f64| if (s - 0.3).abs() < 1e-12 { String::new() } else { format!("-static{}", share_text(s)) };
        let file = match self {
            Prep::F16 => format!("{name}.F16.gguf"),
            Prep::Quant(q) => format!("{name}.{q}.gguf"),
            Prep::ProfileSlice { task, load, static_share, layers: l, variant, base, down } => {
                let neurons = if *down == crate::select::rewrite::DownLayout::Neurons { ".neurons" } else { "" };
                let base = if reference == Reference::Source { "source" } else { base.name() };
                format!("{name}.{base}.{task}-load{}{}{}{}{neurons}.gguf", share_text(*load), stat(*static_share), layers(l), variant_suffix(variant))
            }
            Prep::RandomSlice { load, static_share, layers: l, seed } => format!(
                "{name}.{}random-load{}{}{}{}.gguf",
                if reference == Reference::Source { "source." } else { "" },
                share_text(*load),
                stat(*static_share),
                layers(l),
                if *seed == 0 { String::new() } else { format!("-seed{seed}") }
            ),
        };
        Path::new("models").join(file)
    }
}
