//! Memory-budget mode: the largest load share gamma whose weights and KV cache fit
//! a byte budget.
//!
//! Accounting: weight bytes = non-FFN bytes + FFN bytes of the layers outside the
//! sparsified range + for each sparsified layer its FFN bytes x round(gamma*N)/N
//! (what `slice` writes, to within the rounding of whole neurons); KV bytes =
//! layers x n_ctx x (K width + V width) x 2 (llama.cpp's default F16 cache). Compute
//! buffers and the process itself are not counted (about 40-50 MiB for SmolLM2, see
//! the README's memory table).

use std::ops::Range;

use anyhow::bail;

use crate::gguf::GgufFile;
use crate::model::{is_ffn_tensor, split_block_name, ModelInfo};

/// Smallest load share the budget search tries; the search also never goes below
/// the static share delta (gamma >= delta). Quality at such shares is poor (the
/// paper's random and low-gamma ablations), but the search reports what fits.
pub const MIN_LOAD: f64 = 0.1;

/// The outcome of a budget search.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BudgetChoice {
    /// Chosen gamma (1.0 = no slicing needed).
    pub load: f64,
    /// Predicted weight bytes at that gamma.
    pub weight_bytes: u64,
    /// KV cache bytes at the context size.
    pub kv_bytes: u64,
    /// The budget.
    pub budget: u64,
}

// Where the session is built too (the profiler sizes its sequences by it).
pub use crate::model::kv_cache_bytes;

/// Predicted weight bytes of a slice at `load` over `range`.
pub fn weight_bytes_at(g: &GgufFile, info: &ModelInfo, load: f64, range: &Range<usize>) -> u64 {
    let mut total = 0f64;
    for t in &g.tensors {
        let b = t.n_bytes().unwrap_or(0) as f64;
        match split_block_name(&t.name) {
            Some((l, _)) if is_ffn_tensor(&t.name) && range.contains(&l) => {
                let n = info.n_ff[l] as f64;
                total += b * (load * n).round() / n;
            }
            _ => total += b,
        }
    }
    total as u64
}

/// The largest gamma in steps of 0.01 from 1.0 down to `max(MIN_LOAD, static_share)`
/// whose weights + KV cache fit `budget`.
pub fn choose_load(g: &GgufFile, budget: u64, n_ctx: u64, static_share: f64, range: &Range<usize>) -> anyhow::Result<BudgetChoice> {
    let info = ModelInfo::from_gguf(g)?;
    let kv = kv_cache_bytes(g, &info, n_ctx);
    let floor = MIN_LOAD.max(static_share);
    let mib = |b: u64| b as f64 / 1048576.0;
    if budget <= info.non_ffn_bytes + kv {
        bail!(
            "a budget of {:.1} MiB cannot hold even the non-FFN weights ({:.1} MiB) and the KV cache at n_ctx {n_ctx} ({:.1} MiB)",
            mib(budget),
            mib(info.non_ffn_bytes),
            mib(kv)
        );
    }
    let mut step = 100i64;
    while step as f64 / 100.0 >= floor - 1e-9 {
        let load = step as f64 / 100.0;
        let w = weight_bytes_at(g, &info, load, range);
        if w + kv <= budget {
            return Ok(BudgetChoice { load, weight_bytes: w, kv_bytes: kv, budget });
        }
        step -= 1;
    }
    let w = weight_bytes_at(g, &info, floor, range);
    bail!(
        "a budget of {:.1} MiB does not fit: at the smallest load share {floor} the weights take {:.1} MiB and the KV cache at n_ctx {n_ctx} {:.1} MiB ({:.1} MiB in all); raise the budget, shorten --ctx or widen --layers",
        mib(budget),
        mib(w),
        mib(kv),
        mib(w + kv)
    )
}
