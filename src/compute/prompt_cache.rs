//! A prompt cache for a run of prompts that share their beginnings, as
//! llama-server's `cache_prompt` keeps the KV cache of what the next prompt shares
//! with the last: k-shot prompts share their shots (and the chat template's system
//! text), and SQuAD's questions on one paragraph share the paragraph.
//!
//! A selective session also needs the votes those tokens counted: a prompt's
//! dynamic set is chosen from the votes of every prompt token
//! ([`super::select::Votes`], sums over tokens), so the cache keeps the votes at
//! checkpoints, the ends of the prefixes later prompts may share, taken when the
//! prefill reached them. A prompt reuses the longest checkpoint it starts with.
//! That gives it the KV cache and votes of a prefill with batch breaks at the
//! checkpoints: llama.cpp's results depend on how a prompt is cut into batches, so
//! a run with the cache is not bit-identical to one without on quantized weights
//! (logits differ by rounding; an answer can change where two tokens are nearly
//! tied). Rows record which was used.

use anyhow::ensure;

use super::select::Votes;
use super::{SelectionStats, SelectiveSession};
use crate::engine::{GenerateOptions, GenerateStats, Token};

/// Most checkpoints kept: the shortest is kept and the oldest longer ones dropped.
const MAX_CHECKPOINTS: usize = 8;

/// Prefixes of earlier prompts whose KV the session holds at positions
/// `0..tokens.len()`, and the votes counted up to each checkpoint.
#[derive(Debug, Clone, Default)]
pub(super) struct PromptCache {
    /// The tokens up to the last checkpoint.
    tokens: Vec<Token>,
    /// (end, the votes of the tokens before it; `None` where the prefill counted
    /// none, a dense plan), ascending.
    checkpoints: Vec<(usize, Option<Votes>)>,
    /// The session's [`crate::engine::Session::removals`] after the last change:
    /// the KV cache still holds the tokens while the count is the same.
    removals: u64,
}

impl PromptCache {
    /// Adds `tokens` after those cached and a checkpoint at their end.
    pub fn push(&mut self, tokens: &[Token], votes: Option<Votes>, removals: u64) {
        self.tokens.extend_from_slice(tokens);
        self.checkpoints.push((self.tokens.len(), votes));
        if self.checkpoints.len() > MAX_CHECKPOINTS {
            self.checkpoints.remove(1);
        }
        self.removals = removals;
    }

    /// The longest checkpoint `prompt` starts with, at most `limit` tokens long,
    /// that counted votes where `count`: its index, where the session (whose
    /// removals are `removals` and which holds `n_past` tokens) still holds it.
    fn reusable(&self, prompt: &[Token], count: bool, limit: usize, removals: u64, n_past: usize) -> Option<usize> {
        if removals != self.removals || n_past < self.tokens.len() {
            return None;
        }
        let shared = common_prefix(&self.tokens, prompt).min(limit);
        self.checkpoints.iter().rposition(|(end, votes)| *end <= shared && (votes.is_some() || !count))
    }

    /// Keeps the checkpoints up to index `i` and the tokens before its end.
    fn truncate_to(&mut self, i: usize, removals: u64) {
        self.checkpoints.truncate(i + 1);
        self.tokens.truncate(self.checkpoints[i].0);
        self.removals = removals;
    }
}

/// The number of leading tokens `a` and `b` share.
pub fn common_prefix(a: &[Token], b: &[Token]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Per prompt, the prefix ends worth a checkpoint: where it stops matching the
/// next prompt, and where the prompts stop matching all of them (the shots and
/// template text every prompt begins with: what the first question on a new
/// paragraph shares with the last on the one before). None for the last prompt.
pub fn checkpoints(prompts: &[Vec<Token>]) -> Vec<Vec<usize>> {
    let first = prompts.first().map_or(&[][..], Vec::as_slice);
    let all = prompts.iter().fold(first.len(), |n, p| n.min(common_prefix(&first[..n], p)));
    let mut v: Vec<Vec<usize>> = prompts.windows(2).map(|w| vec![all, common_prefix(&w[0], &w[1])]).collect();
    v.extend(prompts.last().map(|_| Vec::new()));
    v
}

/// The checkpoints to take in a prompt of `len` tokens whose first `reused` come
/// from the cache, from those `asked`: ascending, after `reused`, and before the
/// last `fresh` tokens, which are always decoded (1 for the last logits; with the
/// decode refit, its whole last batch).
pub fn new_checkpoints(len: usize, reused: usize, asked: &[usize], fresh: usize) -> Vec<usize> {
    let limit = len.saturating_sub(fresh.max(1));
    let mut v: Vec<usize> = asked.iter().map(|&k| k.min(limit)).filter(|&k| k > reused).collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl SelectiveSession<'_> {
    /// [`Self::generate`] from an empty conversation, with a prompt cache (this
    /// module): the longest cached prefix `prompt` starts with is not decoded again,
    /// and the votes at each end in `checkpoints` (where later prompts may stop
    /// matching this one; [`checkpoints`]) are kept for later calls. Also
    /// returns how many tokens were reused. Checkpoints end at most where the
    /// prompt's last token (with the decode refit, its last batch) begins.
    pub fn generate_cached(
        &mut self,
        prompt: &[Token],
        checkpoints: &[usize],
        opts: &GenerateOptions,
        on_text: impl FnMut(&str) -> bool,
    ) -> anyhow::Result<(Vec<Token>, GenerateStats, SelectionStats, usize)> {
        ensure!(!prompt.is_empty(), "an empty prompt");
        let (stats, sel) = self.prefill_counting(prompt, self.plan.is_selective(), Some(checkpoints))?;
        let reused = prompt.len() - stats.prompt_tokens;
        let (tokens, stats) = self.session.continue_generation(stats, opts, on_text)?;
        Ok((tokens, stats, sel, reused))
    }

    /// The ends of the prefixes the prompt cache holds, ascending: where the last
    /// [`Self::generate_cached`] had its prompt cut into batches (besides every
    /// `n_batch` tokens after each), the part it reused included.
    pub fn prompt_cache_ends(&self) -> Vec<usize> {
        self.prefix.as_ref().map_or(Vec::new(), |c| c.checkpoints.iter().map(|(end, _)| *end).collect())
    }

    /// Readies the session for `prompt` with the prompt cache: cut to the longest
    /// checkpoint `prompt` can reuse (else cleared). Returns the tokens reused, the
    /// checkpoints to take ([`new_checkpoints`]) and the votes the reused tokens
    /// counted.
    pub(super) fn reuse_prefix(&mut self, prompt: &[Token], count: bool, asked: &[usize], fits: bool) -> (usize, Vec<usize>, Option<Votes>) {
        let fresh = if fits { prompt.len().min(self.session.n_batch()) } else { 1 };
        let limit = prompt.len().saturating_sub(fresh);
        let (removals, n_past) = (self.session.removals(), self.session.n_past());
        let found = self.prefix.as_ref().and_then(|c| c.reusable(prompt, count, limit, removals, n_past));
        if let (Some(i), Some(cache)) = (found, self.prefix.as_mut()) {
            let (end, votes) = &cache.checkpoints[i];
            let (reused, votes) = (*end, if count { votes.clone() } else { None });
            if self.session.truncate(reused) {
                cache.truncate_to(i, self.session.removals());
                return (reused, new_checkpoints(prompt.len(), reused, asked, fresh), votes);
            }
        }
        // Nothing to reuse, or a cache that cannot drop a suffix (sliding-window
        // layers), which the truncation cleared.
        self.session.clear();
        self.prefix = None;
        (0, new_checkpoints(prompt.len(), 0, asked, fresh), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefixes() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4]), 2);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 4]), 2);
        assert_eq!(common_prefix(&[5], &[1]), 0);
        assert_eq!(common_prefix(&[], &[1]), 0);
    }

    #[test]
    fn checkpoints_keep_the_fresh_tail() {
        assert_eq!(new_checkpoints(10, 4, &[2, 7], 1), vec![7]);
        assert_eq!(new_checkpoints(10, 0, &[7, 2, 7], 1), vec![2, 7]);
        // A prompt that is all prefix still decodes its last token.
        assert_eq!(new_checkpoints(10, 0, &[10], 1), vec![9]);
        // The refit's last batch of 8 is decoded in the call.
        assert_eq!(new_checkpoints(10, 0, &[3, 7], 8), vec![2]);
        assert_eq!(new_checkpoints(5, 0, &[3], 8), Vec::<usize>::new());
    }

    #[test]
    fn the_longest_checkpoint_a_prompt_starts_with_is_reused() {
        let mut c = PromptCache::default();
        c.push(&[1, 2], None, 3);
        c.push(&[3, 4, 5], None, 3);
        // [1, 2] then [1, 2, 3, 4, 5]: a prompt sharing 4 tokens reuses 2.
        assert_eq!(c.reusable(&[1, 2, 3, 4, 9], false, 9, 3, 7), Some(0));
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6], false, 9, 3, 7), Some(1));
        // No more than the limit (the prompt's fresh tail).
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6], false, 4, 3, 7), Some(0));
        // Votes are needed where the prompt counts them.
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6], true, 9, 3, 7), None);
        // A session that dropped tokens since, or holds fewer, holds none of it.
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6], false, 9, 4, 7), None);
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6], false, 9, 3, 4), None);
        assert_eq!(c.reusable(&[9, 2], false, 9, 3, 7), None);
        c.truncate_to(0, 5);
        assert_eq!((c.tokens.as_slice(), c.checkpoints.len(), c.removals), (&[1, 2][..], 1, 5));
    }

    #[test]
    fn checkpoints_at_the_shared_beginning_and_the_next_prompt() {
        let p = vec![vec![1, 2, 3, 4, 5], vec![1, 2, 3, 4, 6], vec![1, 2, 7]];
        assert_eq!(checkpoints(&p), vec![vec![2, 4], vec![2, 2], vec![]]);
        assert!(checkpoints(&[]).is_empty());
    }
}
