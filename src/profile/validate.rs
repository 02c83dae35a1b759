//! Checks profile files against their own model fingerprint.
//!
//! Every ranking and raw file is checked when read ([`super::ranking::read_ranking`],
//! [`super::ranking::read_raw_dir`]): the fingerprint has one FFN width per layer,
//! a ranking has one layer per layer, each a permutation of `0..n_ff` with one
//! finite score per neuron, and a raw file has one finite, non-negative sum per
//! neuron in both halves. Together with the fingerprint check against the model
//! in use ([`super::ranking::check_model`], which also compares shapes), the slicer
//! can index a ranking by any neuron of the model without a bounds failure, and
//! never stores a neuron twice.

use std::path::Path;

use super::ranking::{ModelFingerprint, ProfileError, Ranking, RawProfile, RANKING_FORMAT, RAW_FORMAT};

fn format_err(path: &Path, expected: &'static str, what: String) -> ProfileError {
    ProfileError::Format { path: path.to_path_buf(), expected, what }
}

fn check_fingerprint(m: &ModelFingerprint) -> Result<(), String> {
    if m.n_layer == 0 || m.n_ff.len() != m.n_layer {
        return Err(format!("model.n_ff has {} entries for model.n_layer {}", m.n_ff.len(), m.n_layer));
    }
    if let Some(l) = m.n_ff.iter().position(|&n| n == 0 || n > u32::MAX as u64) {
        return Err(format!("model.n_ff[{l}] is {}", m.n_ff[l]));
    }
    Ok(())
}

/// A ranking file's layers against its fingerprint.
pub fn check_ranking(path: &Path, r: &Ranking) -> Result<(), ProfileError> {
    let err = |what: String| format_err(path, RANKING_FORMAT, what);
    check_fingerprint(&r.model).map_err(err)?;
    if r.layers.len() != r.model.n_layer {
        return Err(err(format!("{} layers ranked, but the model has {}", r.layers.len(), r.model.n_layer)));
    }
    for (l, (layer, &n)) in r.layers.iter().zip(&r.model.n_ff).enumerate() {
        if layer.order.len() as u64 != n {
            return Err(err(format!("layer {l} ranks {} neurons, but the layer has {n}", layer.order.len())));
        }
        if layer.scores.len() != layer.order.len() {
            return Err(err(format!("layer {l} has {} scores for {} neurons", layer.scores.len(), layer.order.len())));
        }
        let mut seen = vec![false; n as usize];
        for &i in &layer.order {
            match seen.get_mut(i as usize) {
                None => return Err(err(format!("layer {l} ranks neuron {i}, outside 0..{n}"))),
                Some(true) => return Err(err(format!("layer {l} ranks neuron {i} twice"))),
                Some(s) => *s = true,
            }
        }
        if let Some(s) = layer.scores.iter().find(|s| !s.is_finite()) {
            return Err(err(format!("layer {l} has score {s}")));
        }
    }
    Ok(())
}

/// A raw statistics file's sums against its fingerprint.
pub fn check_raw(path: &Path, r: &RawProfile) -> Result<(), ProfileError> {
    let err = |what: String| format_err(path, RAW_FORMAT, what);
    check_fingerprint(&r.model).map_err(err)?;
    for (h, half) in r.halves.iter().enumerate() {
        if half.sums.len() != r.model.n_layer {
            return Err(err(format!("halves[{h}] has sums of {} layers, but the model has {}", half.sums.len(), r.model.n_layer)));
        }
        for (l, (sums, &n)) in half.sums.iter().zip(&r.model.n_ff).enumerate() {
            if sums.len() as u64 != n {
                return Err(err(format!("halves[{h}] layer {l} has {} sums, but the layer has {n} neurons", sums.len())));
            }
            if let Some(s) = sums.iter().find(|s| !(s.is_finite() && **s >= 0.0)) {
                return Err(err(format!("halves[{h}] layer {l} has sum {s} (sums of |activation| are finite and >= 0)")));
            }
        }
        // The optional statistics of the selection variants: the same shape, finite
        // (squares and norms also >= 0).
        for (name, stat, nonneg) in [("signed", &half.signed, false), ("squares", &half.squares, true)] {
            if let Some(v) = stat {
                check_per_neuron(v, r, nonneg).map_err(|w| err(format!("halves[{h}] {name}: {w}")))?;
            }
        }
    }
    if let Some(v) = &r.down_norms {
        check_per_neuron(v, r, true).map_err(|w| err(format!("down_norms: {w}")))?;
    }
    Ok(())
}

/// One finite value per neuron of every layer (and >= 0 when `nonneg`).
fn check_per_neuron(v: &[Vec<f64>], r: &RawProfile, nonneg: bool) -> Result<(), String> {
    if v.len() != r.model.n_layer {
        return Err(format!("{} layers, but the model has {}", v.len(), r.model.n_layer));
    }
    for (l, (xs, &n)) in v.iter().zip(&r.model.n_ff).enumerate() {
        if xs.len() as u64 != n {
            return Err(format!("layer {l} has {} values, but the layer has {n} neurons", xs.len()));
        }
        if let Some(x) = xs.iter().find(|x| !x.is_finite() || (nonneg && **x < 0.0)) {
            return Err(format!("layer {l} has value {x}"));
        }
    }
    Ok(())
}

/// Whether two fingerprints describe the same shape (architecture, layers, widths).
pub fn same_shape(a: &ModelFingerprint, b: &ModelFingerprint) -> bool {
    a.architecture == b.architecture && a.n_layer == b.n_layer && a.n_ff == b.n_ff
}
