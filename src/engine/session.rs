//! A context over a loaded model: KV cache, batched decoding, greedy generation.

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::backend::{backend, take_recent_errors, EngineError};
use super::callback::{eval_callback, CallbackState, TensorObserver};
use super::compact::{CompactBuffers, CompactLayer, CompactShape};
use super::{Model, Token};

/// Context settings.
pub struct SessionOptions {
    /// Context length in tokens.
    pub n_ctx: u32,
    /// Tokens per decode call during prefill.
    pub n_batch: u32,
    /// CPU threads for decode and prefill.
    pub threads: i32,
    /// Receives the graph nodes it asks for (profiling, reference masking).
    pub observer: Option<Box<dyn TensorObserver>>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions { n_ctx: 2048, n_batch: 512, threads: default_threads(), observer: None }
    }
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("n_ctx", &self.n_ctx)
            .field("n_batch", &self.n_batch)
            .field("threads", &self.threads)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// Most CPU threads a command accepts.
pub const MAX_THREADS: i32 = 1024;

/// The machine's available parallelism, as llama.cpp tools default to.
pub fn default_threads() -> i32 {
    std::thread::available_parallelism().map_or(4, |n| n.get() as i32)
}

/// Sampling and stopping for [`Session::generate`].
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// 0 = greedy (argmax); above 0 samples with top-k 40, top-p 0.95 at this temperature.
    pub temperature: f32,
    /// Seed of the sampler (used when `temperature > 0`).
    pub seed: u32,
    /// Keep generating past end-of-generation tokens (benchmarks want exactly
    /// `max_tokens`).
    pub ignore_eog: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions { max_tokens: 128, temperature: 0.0, seed: 0, ignore_eog: false }
    }
}

/// Timings of one [`Session::generate`] call.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GenerateStats {
    /// Prompt tokens decoded.
    pub prompt_tokens: usize,
    /// Seconds spent on them.
    pub prefill_s: f64,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Seconds spent generating them (sampling and decode of each).
    pub decode_s: f64,
}

impl GenerateStats {
    /// Prompt tokens per second.
    pub fn prefill_tps(&self) -> f64 {
        rate(self.prompt_tokens, self.prefill_s)
    }
    /// Generated tokens per second, counting the decode steps: the first generated
    /// token comes from the prefill logits, so n tokens take n - 1 decode calls.
    pub fn decode_tps(&self) -> f64 {
        rate(self.generated_tokens.saturating_sub(1), self.decode_s)
    }
}

fn rate(n: usize, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

impl Drop for Session<'_> {
    /// Takes the compacted FFN off the context while the context is alive, so that
    /// the context never points at freed tensors ([`CompactBuffers`] checks it).
    fn drop(&mut self) {
        self.clear_compact_ffn();
    }
}

/// One row of a decode call: `token` at position `pos` of sequence `seq`, and
/// whether its logits are kept.
pub(super) struct BatchRow {
    pub seq: usize,
    pub pos: usize,
    pub token: Token,
    pub logits: bool,
}

/// A llama.cpp context: a model, a KV cache and what has been decoded into it.
pub struct Session<'m> {
    // Field order matters: the context must be dropped before the callback state it
    // points to.
    pub(super) ctx: LlamaContext<'m>,
    compact: Option<CompactBuffers>,
    _callback: Option<Box<CallbackState>>,
    model: &'m Model,
    batch: LlamaBatch<'static>,
    n_past: usize,
    n_ctx: usize,
    pub(super) n_batch: usize,
    /// How many times cached tokens were dropped ([`Session::clear`], a
    /// [`Session::truncate`] that dropped some): a prefix cached with one count is
    /// still in the cache while the count is the same.
    removals: u64,
}

impl<'m> Session<'m> {
    /// Creates a context on `model`.
    pub fn new(model: &'m Model, opts: SessionOptions) -> Result<Session<'m>, EngineError> {
        Session::open(model, opts, 1)
    }

    /// [`Session::new`] with a KV cache of its own for each of `n_seq` sequences,
    /// `opts.n_ctx` tokens each ([`super::Sequences`] decodes them).
    pub(super) fn open(model: &'m Model, opts: SessionOptions, n_seq: u32) -> Result<Session<'m>, EngineError> {
        let n_seq = n_seq.max(1);
        let what = format!("n_ctx {}, n_batch {}, {} sequences", opts.n_ctx, opts.n_batch, n_seq);
        let n_batch = opts.n_batch.min(opts.n_ctx).max(1);
        let total = opts.n_ctx.checked_mul(n_seq).ok_or_else(|| EngineError::Context { what: what.clone(), log: String::new() })?;
        let mut params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(total))
            .with_n_seq_max(n_seq)
            .with_n_batch(n_batch)
            .with_n_ubatch(n_batch)
            .with_n_threads(opts.threads)
            .with_n_threads_batch(opts.threads);
        let mut callback = opts.observer.map(|o| CallbackState::new(o, model));
        if let Some(state) = callback.as_mut() {
            let user_data = (&mut **state) as *mut CallbackState as *mut std::ffi::c_void;
            // SAFETY: the state is boxed (stable address) and owned by the Session,
            // which drops the context first.
            params = unsafe { params.with_cb_eval(Some(eval_callback), user_data) };
        }
        let _ = take_recent_errors();
        let ctx = model
            .inner
            .new_context(backend()?, params)
            .map_err(|_| EngineError::Context { what, log: take_recent_errors() })?;
        let n_ctx = ctx.n_ctx() as usize;
        Ok(Session {
            ctx,
            compact: None,
            _callback: callback,
            model,
            batch: LlamaBatch::new(n_batch as usize, 1),
            n_past: 0,
            n_ctx,
            n_batch: n_batch as usize,
            removals: 0,
        })
    }

    /// The model.
    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// Tokens decoded into the KV cache so far.
    pub fn n_past(&self) -> usize {
        self.n_past
    }

    /// Context length.
    pub fn n_ctx(&self) -> usize {
        self.n_ctx
    }

    /// Tokens decoded per batch.
    pub fn n_batch(&self) -> usize {
        self.n_batch
    }

    /// How many times cached tokens were dropped (by [`Session::clear`] or a
    /// [`Session::truncate`] that dropped some) since the session was made: the
    /// first `n` cached tokens are the same ones while this and `n <= n_past` hold.
    pub fn removals(&self) -> u64 {
        self.removals
    }

    /// Forgets everything decoded (clears the KV cache).
    pub fn clear(&mut self) {
        self.ctx.clear_kv_cache();
        self.n_past = 0;
        self.removals += 1;
    }

    /// Keeps only the first `n` cached tokens (for a conversation whose rendered text
    /// changed after that point). Returns false when the cache could not drop a
    /// suffix (sliding-window caches), in which case it was cleared entirely.
    pub fn truncate(&mut self, n: usize) -> bool {
        if n >= self.n_past {
            return true;
        }
        let ok = self.ctx.clear_kv_cache_seq(Some(0), Some(n as u32), None).unwrap_or(false);
        if ok {
            self.n_past = n;
            self.removals += 1;
        } else {
            self.clear();
        }
        ok
    }

    /// Decodes `tokens` after what is already in the cache, in batches of `n_batch`.
    /// With `all_logits` every position's logits are kept (read them with
    /// [`logits`](Self::logits)); otherwise only the last one's.
    pub fn decode(&mut self, tokens: &[Token], all_logits: bool) -> Result<(), EngineError> {
        self.decode_where(tokens, |i| all_logits || i + 1 == tokens.len())
    }

    /// [`Session::decode`], with logits for the tokens at the indices `want` accepts.
    fn decode_where(&mut self, tokens: &[Token], want: impl Fn(usize) -> bool) -> Result<(), EngineError> {
        let needed = self.n_past + tokens.len();
        if needed > self.n_ctx {
            return Err(EngineError::ContextFull { needed, n_ctx: self.n_ctx });
        }
        if let Some(c) = &self.compact {
            if c.epoch.is_some_and(|e| e != self.model.ffn_order_epoch()) {
                return Err(EngineError::Decode(
                    "the model's FFN order changed since this session set its views (another session selected); select again".into(),
                ));
            }
        }
        let n_batch = self.n_batch;
        for (ci, chunk) in tokens.chunks(n_batch).enumerate() {
            let n_past = self.n_past;
            let rows = chunk.iter().enumerate().map(|(i, &t)| BatchRow { seq: 0, pos: n_past + i, token: t, logits: want(ci * n_batch + i) });
            self.decode_rows(rows)?;
            self.n_past += chunk.len();
        }
        Ok(())
    }

    /// One decode call over `rows` (at most `n_batch` of them): the one place
    /// that fills llama.cpp's batch and decodes it, for this session's own
    /// sequence 0 and for [`Sequences`](super::Sequences)' several.
    pub(super) fn decode_rows(&mut self, rows: impl IntoIterator<Item = BatchRow>) -> Result<(), EngineError> {
        self.batch.clear();
        for r in rows {
            self.batch
                .add(LlamaToken(r.token), r.pos as i32, &[r.seq as i32], r.logits)
                .map_err(|e| EngineError::Decode(e.to_string()))?;
        }
        self.ctx.decode(&mut self.batch).map_err(|e| EngineError::Decode(format!("{e}{}", take_recent_errors())))
    }

    /// Logits of the `i`-th token of the last decode call's final batch (`-1` = last).
    pub fn logits(&self, i: i32) -> &[f32] {
        let i = if i < 0 { self.batch.n_tokens() + i } else { i };
        self.ctx.get_logits_ith(i)
    }

    /// Decodes `tokens` from an empty cache and returns every position's logits.
    /// Used by tests; `tokens` must fit one batch.
    pub fn eval_all_logits(&mut self, tokens: &[Token]) -> Result<Vec<Vec<f32>>, EngineError> {
        self.eval_logits_from(tokens, 0)
    }

    /// Decodes `tokens` from an empty cache and returns the logits of positions
    /// `first..`: only those rows go through the output layer, which for a large
    /// vocabulary costs more than the rest of the model (perplexity scores the
    /// second half of each chunk). `tokens` must fit one batch.
    pub fn eval_logits_from(&mut self, tokens: &[Token], first: usize) -> Result<Vec<Vec<f32>>, EngineError> {
        self.eval_from(tokens, first)?;
        Ok((first..tokens.len()).map(|i| self.logits(i as i32).to_vec()).collect())
    }

    /// [`Session::eval_logits_from`] without reading the logits: for an observer of
    /// the graph, which sees every layer's activations of every token, except the
    /// last layer's, which llama.cpp computes for positions `first..` only.
    pub fn eval_from(&mut self, tokens: &[Token], first: usize) -> Result<(), EngineError> {
        self.clear();
        if tokens.len() > self.n_batch {
            return Err(EngineError::Decode(format!("{} tokens exceed n_batch {}", tokens.len(), self.n_batch)));
        }
        self.decode_where(tokens, |i| i >= first)
    }

    /// Restricts the FFN of the layers in `shapes` to compacted weights for the
    /// following decode calls (selective computation), replacing any earlier set.
    /// `fill` gathers one layer's weights; it is called once per shape, in order,
    /// after the backend buffer is allocated, so the gathered copies do not pile up.
    pub fn set_compact_ffn(
        &mut self,
        shapes: &[CompactShape],
        fill: impl FnMut(&CompactShape) -> Result<CompactLayer, String>,
    ) -> Result<(), EngineError> {
        self.clear_compact_ffn();
        if shapes.is_empty() {
            return Ok(());
        }
        // SAFETY: both pointers are valid for the session's lifetime; the buffers are
        // cleared from the context before they are dropped (clear_compact_ffn, Drop).
        let c = unsafe { CompactBuffers::install(self.ctx.as_raw_ptr(), self.model.inner.as_raw_ptr(), shapes, fill)? };
        self.compact = Some(c);
        Ok(())
    }

    /// Restricts the FFN of each `(layer, k)` to the first `k` neurons of the
    /// layer's own weights, as they are ordered now ([`Model::place_ffn_prefix`]):
    /// zero-copy selective computation. Decoding fails if the model's order
    /// changes while the views are set.
    pub fn set_ffn_prefix_views(&mut self, layers: &[(usize, usize)]) -> Result<(), EngineError> {
        self.clear_compact_ffn();
        if layers.is_empty() {
            return Ok(());
        }
        // SAFETY: both pointers are valid for the session's lifetime; the views are
        // cleared from the context before they are dropped (clear_compact_ffn, Drop).
        let down_rows = crate::model::ffn_down_neuron_major(self.model.gguf());
        let mut c = unsafe { CompactBuffers::install_views(self.ctx.as_raw_ptr(), self.model.inner.as_raw_ptr(), layers, down_rows)? };
        c.epoch = Some(self.model.ffn_order_epoch());
        self.compact = Some(c);
        Ok(())
    }

    /// Restores every layer's own FFN weights.
    pub fn clear_compact_ffn(&mut self) {
        if let Some(mut c) = self.compact.take() {
            // SAFETY: installed on this context.
            unsafe { c.clear(self.ctx.as_raw_ptr()) };
        }
    }

    /// Layers currently computing compacted FFNs.
    pub fn compact_layers(&self) -> &[usize] {
        self.compact.as_ref().map_or(&[], |c| &c.layers)
    }

    /// Decodes `prompt` after the cached tokens, then generates up to
    /// `opts.max_tokens` tokens, handing each piece of text to `on_text` as it comes
    /// (return false to stop). Stops at an end-of-generation token, which is not
    /// returned. Returns the generated tokens and timings.
    pub fn generate(
        &mut self,
        prompt: &[Token],
        opts: &GenerateOptions,
        on_text: impl FnMut(&str) -> bool,
    ) -> Result<(Vec<Token>, GenerateStats), EngineError> {
        let stats = self.prefill(prompt)?;
        self.continue_generation(stats, opts, on_text)
    }

    /// The first half of [`generate`](Self::generate): decodes the prompt and times it.
    pub fn prefill(&mut self, prompt: &[Token]) -> Result<GenerateStats, EngineError> {
        let mut stats = GenerateStats { prompt_tokens: prompt.len(), ..Default::default() };
        let t0 = Instant::now();
        self.decode(prompt, false)?;
        stats.prefill_s = t0.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// [`prefill`](Self::prefill) with the prompt's last `n_batch` tokens (all of a
    /// shorter prompt) decoded as one batch of their own, after the tokens before
    /// them: `before_last(its length)` runs between, so that an observer can take
    /// that batch's rows whole, one callback per node, and nothing before them.
    pub fn prefill_last_batch_whole(&mut self, prompt: &[Token], before_last: impl FnOnce(usize)) -> Result<GenerateStats, EngineError> {
        let needed = self.n_past + prompt.len();
        if needed > self.n_ctx {
            return Err(EngineError::ContextFull { needed, n_ctx: self.n_ctx });
        }
        let mut stats = GenerateStats { prompt_tokens: prompt.len(), ..Default::default() };
        let t0 = Instant::now();
        let (head, last) = prompt.split_at(prompt.len().saturating_sub(self.n_batch));
        // The head needs no logits (as the earlier batches of `prefill` need none).
        self.decode_where(head, |_| false)?;
        before_last(last.len());
        self.decode(last, false)?;
        stats.prefill_s = t0.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// The second half of [`generate`](Self::generate): samples from the last
    /// logits and decodes token by token.
    pub fn continue_generation(
        &mut self,
        mut stats: GenerateStats,
        opts: &GenerateOptions,
        mut on_text: impl FnMut(&str) -> bool,
    ) -> Result<(Vec<Token>, GenerateStats), EngineError> {
        let mut sampler = if opts.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::temp(opts.temperature),
                LlamaSampler::dist(opts.seed),
            ])
        };
        let mut out = Vec::new();
        let mut text = Utf8Stream::default();
        let t_start = Instant::now();
        while out.len() < opts.max_tokens {
            let token = sampler.sample(&self.ctx, self.batch.n_tokens() - 1).0;
            sampler.accept(LlamaToken(token));
            if !opts.ignore_eog && self.model.is_end_of_generation(token) {
                break;
            }
            out.push(token);
            let piece = text.push(&self.model.token_bytes(token));
            if !piece.is_empty() && !on_text(&piece) {
                break;
            }
            if out.len() == opts.max_tokens {
                break;
            }
            self.decode(&[token], false)?;
        }
        let rest = text.finish();
        if !rest.is_empty() {
            on_text(&rest);
        }
        // Decode time includes sampling and detokenising each step, as llama.cpp's
        // own eval timings include sampling.
        stats.decode_s = if out.len() > 1 { t_start.elapsed().as_secs_f64() } else { 0.0 };
        stats.generated_tokens = out.len();
        Ok((out, stats))
    }
}

/// Turns token bytes into text without splitting a UTF-8 character across pieces.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes and returns the text that is now complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // An invalid sequence (not just an unfinished one): emit it lossily.
            Err(_) => self.pending.len(),
        };
        let done: Vec<u8> = self.pending.drain(..valid).collect();
        String::from_utf8_lossy(&done).into_owned()
    }

    /// Whatever is left, lossily.
    pub(crate) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&rest).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    #[test]
    fn utf8_stream_holds_back_split_characters() {
        let mut s = Utf8Stream::default();
        let e = "é".as_bytes();
        assert_eq!(s.push(b"caf"), "caf");
        assert_eq!(s.push(&e[..1]), "");
        assert_eq!(s.push(&e[1..]), "é");
        assert_eq!(s.push(&[0xff]), "\u{fffd}");
        assert_eq!(s.finish(), "");
    }
}
