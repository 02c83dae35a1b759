//! Small helpers more than one stage uses, so that none of them reaches into
//! another stage for them: hashing ([`hash`]), the seeded generator ([`rng`]),
//! float tensor encoding ([`floats`]), [`argmax`] and [`Decided`] (a setting with
//! the reason it has its value). Progress bars are output: [`crate::output::progress`].

pub mod floats;
pub mod linalg;
pub mod hash;
pub mod rng;

/// A setting and why it has its value: asked for on the command line, or a
/// default with the reason it applied (printed as `VALUE (default: WHY)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Decided<T> {
    /// The value.
    pub value: T,
    /// Whether the value is a default (not asked for).
    pub default: bool,
    /// Why the value applies.
    pub why: String,
}

impl<T> Decided<T> {
    /// A value given on the command line by `option`.
    pub fn asked(value: T, option: &str) -> Decided<T> {
        Decided { value, default: false, why: format!("asked for with {option}") }
    }

    /// A default, for the reason `why`.
    pub fn by_default(value: T, why: impl Into<String>) -> Decided<T> {
        Decided { value, default: true, why: why.into() }
    }

    /// `(default: WHY)` or `(asked for with OPTION)`.
    pub fn reason(&self) -> String {
        if self.default {
            format!("(default: {})", self.why)
        } else {
            format!("({})", self.why)
        }
    }
}

/// Index of the largest value (the first one on ties).
pub fn argmax(v: &[f32]) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}
