//! The rule of dynamic neuron selection, below both of its users in the data flow:
//! selective computation counts a prompt's votes with it at prefill
//! ([`crate::compute::select::VoteObserver`]), and the computed refit
//! ([`crate::fit::computed`]) fits a slice for the sets it chooses.
//!
//! For every prompt token of a sparsified layer, the top `alpha` share of the
//! loaded neurons by |activation| (or, with [`Vote::Signed`], by signed activation,
//! as the paper's public PartInfer code ranks them) get a vote; after the prompt, the
//! `round(phi*N) - |static|` most-voted non-static neurons are the dynamic set
//! (ties to the lower position). Static + dynamic is what decode computes.

/// What a token's neurons are ranked by when it votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Vote {
    /// |a| (ours; a large negative activation counts as much as a positive one).
    #[default]
    Abs,
    /// a, signed (the paper's public code: the largest positive activations).
    Signed,
}

impl Vote {
    /// Name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Vote::Abs => "abs",
            Vote::Signed => "signed",
        }
    }
}

/// Vote counts of one prompt, per sparsified layer and file position.
#[derive(Debug, Clone)]
pub struct Votes {
    /// Per layer: `None` for layers that are not sparsified, else votes per position.
    pub layers: Vec<Option<Vec<u32>>>,
    /// Tokens that voted, per layer.
    pub tokens: Vec<u64>,
    /// Per layer: the sum of each position's (signed) activation over the tokens
    /// that voted (for `--decode-bias`).
    pub sums: Vec<Option<Vec<f64>>>,
    /// Per layer: the activations of every token that votes once rows are kept
    /// ([`Votes::keep_rows`]; for `--decode-refit`, the prompt's last batch), rows of
    /// the loaded width.
    pub rows: Vec<Option<Vec<f32>>>,
}

impl Votes {
    /// Zero votes for layers of the given loaded widths (`None` = not sparsified).
    pub fn new(widths: &[Option<usize>]) -> Votes {
        Votes {
            layers: widths.iter().map(|w| w.map(|n| vec![0; n])).collect(),
            tokens: vec![0; widths.len()],
            sums: widths.iter().map(|w| w.map(|n| vec![0.0; n])).collect(),
            rows: vec![None; widths.len()],
        }
    }

    /// From now on, also keeps every voting token's activations of the sparsified
    /// layers, with room for `tokens` rows each (reserved, not touched: only the
    /// rows written become resident); rows kept so far are dropped.
    pub fn keep_rows(&mut self, tokens: usize) {
        self.rows = self.layers.iter().map(|l| l.as_ref().map(|v| Vec::with_capacity(tokens * v.len()))).collect();
    }

    /// Adds the votes of `n_tokens` rows of activations of `layer`: each row votes
    /// for its `k` largest |a| (or a, for [`Vote::Signed`]; ties to the lower position).
    pub fn add_rows(&mut self, layer: usize, data: &[f32], width: usize, k: usize, vote: Vote) {
        let Some(Some(votes)) = self.layers.get_mut(layer) else { return };
        let k = k.min(width);
        if k == 0 {
            return;
        }
        let mut idx: Vec<u32> = Vec::with_capacity(width);
        for row in data.chunks_exact(width) {
            idx.clear();
            idx.extend(0..width as u32);
            let value = |i: u32| match vote {
                Vote::Abs => row[i as usize].abs(),
                Vote::Signed => row[i as usize],
            };
            let key = |i: &u32| (std::cmp::Reverse(OrdF32(value(*i))), *i);
            idx.select_nth_unstable_by_key(k - 1, key);
            for &i in &idx[..k] {
                votes[i as usize] += 1;
            }
            if let Some(Some(sums)) = self.sums.get_mut(layer) {
                sums.iter_mut().zip(row).for_each(|(s, &a)| *s += f64::from(a));
            }
            if let Some(Some(kept)) = self.rows.get_mut(layer) {
                kept.extend_from_slice(row);
            }
            self.tokens[layer] += 1;
        }
    }
}

/// f32 with a total order (for sorting activations); equality and the partial
/// order follow the same `total_cmp`, so all four traits agree.
#[derive(Debug, Clone, Copy)]
struct OrdF32(f32);
impl PartialEq for OrdF32 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for OrdF32 {}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The dynamic set of one layer: the `n_dynamic` most-voted positions that are not
/// static, ties to the lower position; returned with the static positions as the
/// sorted set of positions to compute.
pub fn compute_set(votes: &[u32], static_positions: &[u32], n_dynamic: usize) -> Vec<u32> {
    let mut is_static = vec![false; votes.len()];
    static_positions.iter().for_each(|&p| is_static[p as usize] = true);
    let mut candidates: Vec<u32> = (0..votes.len() as u32).filter(|&p| !is_static[p as usize]).collect();
    candidates.sort_by_key(|&p| (std::cmp::Reverse(votes[p as usize]), p));
    let mut set: Vec<u32> = static_positions.iter().copied().chain(candidates.into_iter().take(n_dynamic)).collect();
    set.sort_unstable();
    set
}

/// Neurons decode computes in a layer of `n_orig` neurons with `n_loaded` loaded and
/// `n_static` static: `round(phi * n_orig)`, at most the loaded, at least the static.
pub fn computed_count(phi: f64, n_orig: usize, n_loaded: usize, n_static: usize) -> usize {
    ((phi * n_orig as f64).round() as usize).min(n_loaded).max(n_static)
}

/// Neurons each prompt token votes for among `n_loaded`: `ceil(alpha * n_loaded)`, at least one.
pub fn votes_per_token(alpha: f64, n_loaded: usize) -> usize {
    ((alpha * n_loaded as f64).ceil() as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_count_top_share_per_token() {
        let mut v = Votes::new(&[Some(4), None]);
        // Two tokens, top 2 by |a| each: {1, 2}, then {3, 0} (0 beats 1 on the tie at 1.0).
        v.add_rows(0, &[0.1, -5.0, 3.0, 0.0, 1.0, 1.0, -0.5, 2.0], 4, 2, Vote::Abs);
        assert_eq!(v.layers[0].as_ref().unwrap(), &vec![1, 1, 1, 1]);
        // Ties: |1.0| at positions 0 and 1 -> lower position wins for the last slot.
        let mut t = Votes::new(&[Some(3)]);
        t.add_rows(0, &[1.0, 1.0, 2.0], 3, 2, Vote::Abs);
        assert_eq!(t.layers[0].as_ref().unwrap(), &vec![1, 0, 1]);
        assert_eq!(t.tokens[0], 1);
        v.add_rows(1, &[1.0; 4], 4, 2, Vote::Abs); // not sparsified: ignored
        assert_eq!(v.tokens, vec![2, 0]);
        // Signed: the largest values, so -5.0 loses to 0.1 and 0.0.
        let mut s = Votes::new(&[Some(4)]);
        s.add_rows(0, &[0.1, -5.0, 3.0, 0.0, 1.0, 1.0, -0.5, 2.0], 4, 2, Vote::Signed);
        assert_eq!(s.layers[0].as_ref().unwrap(), &vec![2, 0, 1, 1]);
    }

    #[test]
    fn compute_set_excludes_static_and_breaks_ties_low() {
        let votes = [5, 9, 9, 1, 9, 0];
        // Static {1}; 2 dynamic among the rest: positions 2 and 4 have 9 votes.
        assert_eq!(compute_set(&votes, &[1], 2), vec![1, 2, 4]);
        // 3 dynamic: then 0 (5 votes).
        assert_eq!(compute_set(&votes, &[1], 3), vec![0, 1, 2, 4]);
        // Tie between equal votes goes to the lower position.
        assert_eq!(compute_set(&[3, 3, 3], &[], 1), vec![0]);
        assert_eq!(compute_set(&votes, &[], 0), Vec::<u32>::new());
    }
}
