//! The methods of the paper's comparison: what each one means, which settings it
//! takes, and how it is shown (its place in tables and plots).
//!
//! Every fact about a method lives here, so that the experiment grid, the
//! harness's file check and the plots ask the method instead of matching names.

use anyhow::bail;
use serde::Serialize;

use crate::compute::ComputeOptions;
use crate::gguf::GgufFile;
use crate::model::ModelInfo;
use crate::select::SliceMeta;

/// What a row measures, in the paper's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The original model, dense: F16, or the quantized download itself where no
    /// F16 original exists.
    Reference,
    /// A profile-guided slice, every loaded neuron computed.
    DenseLoaded,
    /// A profile-guided slice with static + dynamic computation (`--compute`).
    Selectinfer,
    /// The full model, dynamic-only computation (`--compute`, no static set).
    Coreinfer,
    /// A slice with dynamic-only computation (`--compute --no-static`).
    CoreinferLoading,
    /// A random slice (the paper's ablation), dense or with `--compute`.
    RandomLoading,
    /// llama.cpp's Q4_0 quantization of the original, dense.
    #[value(name = "q4_0")]
    #[serde(rename = "q4_0")]
    Q4_0,
    /// llama.cpp's Q4_K_M quantization, dense.
    #[value(name = "q4_k_m")]
    #[serde(rename = "q4_k_m")]
    Q4KM,
    /// llama.cpp's Q8_0 quantization, dense.
    #[value(name = "q8_0")]
    #[serde(rename = "q8_0")]
    Q8_0,
    /// The original model memory-mapped from disk while the process's memory is
    /// capped below its size (`--mem-cap`): pages are evicted and read again.
    DiskOffload,
}

impl Method {
    /// The name used on the command line and in CSV files.
    pub const fn name(self) -> &'static str {
        match self {
            Method::Reference => "reference",
            Method::DenseLoaded => "dense-loaded",
            Method::Selectinfer => "selectinfer",
            Method::Coreinfer => "coreinfer",
            Method::CoreinferLoading => "coreinfer-loading",
            Method::RandomLoading => "random-loading",
            Method::Q4_0 => "q4_0",
            Method::Q4KM => "q4_k_m",
            Method::Q8_0 => "q8_0",
            Method::DiskOffload => "disk-offload",
        }
    }

    /// Every method in display order: the order of tables, legends and bars, and
    /// the index of each method's colour in the plots.
    pub const ALL: [Method; 10] = [
        Method::Reference,
        Method::DenseLoaded,
        Method::Selectinfer,
        Method::Coreinfer,
        Method::CoreinferLoading,
        Method::RandomLoading,
        Method::Q4_0,
        Method::Q4KM,
        Method::Q8_0,
        Method::DiskOffload,
    ];

    /// The method a command line or CSV row names (see [`Method::name`]).
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Position in [`Method::ALL`].
    pub fn rank(self) -> usize {
        Method::ALL.iter().position(|m| *m == self).expect("every method is in Method::ALL")
    }

    /// The display position of a row's method name: known methods in
    /// [`Method::ALL`] order, any other name after all of them.
    pub fn rank_of(name: &str) -> usize {
        Method::from_name(name).map_or(Method::ALL.len(), Method::rank)
    }

    /// Whether the method computes only a share φ of its loaded neurons per token
    /// (`--compute`, with the token share α). The experiment grid gives these
    /// methods φ and α; random-loading can also be run dense by hand.
    pub const fn computes(self) -> bool {
        matches!(self, Method::Selectinfer | Method::Coreinfer | Method::CoreinferLoading | Method::RandomLoading)
    }

    /// Whether the method computes every neuron its file holds (the others
    /// [`compute`](Method::computes) a share φ).
    pub const fn is_dense(self) -> bool {
        !self.computes()
    }

    /// Whether the method runs on a slice of the model, which takes a load share γ
    /// (and, except coreinfer-loading, a static share δ).
    pub const fn slices(self) -> bool {
        matches!(self, Method::DenseLoaded | Method::Selectinfer | Method::CoreinferLoading | Method::RandomLoading)
    }

    /// Whether the method is a baseline every other method is measured against:
    /// the unsliced reference and llama.cpp's quantizations of it (the plots label
    /// their points by name).
    pub const fn is_baseline(self) -> bool {
        matches!(self, Method::Reference | Method::Q4_0 | Method::Q4KM | Method::Q8_0)
    }

    /// Errors unless the file and compute options are what this method means.
    pub fn check(self, g: &GgufFile, compute: Option<&ComputeOptions>) -> anyhow::Result<()> {
        let meta = SliceMeta::from_gguf(g)?;
        let info = ModelInfo::from_gguf(g)?;
        let path = g.path.display();
        let sliced = |sel: &str| meta.as_ref().is_some_and(|m| m.selection == sel);
        let weight_type = |want: &str| info.ffn_types.iter().any(|t| t == want);
        let no_static = compute.is_some_and(|c| c.no_static);
        let ok = match self {
            // The original model: F16, or a quantized download with no F16 original
            // (the dense file its user runs).
            Method::Reference => meta.is_none() && compute.is_none(),
            Method::DenseLoaded => sliced("profile") && compute.is_none(),
            Method::Selectinfer => sliced("profile") && compute.is_some() && !no_static,
            Method::Coreinfer => meta.is_none() && compute.is_some(),
            Method::CoreinferLoading => meta.is_some() && compute.is_some() && no_static,
            Method::RandomLoading => sliced("random"),
            Method::Q4_0 => meta.is_none() && compute.is_none() && weight_type("Q4_0"),
            Method::Q4KM => meta.is_none() && compute.is_none() && weight_type("Q4_K"),
            Method::Q8_0 => meta.is_none() && compute.is_none() && weight_type("Q8_0"),
            Method::DiskOffload => meta.is_none() && compute.is_none(),
        };
        if !ok {
            let what = match self {
                Method::Reference => "an unsliced model (F16, or the quantized file itself where no F16 original exists) and no --compute",
                Method::DenseLoaded => "a profile-guided slice (selectinfer slice --profile) and no --compute",
                Method::Selectinfer => "a profile-guided slice and --compute (without --no-static)",
                Method::Coreinfer => "an unsliced model and --compute",
                Method::CoreinferLoading => "a sliced model, --compute and --no-static",
                Method::RandomLoading => "a random slice (selectinfer slice --random)",
                Method::Q4_0 => "an unsliced Q4_0 model (selectinfer convert --to q4_0) and no --compute",
                Method::Q4KM => "an unsliced Q4_K_M model (selectinfer convert --to q4_k_m) and no --compute",
                Method::Q8_0 => "an unsliced Q8_0 model (selectinfer convert --to q8_0) and no --compute",
                Method::DiskOffload => "an unsliced model and no --compute",
            };
            bail!(
                "method {} needs {what}; {path} is {} (FFN types {}){}",
                self.name(),
                meta.as_ref().map_or("not sliced".to_string(), |m| format!("sliced ({}, load {})", m.selection, m.load)),
                info.ffn_types.join("/"),
                if compute.is_some() { " and --compute was given" } else { "" }
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_method_is_listed_once_and_named_as_clap_names_it() {
        for (i, m) in Method::ALL.into_iter().enumerate() {
            assert_eq!(m.rank(), i);
            assert_eq!(Method::from_name(m.name()), Some(m));
            let clap_name = m.to_possible_value().expect("no skipped variants").get_name().to_string();
            assert_eq!(clap_name, m.name());
        }
        assert_eq!(Method::value_variants().len(), Method::ALL.len());
        assert_eq!(Method::rank_of("not-a-method"), Method::ALL.len());
        // The facts the grid and the plots rely on.
        assert!(Method::Coreinfer.computes() && !Method::Coreinfer.slices());
        assert!(Method::DenseLoaded.slices() && Method::DenseLoaded.is_dense());
        assert!(Method::Q4KM.is_baseline() && !Method::DiskOffload.is_baseline());
    }
}
