//! The traits generated code leans on to check an experiment at compile time.
//!
//! Each carries `#[diagnostic::on_unimplemented]`, so a mistake in `training!` reads as one
//! sentence about the user's token instead of a trait-bound dump. `training!` calls them under the
//! span of the token being checked, and each check also hands back what later code needs
//! (a boxed metric, a shared batcher), so a failed check is reported once, not again downstream.

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};
use burn::train::metric::{Adaptor, ConfusionStatsInput, Metric, Numeric};
use burn::train::{
    ClassificationOutput, ItemLazy, MultiLabelClassificationOutput, RegressionOutput,
    SequenceOutput, TrainOutput,
};

use crate::metric::{SplitMetric, Tracked};

/// A step output a run can train on: it has a loss to back-propagate and can be synced for
/// metrics (`ItemLazy`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a training output",
    label = "the step must return a type with a loss",
    note = "return one of Burn's outputs (`ClassificationOutput`, `RegressionOutput`, `MultiLabelClassificationOutput`, `SequenceOutput`), or implement `dsl_runtime::contract::StepOutput` (and Burn's `ItemLazy`) for your own type"
)]
pub trait StepOutput: ItemLazy + 'static {
    /// The loss the training step differentiates.
    fn loss(&self) -> Tensor<1>;
}

/// `T` itself when it is a [`StepOutput`]. Generated `TrainStep`/`InferenceStep` impls name
/// their output through it, so a wrong output type is reported with [`StepOutput`]'s message
/// instead of Burn's bare `ItemLazy` bound.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a training output",
    label = "the step must return a type with a loss",
    note = "return one of Burn's outputs (`ClassificationOutput`, `RegressionOutput`, `MultiLabelClassificationOutput`, `SequenceOutput`), or implement `dsl_runtime::contract::StepOutput` (and Burn's `ItemLazy`) for your own type"
)]
pub trait Checked {
    /// `Self`.
    type Output: StepOutput;
}

impl<T: StepOutput> Checked for T {
    type Output = T;
}

macro_rules! step_output {
    ($($output:ty),*) => {$(
        impl StepOutput for $output {
            fn loss(&self) -> Tensor<1> {
                self.loss.clone()
            }
        }
    )*};
}

step_output!(
    ClassificationOutput,
    RegressionOutput,
    MultiLabelClassificationOutput,
    SequenceOutput
);

/// A step output that can feed metric `M` (Burn's `Adaptor<M::Input>`).
#[diagnostic::on_unimplemented(
    message = "the step output `{Self}` cannot feed the metric `{M}`",
    label = "`{Self}` gives this metric nothing to read",
    note = "classification metrics (accuracy, top_k, precision, recall, f1, fbeta, auroc, perplexity) need `ClassificationOutput` (or `SequenceOutput` for accuracy, top_k and perplexity); `loss` and `lr` work with every Burn output; for your own output type implement Burn's `Adaptor` for the metric's input"
)]
pub trait Feeds<M>: Sized {
    /// `metric`, boxed for the fit loop's list of this output's metrics.
    fn boxed(metric: Tracked<M>) -> Box<dyn SplitMetric<Self>>;
}

impl<O, M> Feeds<M> for O
where
    M: Metric + Numeric + 'static,
    O: Adaptor<M::Input> + 'static,
{
    fn boxed(metric: Tracked<M>) -> Box<dyn SplitMetric<Self>> {
        Box::new(metric)
    }
}

/// A batcher that turns items `I` into the step's input `B`.
#[diagnostic::on_unimplemented(
    message = "the batcher `{Self}` does not build the step's input `{B}`",
    label = "expected a batcher that builds `{B}`",
    note = "make the batcher produce the type `step` takes as its batch, or change the batch type in `step`"
)]
pub trait BatchesInto<I, B> {
    /// The batcher behind a shared handle, so later code needs no bound of its own on it.
    /// `dataset` only names the item type, so the error can say which items were expected.
    fn shared(self, dataset: &impl Dataset<I>) -> SharedBatcher<I, B>;
}

impl<T, I, B> BatchesInto<I, B> for T
where
    T: Batcher<I, B> + 'static,
{
    fn shared(self, _dataset: &impl Dataset<I>) -> SharedBatcher<I, B> {
        SharedBatcher(Arc::new(self))
    }
}

/// A batcher known to build `B` from `I`: what [`BatchesInto::shared`] hands to the fit loop.
pub struct SharedBatcher<I, B>(Arc<dyn Batcher<I, B>>);

impl<I, B> Clone for SharedBatcher<I, B> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<I, B> Batcher<I, B> for SharedBatcher<I, B> {
    fn batch(&self, items: Vec<I>, device: &Device) -> B {
        self.0.batch(items, device)
    }
}

/// Burn's training output for a step result: back-propagates its loss through `model`. Its
/// `StepOutput` bound is what rejects a step that returns no training output.
pub fn train_output<M: Module, O: StepOutput>(model: &M, output: O) -> TrainOutput<O> {
    let grads = output.loss().backward();
    TrainOutput::new(model, grads, output)
}

/// Burn's confusion-statistics input for logits and class indices, as Burn builds it for
/// `ClassificationOutput` (one-hot targets), for `#[derive(StepOutput)]` outputs.
pub fn confusion_input(logits: Tensor<2>, targets: Tensor<1, Int>) -> ConfusionStatsInput {
    let [_, classes] = logits.dims();
    ConfusionStatsInput::new(logits, targets.one_hot(classes).bool())
}
