//! Which neurons each layer keeps (the loading mask), read from the rankings: the
//! end of profiling and the start of everything that slices. The fit
//! ([`crate::fit`]) fits for these sets, `slice` ([`crate::select`]) writes them.
//! In the paper's terms:
//! gamma (`--load`) is the kept share of a layer's N neurons, delta (`--static`)
//! the share taken from the top of the task ("base") ranking; the rest, up to
//! gamma*N, comes from the model-wide ("secondary") ranking, skipping neurons
//! already kept.

use std::ops::Range;
use std::path::Path;

use super::ranking::{check_model_lineage, model_ranking_path, read_ranking, task_ranking_path, Importance, LayerRanking, ModelFingerprint, Ranking};
use crate::tasks::Task;
use crate::util::rng::SplitMix64;

/// Kept neurons of one sliced layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerKeep {
    /// Original indices in the order the new file stores them. For a partial layer
    /// the static neurons come first, so positions `0..static.len()` are static.
    /// A layer that keeps all N neurons keeps the original order (its tensors are
    /// copied byte for byte).
    pub kept: Vec<u32>,
    /// Original indices of the static neurons (always computed).
    pub static_set: Vec<u32>,
}

impl LayerKeep {
    /// Whether all `n` neurons are kept in their original order.
    pub fn is_whole(&self, n: usize) -> bool {
        self.kept.len() == n && self.kept.iter().enumerate().all(|(i, &k)| i == k as usize)
    }
}

/// How many of `n` neurons a share keeps: `round(share * n)`.
pub fn count(share: f64, n: usize) -> usize {
    ((share * n as f64).round() as usize).min(n)
}

/// Profile-guided keep set: the top `round(delta*N)` of `base` (static), then
/// `secondary` neurons not yet kept until `round(gamma*N)`.
pub fn keep_from_profile(base: &LayerRanking, secondary: &LayerRanking, gamma: f64, delta: f64) -> LayerKeep {
    let n = base.order.len();
    let (k_load, k_static) = (count(gamma, n), count(delta, n).min(count(gamma, n)));
    let static_set: Vec<u32> = base.top(k_static).to_vec();
    if k_load == n {
        return LayerKeep { kept: (0..n as u32).collect(), static_set };
    }
    let mut taken = vec![false; n];
    static_set.iter().for_each(|&i| taken[i as usize] = true);
    let mut kept = static_set.clone();
    for &i in &secondary.order {
        if kept.len() == k_load {
            break;
        }
        if !taken[i as usize] {
            taken[i as usize] = true;
            kept.push(i);
        }
    }
    LayerKeep { kept, static_set }
}

/// The random-loading ablation: a uniformly random `round(gamma*N)` of the layer
/// (seeded; the first `round(delta*N)` of the random order are the static set).
pub fn keep_random(n: usize, gamma: f64, delta: f64, rng: &mut SplitMix64) -> LayerKeep {
    let (k_load, k_static) = (count(gamma, n), count(delta, n).min(count(gamma, n)));
    let mut order: Vec<u32> = (0..n as u32).collect();
    // Fisher-Yates.
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let static_set = order[..k_static].to_vec();
    if k_load == n {
        return LayerKeep { kept: (0..n as u32).collect(), static_set };
    }
    order.truncate(k_load);
    LayerKeep { kept: order, static_set }
}

/// The default range of sparsified layers, scaled from the paper's.
///
/// The paper sparsifies layers 4..26 of Llama-3.2-3B's 28: the first ~15% and the
/// last ~7% stay whole. We use `start = round(0.15 n)`, `end = n - round(0.07 n)`,
/// which gives exactly 4..26 for 28 layers, 5..28 for SmolLM2's 30 and 3..17 for
/// Gemma-3-270M's 18.
pub fn default_layer_range(n_layer: usize) -> Range<usize> {
    let start = (0.15 * n_layer as f64).round() as usize;
    let end = n_layer - (0.07 * n_layer as f64).round() as usize;
    start.min(end)..end
}

/// Which ranking fills the loaded neurons after the static ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Secondary {
    /// The model-wide ranking, the mean over tasks (the paper's).
    #[default]
    Model,
    /// The task's own ranking: the slice keeps the task's top gamma*N.
    Task,
}

impl Secondary {
    /// The name used on the command line and in metadata.
    pub fn name(self) -> &'static str {
        match self {
            Secondary::Model => "model",
            Secondary::Task => "task",
        }
    }
}

/// The base (the task's) and secondary rankings a profile slice of `task` takes
/// its neurons from, of the ranking `importance`, each checked to describe the
/// model `fp` (or a file in its `lineage`).
pub fn slice_rankings(dir: &Path, importance: Importance, secondary: Secondary, task: Task, fp: &ModelFingerprint, lineage: &[String]) -> anyhow::Result<(Ranking, Ranking)> {
    let dir = &importance.ranking_dir(dir);
    let sec_path = match secondary {
        Secondary::Model => model_ranking_path(dir),
        Secondary::Task => task_ranking_path(dir, task),
    };
    let base_path = task_ranking_path(dir, task);
    let base = read_ranking(&base_path, dir)?;
    let secondary = read_ranking(&sec_path, dir)?;
    check_model_lineage(&base_path, &base.model, fp, lineage)?;
    check_model_lineage(&sec_path, &secondary.model, fp, lineage)?;
    Ok((base, secondary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_first_then_secondary_without_repeats() {
        let base = LayerRanking { order: vec![5, 4, 3, 2, 1, 0, 9, 8, 7, 6], scores: vec![0.0; 10] };
        let secondary = LayerRanking { order: vec![4, 0, 5, 1, 9, 2, 3, 6, 7, 8], scores: vec![0.0; 10] };
        let k = keep_from_profile(&base, &secondary, 0.6, 0.3);
        assert_eq!(k.static_set, vec![5, 4, 3]);
        assert_eq!(k.kept, vec![5, 4, 3, 0, 1, 9]);
        let whole = keep_from_profile(&base, &secondary, 1.0, 0.3);
        assert!(whole.is_whole(10));
        assert_eq!(whole.static_set, vec![5, 4, 3]);
    }

    #[test]
    fn random_keeps_distinct_neurons_reproducibly() {
        let a = keep_random(100, 0.7, 0.3, &mut SplitMix64::new(7));
        let b = keep_random(100, 0.7, 0.3, &mut SplitMix64::new(7));
        assert_eq!(a, b);
        let mut s = a.kept.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 70);
        assert_eq!(a.static_set, a.kept[..30].to_vec());
    }

    #[test]
    fn default_range_matches_the_paper() {
        assert_eq!(default_layer_range(28), 4..26);
        assert_eq!(default_layer_range(30), 5..28);
        assert_eq!(default_layer_range(18), 3..17);
    }
}
