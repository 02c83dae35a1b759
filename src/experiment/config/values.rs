//! The experiment YAML's value types: shares, sizes with units, layer ranges and
//! grids (one value or a list), each checked while the YAML is read.

use std::ops::Range;

use serde::Deserialize;

/// A share of a layer's N neurons, in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Deserialize)]
#[serde(try_from = "f64")]
pub struct Share(pub f64);

impl TryFrom<f64> for Share {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        if v > 0.0 && v <= 1.0 {
            Ok(Share(v))
        } else {
            Err(format!("a share must be in (0, 1], not {v}"))
        }
    }
}

/// A byte size written with a unit (`192MiB`, `6GiB`, `500MB`) or as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a size such as 192MiB, 6GiB or a number of bytes")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Size, E> {
                crate::memory::parse_mem_size(v).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A layer range `START..END` (sparsified layers).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Layers(pub Range<usize>);

impl TryFrom<String> for Layers {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        crate::select::rewrite::parse_layer_range(&s).map(Layers).map_err(|e| e.to_string())
    }
}

/// One value or a list of values (a grid axis).
#[derive(Debug, Clone)]
pub enum Grid<T> {
    /// A single value.
    One(T),
    /// Every value, one cell each.
    Many(Vec<T>),
}

// By hand rather than `#[serde(untagged)]`, which would replace the element's own
// error ("a share must be in (0, 1]") with "did not match any variant".
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Grid<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::IntoDeserializer;
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = Grid<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Grid<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(Grid::Many(v))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Grid<T>, E> {
                T::deserialize(v.into_deserializer()).map(Grid::One)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Grid<T>, E> {
                T::deserialize(v.into_deserializer()).map(Grid::One)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Grid<T>, E> {
                T::deserialize(v.into_deserializer()).map(Grid::One)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Grid<T>, E> {
                T::deserialize(v.into_deserializer()).map(Grid::One)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<T: Clone> Grid<T> {
    pub(super) fn values(&self) -> Vec<T> {
        match self {
            Grid::One(v) => vec![v.clone()],
            Grid::Many(v) => v.clone(),
        }
    }
}

/// The file a profile slice is cut from: the F16 reference, or one of llama.cpp's
/// quantizations of it (the profile, made on the F16 file, applies to both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum SliceBase {
    /// The F16 reference.
    #[default]
    #[serde(rename = "f16")]
    F16,
    /// Its Q8_0 quantization.
    #[serde(rename = "q8_0")]
    Q8_0,
    /// Its Q4_K_M quantization.
    #[serde(rename = "q4_k_m")]
    Q4KM,
}

impl SliceBase {
    /// The quantization `convert --to` takes, or None for the F16 reference.
    pub fn quant(self) -> Option<&'static str> {
        match self {
            SliceBase::F16 => None,
            SliceBase::Q8_0 => Some("q8_0"),
            SliceBase::Q4KM => Some("q4_k_m"),
        }
    }

    /// How file names and results name it.
    pub fn name(self) -> &'static str {
        self.quant().unwrap_or("F16")
    }
}

/// Which slice coreinfer-loading computes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SliceKind {
    /// A random gamma*N (CoreInfer with loading, profile-free).
    #[default]
    Random,
    /// The profile's slice, the same file selectinfer's cells of the setting use.
    Profile,
}
