//! The traits generated code leans on to check an experiment at compile time.
//!
//! Each check is written so that rustc's error names only the user's types and Burn's traits:
//! [`StepOutput`] is implemented type by type (no blanket impl, whose failure would add "required
//! for .. to implement" notes), and generated code names a step output as
//! `<Output as StepOutput>::Checked`, a type that does not exist for a wrong output. rustc then
//! reports that one error and drops every later check that depends on the output (one per
//! metric, the step impls), so one mistake is one error. Datasets and batchers are checked by
//! the unsizing casts in [`Sources`], which rustc explains with the item and batch types the
//! user's own impls name.

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::tensor::{Device, FloatDType, Int, Tensor, TensorReadError};
use burn::train::metric::{Adaptor, ConfusionStatsInput, Metric, Numeric};
use burn::train::{
    ClassificationOutput, ItemLazy, MultiLabelClassificationOutput, RegressionOutput,
    SequenceOutput, TrainOutput,
};

use crate::data::Data;
use crate::metric::{BatchValue, Epoch, EpochMetric, Keyed, Mean, SplitMetric, Tracked};
mod predictions;

pub use predictions::PredictionRows;
use predictions::PredictionTable;

/// A step output a run can train on: it has a loss to back-propagate and can be synced for
/// metrics (`ItemLazy`). `#[derive(StepOutput)]` implements it; by hand, set `Checked = Self`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a training output",
    label = "the step must return a type with a loss",
    note = "return one of Burn's outputs (`ClassificationOutput`, `RegressionOutput`, `MultiLabelClassificationOutput`, `SequenceOutput`), or a struct with `#[derive(StepOutput)]` and a `#[loss]` field"
)]
pub trait StepOutput: ItemLazy + 'static {
    /// `Self`. Generated code names the output through it: for a type that is not a step
    /// output the projection fails once, and rustc drops the checks that depend on it.
    type Checked: StepOutput;

    /// The loss the training step differentiates.
    fn loss(&self) -> Tensor<1>;

    /// One CSV row per sample for `--predict`; `None` (the default) for an output without a
    /// table form.
    fn predictions(&self) -> Result<Option<PredictionRows>, TensorReadError> {
        Ok(None)
    }
}

macro_rules! step_output {
    ($($output:ty),*) => {$(
        // Not listed as an alternative in a wrong output's error: the note names these types
        // already, and the listing would point into this file.
        #[diagnostic::do_not_recommend]
        impl StepOutput for $output {
            type Checked = Self;

            fn loss(&self) -> Tensor<1> {
                self.loss.clone()
            }

            fn predictions(&self) -> Result<Option<PredictionRows>, TensorReadError> {
                PredictionTable::table(self)
            }
        }
    )*};
}

step_output!(
    ClassificationOutput,
    RegressionOutput,
    MultiLabelClassificationOutput
);

// No table form: a sequence's tokens have no one-row-per-sample CSV.
#[diagnostic::do_not_recommend]
impl StepOutput for SequenceOutput {
    type Checked = Self;

    fn loss(&self) -> Tensor<1> {
        self.loss.clone()
    }
}

/// A step output that catalogue metric `M` can measure: one that implements Burn's
/// `Adaptor<M::Input>`. Users never implement it; it is public because a metric the output
/// cannot feed is reported as this trait unmet, and rustc's `help` line names it. `I` is only there so the error can name the `Adaptor` to implement.
#[diagnostic::on_unimplemented(
    message = "the step output `{Self}` cannot feed the metric `{M}`",
    label = "`{Self}` gives this metric nothing to read",
    note = "classification metrics (accuracy, top_k, precision, recall, f1, fbeta, auroc, auc_pr, perplexity) need `ClassificationOutput`; `SequenceOutput` feeds accuracy, top_k, perplexity, cer and wer; `MultiLabelClassificationOutput` feeds hamming and auc_pr; `loss`, `lr` and `iteration_speed` work with every Burn output; for your own output type implement Burn's `Adaptor<{I}>` for `{Self}`"
)]
pub trait Measurable<M: Metric, I = <M as Metric>::Input>: Sized {
    /// `metric`, boxed for the fit loop's list of this output's metrics.
    fn boxed(metric: Tracked<M>) -> Box<dyn SplitMetric<Self>>;

    /// Checked at a step's body, in place of `M`'s registration, when the step declares a
    /// Burn output that cannot feed `M` (the catalogue knows): the body's own value must feed
    /// it. A body returning the declared type is reported here, at the metric, as always; one
    /// returning another type (the declared type written by mistake) is rustc's mismatch at
    /// the body alone, not one more error at every metric. A method, not a bounded function,
    /// so the error names no bound of ours.
    fn feeds(&self) {}
}

// Not recommended in errors: the failing `Adaptor` bound is what the note names instead.
#[diagnostic::do_not_recommend]
impl<O, M> Measurable<M> for O
where
    M: Metric + Numeric + 'static,
    O: Adaptor<M::Input> + 'static,
{
    fn boxed(metric: Tracked<M>) -> Box<dyn SplitMetric<Self>> {
        Box::new(metric)
    }
}

/// The registration of a metric [`Measurable::feeds`] checks instead: such a build fails at
/// the step's body or at that check (Burn's outputs are closed to new `Adaptor` impls by the
/// orphan rule), so this is never run; `the_catalogue_says_what_each_burn_output_feeds` keeps
/// the catalogue true.
pub fn never_fed<O>() -> Box<dyn SplitMetric<O>> {
    unreachable!("a metric the step's declared output cannot feed was registered")
}

/// A step output that the user's own metric `M` can measure: `M` is a
/// numeric Burn metric and the output adapts to its input, or a `Mean`/`Epoch` metric of this
/// output. One trait for all, so that one mistake is one error; public for the same reason as
/// [`Measurable`].
#[diagnostic::on_unimplemented(
    message = "the step output `{Self}` cannot feed the metric `{M}`",
    label = "this metric does not read `{Self}`",
    note = "a metric of your own is `metric::Mean::higher_is_better(f)` (or `lower_is_better`) with `f` taking `&{Self}` and returning the batch's value and sample count, `metric::Epoch::higher_is_better(state)` with `state` implementing `metric::EpochMetric<{Self}>`, or a Burn `Metric` + `Numeric` whose `Input` `{Self}` adapts to (`Adaptor`); see `examples/custom_metric`"
)]
pub trait MeasurableBy<M>: Sized {
    /// `metric`, boxed for the fit loop's list of this output's metrics.
    fn boxed(metric: Tracked<M>) -> Box<dyn SplitMetric<Self>>;
}

// Not recommended in errors: the note says what to implement.
#[diagnostic::do_not_recommend]
impl<O, M> MeasurableBy<M> for O
where
    M: Metric + Numeric + 'static,
    O: Adaptor<M::Input> + 'static,
{
    fn boxed(metric: Tracked<M>) -> Box<dyn SplitMetric<Self>> {
        Box::new(metric)
    }
}

// A metric from a function of the step output: its function takes `&O`.
#[diagnostic::do_not_recommend]
impl<O, F, R> MeasurableBy<Mean<F>> for O
where
    F: Fn(&O) -> R + Send + 'static,
    R: BatchValue,
    O: 'static,
{
    fn boxed(metric: Tracked<Mean<F>>) -> Box<dyn SplitMetric<Self>> {
        Keyed::boxed(metric)
    }
}

// A metric of accumulated state: its `EpochMetric` impl is for this output.
#[diagnostic::do_not_recommend]
impl<O, M> MeasurableBy<Epoch<M>> for O
where
    M: EpochMetric<O>,
    O: 'static,
{
    fn boxed(metric: Tracked<Epoch<M>>) -> Box<dyn SplitMetric<Self>> {
        Keyed::boxed(metric)
    }
}

/// A dataset that yields items `I`: any Burn `Dataset<I>`. Named in
/// `training!`'s check that the datasets yield the items the batcher takes, so the error says
/// so in those words; public because rustc's `help` line names it.
#[diagnostic::on_unimplemented(
    message = "this dataset does not yield the `{I}` items the batcher takes",
    label = "the batcher takes `{I}`",
    note = "give the loader datasets of the batcher's items, or a batcher of this dataset's items (`impl Batcher<Item, Batch>`)"
)]
pub trait Yields<I> {
    /// The dataset behind a shared handle. `batcher` only fixes `I` before the dataset's own
    /// item type is looked at, so a mismatch is reported here and not at the batcher.
    fn shared<B>(batcher: &Arc<dyn Batcher<I, B>>, dataset: Self) -> Arc<dyn Dataset<I>>;
}

// Not recommended in errors: the note says what to change, and the listing would point into
// Burn's sources.
#[diagnostic::do_not_recommend]
impl<D: Dataset<I> + 'static, I> Yields<I> for D {
    fn shared<B>(_batcher: &Arc<dyn Batcher<I, B>>, dataset: Self) -> Arc<dyn Dataset<I>> {
        Arc::new(dataset)
    }
}

/// The two datasets and the batcher of an experiment, each behind the `dyn` Burn trait it must
/// implement. `training!` builds this literal with the batcher first, each at the user's
/// expression: a batcher that does not build the step's batch fails its cast to the `dyn`
/// trait there, naming the batch it does build; the batcher's item type is then known, and a
/// dataset of other items fails [`Yields`] at the dataset.
pub struct Sources<I, B> {
    /// Turns items into the step's batch.
    pub batcher: Arc<dyn Batcher<I, B>>,
    /// The training split.
    pub train: Arc<dyn Dataset<I>>,
    /// The validation split.
    pub valid: Arc<dyn Dataset<I>>,
}

impl<I, B> Sources<I, B> {
    /// What the fit loop takes.
    pub fn into_data(self) -> Data<I, SharedBatcher<I, B>> {
        Data::from_shared(self.train, self.valid, SharedBatcher(self.batcher))
    }

    /// The batcher alone, for `evaluate` on another dataset.
    pub fn batcher(&self) -> SharedBatcher<I, B> {
        SharedBatcher(self.batcher.clone())
    }
}

/// A batcher behind a shared handle, so the fit loop and Burn's engine need no bound of their own
/// on the user's batcher type.
#[doc(hidden)]
pub struct SharedBatcher<I, B>(Arc<dyn Batcher<I, B>>);

impl<I, B> SharedBatcher<I, B> {
    /// Shares `batcher`.
    pub fn new(batcher: impl Batcher<I, B> + 'static) -> Self {
        Self(Arc::new(batcher))
    }
}

impl<I, B> Clone for SharedBatcher<I, B> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

// Not listed among the batchers a wrong one could have been: the user never names it.
#[diagnostic::do_not_recommend]
impl<I, B> Batcher<I, B> for SharedBatcher<I, B> {
    fn batch(&self, items: Vec<I>, device: &Device) -> B {
        self.0.batch(items, device)
    }
}

/// `config` for the user's expressions in `training!`, as a `'static` reference: the closures
/// among them are kept by Burn's loaders and by the metric list, which need `'static` values,
/// so `augment: |item, rng| .. config.flip ..` would otherwise need a `move` and a copy. One
/// small copy per training or loading call is leaked for it (a config is a few hundred bytes).
pub fn for_expressions<C: Clone + 'static>(config: &C) -> &'static C {
    Box::leak(Box::new(config.clone()))
}

/// Burn's training output for a step result: back-propagates its loss through `model`. In an
/// f16 run the loss is multiplied by the run's loss scale first (`fit::precision`); the loss
/// the output keeps for the metrics is the unscaled one.
pub fn train_output<M: Module, O: StepOutput>(model: &M, output: O) -> TrainOutput<O> {
    let grads = crate::model::precision::backward(output.loss());
    TrainOutput::new(model, grads, output)
}

/// A batch whose float tensors can be cast to a run's 16-bit precision (`precision: bf16`):
/// `#[derive(Batch)]` implements it; for a batch of your own, cast each float tensor with
/// `Tensor::cast(dtype)` and leave integer and boolean tensors as they are.
#[diagnostic::on_unimplemented(
    message = "the batch `{Self}` cannot be cast to a 16-bit precision",
    label = "`precision` casts the batch's float tensors",
    note = "build the batch with `#[derive(Batch)]`, or implement `burn_experiment::CastFloats` for it: `fn cast_floats(self, dtype: FloatDType) -> Self` casting each float tensor with `.cast(dtype)`"
)]
pub trait CastFloats {
    /// The batch with every float tensor cast to `dtype`.
    fn cast_floats(self, dtype: FloatDType) -> Self;
}

/// Burn's outputs, cast for the metrics of a 16-bit run (`Fit::output_casts`): the loss and
/// the logits; class indices stay integers.
macro_rules! cast_outputs {
    ($($output:ty { $($float:ident),* }),*) => {$(
        #[diagnostic::do_not_recommend]
        impl CastFloats for $output {
            // `..self` covers the integer fields; a regression output has none.
            #[allow(clippy::needless_update)]
            fn cast_floats(self, dtype: FloatDType) -> Self {
                Self {
                    $($float: self.$float.cast(dtype),)*
                    ..self
                }
            }
        }
    )*};
}

cast_outputs!(
    ClassificationOutput { loss, output },
    RegressionOutput {
        loss,
        output,
        targets
    },
    MultiLabelClassificationOutput { loss, output },
    SequenceOutput { loss, logits }
);

/// Chooses, in generated code, the batch's [`CastFloats`] where it has one (`Some`), without
/// requiring it of experiments that never train in a 16-bit precision: `(&CastProbe::<B>::new()).casts()`.
pub struct CastProbe<B>(std::marker::PhantomData<B>);

impl<B> CastProbe<B> {
    /// The probe of the batch type `B`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

/// [`CastProbe`] for a batch with [`CastFloats`].
pub trait Casts<B> {
    /// The batch's cast, where it has one.
    fn casts(&self) -> Option<crate::model::precision::CastFn<B>>;
}

impl<B: CastFloats> Casts<B> for CastProbe<B> {
    fn casts(&self) -> Option<crate::model::precision::CastFn<B>> {
        Some(B::cast_floats)
    }
}

/// [`CastProbe`] for any other batch: a run asked for 16 bits then says what is missing.
pub trait NoCasts<B> {
    /// No cast: the batch type has no [`CastFloats`].
    fn casts(&self) -> Option<crate::model::precision::CastFn<B>> {
        None
    }
}

impl<B> NoCasts<B> for &CastProbe<B> {}

/// Burn's confusion-statistics input for logits and class indices, as Burn builds it for
/// `ClassificationOutput` (one-hot targets), for `#[derive(StepOutput)]` outputs.
pub fn confusion_input(logits: Tensor<2>, targets: Tensor<1, Int>) -> ConfusionStatsInput {
    let [_, classes] = logits.dims();
    ConfusionStatsInput::new(logits, targets.one_hot(classes).bool())
}

#[cfg(test)]
mod tests {
    /// The note of a metric the output cannot feed is an attribute's literal: it must say what
    /// the catalogue (`burn_experiment_vocabulary::metrics`) says about which output feeds which metric.
    #[test]
    fn the_note_of_a_metric_the_output_cannot_feed_follows_the_catalogue() {
        let source = include_str!("mod.rs");
        let note = source
            .lines()
            .find(|l| {
                l.trim_start()
                    .starts_with("note = \"classification metrics")
            })
            .expect("the note of `Measurable`");
        let group = |start: &str, end: &str| -> Vec<String> {
            let from = note
                .find(start)
                .unwrap_or_else(|| panic!("`{start}` in {note}"))
                + start.len();
            let to = from + note[from..].find(end).unwrap();
            note[from..to]
                .split([',', ' '])
                .filter(|w| !w.is_empty() && *w != "and")
                .map(|w| w.trim_matches('`').to_owned())
                .collect()
        };
        let groups = [
            (
                "ClassificationOutput",
                group("classification metrics (", ")"),
            ),
            ("SequenceOutput", group("`SequenceOutput` feeds ", ";")),
            (
                "MultiLabelClassificationOutput",
                group("`MultiLabelClassificationOutput` feeds ", ";"),
            ),
            (
                "every output",
                group("; `loss`", " work with")
                    .into_iter()
                    .chain(["loss".to_owned()])
                    .collect(),
            ),
        ];
        for metric in burn_experiment_vocabulary::metrics::METRICS {
            for (output, named) in &groups {
                let feeds = metric.outputs.split(", ").any(|o| o == *output);
                assert_eq!(
                    feeds,
                    named.iter().any(|n| n == metric.name),
                    "`{}` and {output}: the catalogue says {feeds}",
                    metric.name
                );
            }
        }
    }
}
