//! The words of the training DSL that its two halves both read: `dsl-macros` at compile time
//! (parse, validate, expand) and `dsl-runtime` at run time (command line, config files). A rule
//! that lives here is written once, so the compile-time check and the run-time one cannot drift
//! apart (`darling_core`'s idea: plain Rust, no `syn`, no Burn).

#![warn(missing_docs)]

pub mod bounds;
pub mod config;
pub mod device;
pub mod engine;
pub mod keys;
pub mod metrics;
pub mod optimizer;
pub mod search;
mod suggest;
pub mod sweep;
pub mod synonyms;

pub use suggest::{closest, one_edit_from};
