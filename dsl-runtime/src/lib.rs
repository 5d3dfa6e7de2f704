//! Runtime of the declarative training DSL for Burn.
//!
//! [`Fit`] is a single-device training loop that performs, per batch, exactly the calls of a
//! hand-written Burn loop (and of Burn's `SupervisedTraining`): its per-step losses are
//! bit-identical to both. Around that loop it adds what Burn's Learner lacks or does
//! differently: batches prefetched by worker threads in a fixed order, shuffling that is a pure
//! function of `(seed, epoch)`, a sample-weighted epoch loss, one console line per epoch with
//! every metric, a summary table, and a run directory with `config.json` and `metrics.csv`.
//! Nothing global is installed: no panic hook, no logger.
#![warn(missing_docs)]

pub mod contract;
pub mod data;
pub mod fit;
pub mod history;
pub mod metric;
pub mod output;
pub mod spec;

pub use dsl_macros::training;
pub use fit::{Data, Fit, FitError, FitOptions, FitReport};
pub use history::{History, Series, Split};

/// What an experiment file needs in scope.
pub mod prelude {
    pub use crate::fit::{Data, Fit, FitError, FitOptions, FitReport};
    pub use crate::history::{History, Split};
    pub use crate::metric;
    pub use crate::training;
}

/// What `training!` expansions name; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::contract::{BatchesInto, Checked, Feeds, train_output};
    pub use crate::fit::{Data, Fit, FitError, FitOptions, FitReport};
    pub use crate::history::Split;
    pub use crate::metric;
    pub use crate::spec::{EarlyStopping, GradClip, OptimizerSpec, Schedule, optimizer_steps};
    pub use burn;
    pub use serde;
    pub use serde_json;
}
