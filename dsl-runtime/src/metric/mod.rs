//! Metrics: Burn's metric types bound to a split, plus the sample-weighted loss.

mod catalog;
mod loss;
mod tracked;

pub use catalog::*;
pub use loss::{SampleLoss, SampleLossInput};
pub use tracked::{RestoreError, SplitMetric, Tracked};
