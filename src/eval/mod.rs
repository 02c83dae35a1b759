//! Evaluation: scoring model outputs against task references.
//!
//! Last stage of the data flow: the evaluation harness generates an output for each
//! example of a task's evaluation split ([`crate::tasks::Split::Eval`]) and scores it
//! against [`crate::tasks::Example::references`] with the metric the task's papers
//! report ([`metrics`]), with 95% bootstrap intervals ([`bootstrap`]). [`harness`]
//! runs one [`method`] on one task and writes one [`row`] of a results CSV;
//! [`perplexity`] measures a file's perplexity on a text, [`sensitivity`] what
//! slicing each layer alone costs it, and [`moments`], [`chain`] and [`computed`]
//! the activations a refitted slice is fitted to.

pub mod answers;
pub mod bootstrap;
pub mod chain;
pub mod computed;
pub mod harness;
pub mod kl;
pub mod method;
pub mod metrics;
pub mod moments;
pub mod perplexity;
pub mod row;
pub mod sensitivity;
