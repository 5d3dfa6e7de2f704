//! The tables the macro reads, from `dsl-vocabulary` (which the runtime reads too): the metric
//! catalogue and splits, and the config struct's own fields. Parse, validate and expand all read
//! them (serde's `symbol.rs` idea), so adding a metric is one row.

pub use burn_experiment_vocabulary::config::CONFIG_KEYS;
pub use burn_experiment_vocabulary::metrics::*;
