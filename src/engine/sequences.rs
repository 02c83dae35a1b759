//! Several sequences decoded side by side in one context: each has a KV cache of
//! its own (llama.cpp's per-sequence streams, `kv_unified` off), and one decode
//! call can advance all of them by a token. The profiler uses it for its greedy
//! continuations: one sequence at a time, decode reads every weight per token and
//! is memory-bound; K sequences read them once per K tokens.

use super::backend::EngineError;
use super::session::{BatchRow, Session, SessionOptions};
use super::{Model, Token};

/// A context holding `n_seq` independent sequences (ids `0..n_seq`).
pub struct Sequences<'m> {
    session: Session<'m>,
    /// Tokens cached per sequence.
    past: Vec<usize>,
    /// Tokens each sequence's cache holds at most.
    n_ctx_seq: usize,
}

impl<'m> Sequences<'m> {
    /// A context for `n_seq` sequences of up to `opts.n_ctx` tokens each; the
    /// observer (if any) sees every decode call's rows, in batch order.
    pub fn new(model: &'m Model, opts: SessionOptions, n_seq: usize) -> Result<Sequences<'m>, EngineError> {
        let n_seq = n_seq.clamp(1, 256);
        let session = Session::open(model, opts, n_seq as u32)?;
        // SAFETY: the context is alive; the call reads one field.
        let n_ctx_seq = unsafe { llama_cpp_sys_2::llama_n_ctx_seq(session.ctx.as_raw_ptr()) } as usize;
        Ok(Sequences { session, past: vec![0; n_seq], n_ctx_seq })
    }

    /// How many sequences the context holds.
    pub fn n_seq(&self) -> usize {
        self.past.len()
    }

    /// The model.
    pub fn model(&self) -> &'m Model {
        self.session.model()
    }

    /// Empties sequence `seq`'s cache and decodes `prompt` into it, in batches of
    /// `n_batch`, keeping every position's logits (`all_logits`) or the last one's.
    pub fn start(&mut self, seq: usize, prompt: &[Token], all_logits: bool) -> Result<(), EngineError> {
        self.check_seq(seq)?;
        if prompt.len() > self.n_ctx_seq {
            return Err(EngineError::ContextFull { needed: prompt.len(), n_ctx: self.n_ctx_seq });
        }
        let ok = self.session.ctx.clear_kv_cache_seq(Some(seq as u32), None, None).unwrap_or(false);
        if !ok {
            return Err(EngineError::Decode(format!("cannot empty the cache of sequence {seq}")));
        }
        self.past[seq] = 0;
        let n_batch = self.session.n_batch;
        for chunk in prompt.chunks(n_batch) {
            let last_chunk = self.past[seq] + chunk.len() == prompt.len();
            let rows: Vec<(usize, Token, bool)> =
                chunk.iter().enumerate().map(|(i, &t)| (seq, t, all_logits || (last_chunk && i + 1 == chunk.len()))).collect();
            self.decode_rows(&rows)?;
        }
        Ok(())
    }

    /// Decodes one token for each `(sequence, token)`, all in one call, keeping
    /// every row's logits ([`logits`](Self::logits)`(i)` is row `i`'s). Rows in
    /// increasing sequence order let llama.cpp take them in one step.
    pub fn step(&mut self, rows: &[(usize, Token)]) -> Result<(), EngineError> {
        for &(seq, _) in rows {
            self.check_seq(seq)?;
            if self.past[seq] + 1 > self.n_ctx_seq {
                return Err(EngineError::ContextFull { needed: self.past[seq] + 1, n_ctx: self.n_ctx_seq });
            }
        }
        if rows.len() > self.session.n_batch {
            return Err(EngineError::Decode(format!("{} rows exceed n_batch {}", rows.len(), self.session.n_batch)));
        }
        let rows: Vec<(usize, Token, bool)> = rows.iter().map(|&(s, t)| (s, t, true)).collect();
        self.decode_rows(&rows)
    }

    /// Logits of row `i` of the last decode call (`-1` = its last row).
    pub fn logits(&self, i: i32) -> &[f32] {
        self.session.logits(i)
    }

    fn check_seq(&self, seq: usize) -> Result<(), EngineError> {
        if seq >= self.past.len() {
            return Err(EngineError::Decode(format!("sequence {seq} of {}", self.past.len())));
        }
        Ok(())
    }

    /// One decode call: `(sequence, token, keep logits)` per row, each at its
    /// sequence's next position.
    fn decode_rows(&mut self, rows: &[(usize, Token, bool)]) -> Result<(), EngineError> {
        let mut next = self.past.clone();
        let rows: Vec<BatchRow> = rows
            .iter()
            .map(|&(seq, token, logits)| {
                next[seq] += 1;
                BatchRow { seq, pos: next[seq] - 1, token, logits }
            })
            .collect();
        self.session.decode_rows(rows)?;
        self.past = next;
        Ok(())
    }
}
