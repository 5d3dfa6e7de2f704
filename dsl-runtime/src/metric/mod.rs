//! Metrics: Burn's metric types bound to a split, the sample-weighted loss, and metrics
//! written as functions of the step output.

mod catalog;
mod function;
mod loss;
mod on_step;
pub(crate) mod reads;
mod tracked;

pub use catalog::*;
pub(crate) use function::Keyed;
pub use function::{BatchValue, Epoch, EpochMetric, Mean};
pub use loss::{SampleLoss, SampleLossInput};
pub use on_step::OnStep;
pub use tracked::{RestoreError, SplitMetric, Tracked};
