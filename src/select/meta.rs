//! The selection a sliced file records in its metadata (`selectinfer.*` keys), so
//! later stages work from the file alone.

use anyhow::Context;

use super::rewrite::DownLayout;
use super::variant::SliceVariant;
use crate::gguf::{GgufFile, Value};
use crate::model::NEURON_MAJOR_KEY;

/// Prefix of every metadata key the slicer writes.
pub const META_PREFIX: &str = "selectinfer.";

/// The selection recorded in a sliced file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SliceMeta {
    /// gamma.
    pub load: f64,
    /// delta.
    pub static_share: f64,
    /// `"profile"` or `"random"`.
    pub selection: String,
    /// Base task (profile selection).
    pub task: Option<String>,
    /// Seed (random selection).
    pub random_seed: Option<u64>,
    /// Sparsified layers.
    pub layer_start: usize,
    /// End of the sparsified layers (exclusive).
    pub layer_end: usize,
    /// sha256 of the base and secondary ranking files (profile selection).
    pub profile_sha256: Option<String>,
    /// sha256 of the source model file.
    pub source_sha256: String,
    /// FFN width per layer of the source.
    pub source_n_ff: Vec<u64>,
    /// FFN bytes of the source.
    pub source_ffn_bytes: u64,
    /// Kept original neuron indices per layer (file order), for sparsified layers.
    pub kept: Vec<Option<Vec<u32>>>,
    /// Static original neuron indices per layer, for sparsified layers.
    pub static_set: Vec<Option<Vec<u32>>>,
    /// How ffn_down is stored.
    pub down_layout: DownLayout,
    /// Importance, budget and compensation ([`super::variant`]).
    pub variant: SliceVariant,
}

/// The metadata key `s` under [`META_PREFIX`].
pub fn key(s: &str) -> String {
    format!("{META_PREFIX}{s}")
}

impl SliceMeta {
    /// Reads the selection from a file's metadata; `None` for an unsliced file.
    pub fn from_gguf(g: &GgufFile) -> anyhow::Result<Option<SliceMeta>> {
        if g.get(&key("format")).is_none() {
            return Ok(None);
        }
        let num = |k: &str| g.get(&key(k)).and_then(Value::as_f64).with_context(|| format!("{}: {} missing", g.path.display(), key(k)));
        let string = |k: &str| g.get_str(&key(k)).map(str::to_string);
        let list = |k: &str| -> Option<Vec<u32>> { g.get(&key(k)).and_then(Value::as_u64_list).map(|v| v.into_iter().map(|x| x as u32).collect()) };
        let (start, end) = (num("layer_start")? as usize, num("layer_end")? as usize);
        let source_n_ff = g.get(&key("source_n_ff")).and_then(Value::as_u64_list).context("selectinfer.source_n_ff missing")?;
        let per_layer = |what: &str| (0..source_n_ff.len()).map(|l| list(&format!("blk.{l}.{what}"))).collect();
        let meta = SliceMeta {
            load: num("load")?,
            static_share: num("static")?,
            selection: string("selection").unwrap_or_default(),
            task: string("task"),
            random_seed: g.get_u64(&key("random_seed")),
            layer_start: start,
            layer_end: end,
            profile_sha256: string("profile_sha256"),
            source_sha256: string("source_sha256").unwrap_or_default(),
            source_ffn_bytes: num("source_ffn_bytes")? as u64,
            kept: per_layer("kept"),
            static_set: per_layer("static"),
            variant: SliceVariant::from_gguf(g),
            source_n_ff,
            down_layout: DownLayout::of(g),
        };
        super::validate::check(g, &meta).map_err(|e| anyhow::anyhow!("{}: invalid slice metadata: {e}", g.path.display()))?;
        Ok(Some(meta))
    }

    /// The metadata the slicer writes for this selection.
    pub(super) fn to_metadata(&self) -> Vec<(String, Value)> {
        let mut m = vec![
            (key("format"), Value::U32(1)),
            (key("load"), Value::F64(self.load)),
            (key("static"), Value::F64(self.static_share)),
            (key("selection"), Value::String(self.selection.clone())),
            (key("layer_start"), Value::U32(self.layer_start as u32)),
            (key("layer_end"), Value::U32(self.layer_end as u32)),
            (key("source_sha256"), Value::String(self.source_sha256.clone())),
            (key("source_n_ff"), Value::u32s(self.source_n_ff.iter().map(|&n| n as u32))),
            (key("source_ffn_bytes"), Value::U64(self.source_ffn_bytes)),
        ];
        if self.down_layout == DownLayout::Neurons {
            m.push((NEURON_MAJOR_KEY.to_string(), Value::Bool(true)));
        }
        if let Some(t) = &self.task {
            m.push((key("task"), Value::String(t.clone())));
        }
        if let Some(s) = self.random_seed {
            m.push((key("random_seed"), Value::U64(s)));
        }
        if let Some(p) = &self.profile_sha256 {
            m.push((key("profile_sha256"), Value::String(p.clone())));
        }
        m.extend(self.variant.to_metadata());
        for (l, (kept, stat)) in self.kept.iter().zip(&self.static_set).enumerate() {
            if let (Some(kept), Some(stat)) = (kept, stat) {
                m.push((key(&format!("blk.{l}.kept")), Value::u32s(kept.iter().copied())));
                m.push((key(&format!("blk.{l}.static")), Value::u32s(stat.iter().copied())));
            }
        }
        m
    }
}
