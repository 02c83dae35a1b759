//! Checks a sliced file's `selectinfer.*` metadata against its tensors.
//!
//! [`super::SliceMeta::from_gguf`] runs [`check`] on every file it reads, so
//! selective computation (`compute`), the slicer and `inspect` only ever see a
//! selection that fits the file: the sliced layers inside `block_count`, one
//! source width per layer, per sliced layer a kept list as long as the layer's
//! tensors are wide, with distinct indices inside the source width, and a static
//! set that is the kept list's prefix, round(delta x the source width) long (so
//! an edited source width, which sets how many neurons `--compute` takes, does
//! not pass). A file that breaks any of these (edited by
//! hand, or written by something else) is refused with the key and layer named.

use std::collections::HashSet;

use super::meta::{key, SliceMeta};
use crate::gguf::{GgufFile, Value};
use crate::model::ModelInfo;

/// Why the selection does not fit the file; the message names the key.
pub fn check(g: &GgufFile, meta: &SliceMeta) -> Result<(), String> {
    let info = ModelInfo::from_gguf(g).map_err(|e| e.to_string())?;
    match g.get(&key("format")).and_then(Value::as_u64) {
        Some(1) => {}
        other => return Err(format!("{} is {other:?}; this build reads format 1", key("format"))),
    }
    for k in ["layer_start", "layer_end", "source_ffn_bytes"] {
        if g.get(&key(k)).and_then(Value::as_u64).is_none() {
            return Err(format!("{} must be a non-negative integer, found {:?}", key(k), g.get(&key(k))));
        }
    }
    if !(meta.load.is_finite() && meta.load > 0.0 && meta.load <= 1.0) {
        return Err(format!("{} (gamma) is {}, outside (0, 1]", key("load"), meta.load));
    }
    if !(meta.static_share.is_finite() && meta.static_share >= 0.0 && meta.static_share <= meta.load) {
        return Err(format!("{} (delta) is {}, outside [0, load = {}]", key("static"), meta.static_share, meta.load));
    }
    let n_layer = info.n_layer;
    let (start, end) = (meta.layer_start, meta.layer_end);
    if !(start < end && end <= n_layer) {
        return Err(format!("sliced layers {start}..{end} ({}, {}) are not inside the file's {n_layer} layers", key("layer_start"), key("layer_end")));
    }
    if meta.source_n_ff.len() != n_layer {
        return Err(format!("{} has {} entries for {n_layer} layers", key("source_n_ff"), meta.source_n_ff.len()));
    }
    if meta.source_ffn_bytes < info.ffn_bytes {
        return Err(format!("{} is {}, less than the file's own {} FFN bytes", key("source_ffn_bytes"), meta.source_ffn_bytes, info.ffn_bytes));
    }
    for (k, _) in &g.metadata {
        let Some(rest) = k.strip_prefix(&key("blk.")) else { continue };
        let layer = rest.split_once('.').and_then(|(l, what)| Some((l.parse::<usize>().ok()?, what)));
        match layer {
            Some((l, "kept" | "static")) if (start..end).contains(&l) => {}
            _ => return Err(format!("{k} does not name the kept or static list of a sliced layer ({start}..{end})")),
        }
    }
    for l in 0..n_layer {
        let (source, width) = (meta.source_n_ff[l], info.n_ff[l]);
        if !(start..end).contains(&l) {
            if width != source {
                return Err(format!("layer {l} is not sliced, but its width {width} differs from {}[{l}] = {source}", key("source_n_ff")));
            }
            continue;
        }
        check_layer(g, l, width, source, meta.static_share)?;
    }
    Ok(())
}

/// One sliced layer: the raw lists (so that values beyond u32 are not silently
/// truncated), their lengths, ranges, distinctness, and the static prefix.
fn check_layer(g: &GgufFile, l: usize, width: u64, source: u64, static_share: f64) -> Result<(), String> {
    let name = |what: &str| key(&format!("blk.{l}.{what}"));
    let raw = |what: &str| -> Result<Vec<u64>, String> {
        let k = name(what);
        let v = g.get(&k).ok_or_else(|| format!("{k} is missing (layer {l} is sliced)"))?;
        v.as_array().and_then(|_| v.as_u64_list()).ok_or_else(|| format!("{k} must be an array of non-negative integers"))
    };
    let (kept, stat) = (raw("kept")?, raw("static")?);
    if kept.len() as u64 != width {
        return Err(format!("{} has {} entries, but blk.{l}.ffn_up holds {width} neurons", name("kept"), kept.len()));
    }
    for (what, list) in [("kept", &kept), ("static", &stat)] {
        if let Some(&i) = list.iter().find(|&&i| i >= source) {
            return Err(format!("{} holds neuron {i}, outside the source layer's {source} neurons", name(what)));
        }
        let mut seen = HashSet::with_capacity(list.len());
        if let Some(&i) = list.iter().find(|&&i| !seen.insert(i)) {
            return Err(format!("{} holds neuron {i} twice", name(what)));
        }
    }
    let whole = width == source && kept.iter().enumerate().all(|(p, &i)| p as u64 == i);
    if whole {
        // A whole layer keeps the original order; its static set is any subset.
        return Ok(());
    }
    if stat.len() > kept.len() || kept[..stat.len()] != stat[..] {
        return Err(format!("{} is not the first {} entries of {} (static neurons are stored first)", name("static"), stat.len(), name("kept")));
    }
    // The slicer keeps round(delta x N) static neurons of the N source neurons (at most the kept ones).
    let expected = crate::profile::keep::count(static_share, source as usize).min(kept.len());
    if stat.len() != expected {
        return Err(format!(
            "{} has {} entries, but {} (delta) {static_share} of the {source} neurons {}[{l}] names is {expected}",
            name("static"),
            stat.len(),
            key("static"),
            key("source_n_ff")
        ));
    }
    Ok(())
}
