//! The traits generated code leans on to check an experiment at compile time.
//!
//! Each carries `#[diagnostic::on_unimplemented]`, so a mistake in `training!` reads as one
//! sentence about the user's token instead of a trait-bound dump. `training!` calls the `check_*`
//! functions under the span of the token being checked.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::tensor::Tensor;
use burn::train::metric::{Adaptor, Metric};
use burn::train::{
    ClassificationOutput, ItemLazy, MultiLabelClassificationOutput, RegressionOutput,
    SequenceOutput, TrainOutput,
};

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
pub trait Feeds<M> {}

impl<O, M> Feeds<M> for O
where
    M: Metric,
    O: Adaptor<M::Input>,
{
}

/// A batcher that turns items `I` into the step's input `B`.
#[diagnostic::on_unimplemented(
    message = "the batcher `{Self}` does not build the step's input `{B}` from items `{I}`",
    label = "expected a `Batcher<{I}, {B}>`",
    note = "make the batcher produce the type `step` takes as its batch, or change the batch type in `step`"
)]
pub trait BatchesInto<I, B> {}

impl<T, I, B> BatchesInto<I, B> for T where T: Batcher<I, B> {}

/// Compile-time check: `O` is a training output.
pub fn check_step_output<O: StepOutput>() {}

/// Compile-time check: `O` can feed metric `M`.
pub fn check_feeds<O: Feeds<M>, M>() {}

/// Compile-time check: `batcher` builds `B` from the items of `dataset`.
pub fn check_batcher<I, B, T: BatchesInto<I, B>>(_dataset: &impl Dataset<I>, _batcher: &T) {}

/// Burn's training output for a step result: back-propagates its loss through `model`.
pub fn train_output<M: Module, O: StepOutput>(model: &M, output: O) -> TrainOutput<O> {
    let grads = output.loss().backward();
    TrainOutput::new(model, grads, output)
}
