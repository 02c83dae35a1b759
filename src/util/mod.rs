//! Small helpers more than one stage uses, so that none of them reaches into
//! another stage for them: hashing ([`hash`]), the seeded generator ([`rng`]),
//! float tensor encoding ([`floats`]) and [`argmax`]. Progress bars are output:
//! [`crate::output::progress`].

pub mod floats;
pub mod linalg;
pub mod hash;
pub mod rng;

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
