//! Evaluation: scoring model outputs against task references.
//!
//! Last stage of the data flow: the evaluation harness generates an output for each
//! example of a task's evaluation split ([`crate::tasks::Split::Eval`]) and scores it
//! against [`crate::tasks::Example::references`] with the metric the task's papers
//! report ([`metrics`]), with 95% bootstrap intervals ([`bootstrap`]). [`harness`]
//! runs one [`method`] on one task and writes one [`row`] of a results CSV;
//! [`perplexity`] measures a file's perplexity on a text, with its interval (the
//! pass itself is [`crate::profile::text`]'s, which the fit shares).

pub mod answers;
pub mod bootstrap;
pub mod harness;
pub mod kl;
pub mod method;
pub mod metrics;
pub mod perplexity;
pub mod row;
