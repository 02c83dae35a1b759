//! The profiler's text: each prompt, then its greedy continuation, several prompts
//! at a time.
//!
//! One sequence at a time, each generated token reads every weight of the model
//! (memory-bound: about as slow as a prompt of 2 to 3 tokens on 2 cores). With K
//! sequences in one context ([`Sequences`]), a decode call advances every
//! sequence that is still generating by one token, so the weights are read once
//! per K tokens; a sequence that finishes takes the next prompt. Each token still
//! goes through the model once, with the same tokens before it, so the
//! activations summed are those of one-at-a-time decoding (up to the order of
//! floating-point sums inside a matrix product).

use anyhow::Context;

use crate::engine::{Model, Sequences, SessionOptions, Token};
use crate::model::{kv_cache_bytes, ModelInfo};
use crate::util::argmax;

/// Prompts generated side by side by default (`profile --sequences`).
pub const DEFAULT_SEQUENCES: usize = 32;

/// Most KV cache the sequences may take together: fewer sequences when the
/// model's cache at the prompts' context length would exceed it.
const SEQUENCES_KV_LIMIT: u64 = 1 << 30;

/// How many of `wanted` sequences of `n_ctx` tokens fit [`SEQUENCES_KV_LIMIT`]
/// (at least one, at most the number of prompts).
fn sequences_for(model: &Model, info: &ModelInfo, n_ctx: u32, wanted: usize, prompts: usize) -> usize {
    let per_seq = kv_cache_bytes(model.gguf(), info, u64::from(n_ctx)).max(1);
    let fit = (SEQUENCES_KV_LIMIT / per_seq) as usize;
    wanted.min(fit).min(prompts).max(1)
}

/// A context for up to `wanted` sequences of `n_ctx` tokens (as many as the
/// prompts of one half, and as fit [`SEQUENCES_KV_LIMIT`]), prompts decoded in
/// batches of up to 512 tokens.
pub fn open<'m>(
    model: &'m Model,
    n_ctx: u32,
    wanted: usize,
    n_prompts: usize,
    threads: i32,
    observer: Option<Box<dyn crate::engine::TensorObserver>>,
) -> anyhow::Result<Sequences<'m>> {
    let info = ModelInfo::from_gguf(model.gguf())?;
    let n_seq = sequences_for(model, &info, n_ctx, wanted, n_prompts.div_ceil(2));
    Ok(Sequences::new(model, SessionOptions { n_ctx, n_batch: 512, threads, observer }, n_seq)?)
}

struct Slot {
    prompt: usize,
    next: Token,
    generated: usize,
    tokens: u64,
}

/// Runs `prompts` through `seqs`: each is decoded into a free sequence (every
/// position's logits when `all_outputs`, so that the last layer, which llama.cpp
/// runs only for output rows, sees every prompt token), then up to `gen_tokens`
/// greedy tokens are decoded after it, stopping before an end-of-generation token.
/// The sequences that are generating advance together, one token each per decode
/// call. `after_step` gets each decode call's token count (every row has gone
/// through the model when it runs); `done` gets each finished prompt's index and
/// the tokens it put through the model. Returns the total.
pub fn run(
    seqs: &mut Sequences<'_>,
    prompts: &[&[Token]],
    gen_tokens: usize,
    all_outputs: bool,
    name: impl Fn(usize) -> String,
    mut after_step: impl FnMut(usize) -> anyhow::Result<()>,
    mut done: impl FnMut(usize, u64),
) -> anyhow::Result<u64> {
    let model = seqs.model();
    let mut slots: Vec<Option<Slot>> = (0..seqs.n_seq()).map(|_| None).collect();
    let mut queue = 0..prompts.len();
    let mut total = 0u64;
    loop {
        for s in 0..slots.len() {
            while slots[s].is_none() {
                let Some(p) = queue.next() else { break };
                seqs.start(s, prompts[p], all_outputs).with_context(|| name(p))?;
                after_step(prompts[p].len()).with_context(|| name(p))?;
                let slot = Slot { prompt: p, next: argmax(seqs.logits(-1)) as Token, generated: 0, tokens: prompts[p].len() as u64 };
                if gen_tokens == 0 || model.is_end_of_generation(slot.next) {
                    total += slot.tokens;
                    done(p, slot.tokens);
                } else {
                    slots[s] = Some(slot);
                }
            }
        }
        let rows: Vec<(usize, Token)> = slots.iter().enumerate().filter_map(|(s, x)| x.as_ref().map(|x| (s, x.next))).collect();
        if rows.is_empty() {
            return Ok(total);
        }
        let names = || rows.iter().filter_map(|&(s, _)| slots[s].as_ref().map(|x| name(x.prompt))).collect::<Vec<_>>().join(", ");
        seqs.step(&rows).with_context(|| format!("generating after {}", names()))?;
        after_step(rows.len()).with_context(|| format!("generating after {}", names()))?;
        for (i, &(s, _)) in rows.iter().enumerate() {
            let next = argmax(seqs.logits(i as i32)) as Token;
            let slot = slots[s].as_mut().expect("a row per generating sequence");
            slot.generated += 1;
            slot.tokens += 1;
            slot.next = next;
            if slot.generated == gen_tokens || model.is_end_of_generation(next) {
                let slot = slots[s].take().expect("checked above");
                total += slot.tokens;
                done(slot.prompt, slot.tokens);
            }
        }
    }
}
