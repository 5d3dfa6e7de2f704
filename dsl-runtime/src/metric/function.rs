//! Metrics written as functions of the step output, for the metrics Burn does not have: a
//! per-batch value averaged over the epoch ([`Mean`]), or a value computed once per epoch from
//! state the batches accumulate ([`Epoch`] over an [`EpochMetric`]). A Burn `Metric` needs a
//! `Metric`, a `Numeric` and an `Adaptor` impl (~90 lines); these take one function or one
//! small trait impl, and `training!` checks them against the step output like Burn's metrics.
//!
//! What the fit loop reads, and when: after every batch of the metric's split, the batch's
//! output goes to the function (`Mean`) or to [`EpochMetric::update`] (`Epoch`); at the end of
//! the split's epoch the epoch value is read once ([`Mean`]: the sample-weighted mean of the
//! batch values, Burn's `NumericMetricState`; `Epoch`: [`EpochMetric::value`]) and is what
//! `metrics.csv`, the console, `best(..)`, early stopping and sweeps see. The state then starts
//! over for the next epoch. The direction (`higher_is_better` / `lower_is_better`) is what
//! `best(..)` and `patience(..)` compare by.

use burn::tensor::{Tensor, TensorReadError};
use burn::train::metric::MetricMetadata;
use burn::train::metric::state::NumericMetricState;

use super::tracked::{SplitMetric, Tracked};

/// A batch's value and its weight (the number of samples it stands for), as a [`Mean`]
/// function returns it: `(f64, usize)`, `Result<(f64, usize), TensorReadError>` (a function
/// that reads a tensor with `?`), or `(Tensor<1>, usize)` for a one-element tensor the runtime
/// reads.
pub trait BatchValue {
    /// The value as a number, with its weight.
    fn read(self) -> Result<(f64, usize), TensorReadError>;
}

impl BatchValue for (f64, usize) {
    fn read(self) -> Result<(f64, usize), TensorReadError> {
        Ok(self)
    }
}

impl BatchValue for Result<(f64, usize), TensorReadError> {
    fn read(self) -> Result<(f64, usize), TensorReadError> {
        self
    }
}

impl BatchValue for (Tensor<1>, usize) {
    fn read(self) -> Result<(f64, usize), TensorReadError> {
        super::reads::count();
        Ok((self.0.try_into_scalar::<f64>()?, self.1))
    }
}

/// A per-batch value averaged over the epoch, each batch weighted by the sample count its
/// function returns: e.g. the mean probability of the right class,
/// `valid.metric(confidence = Mean::higher_is_better(confidence))` with
/// `fn confidence(output: &ClassificationOutput) -> (Tensor<1>, usize)`.
pub struct Mean<F> {
    batch: F,
    higher_is_better: bool,
    state: NumericMetricState,
}

impl<F> Mean<F> {
    /// A mean where a larger value is better (accuracy-like).
    pub fn higher_is_better(batch: F) -> Self {
        Self::new(batch, true)
    }

    /// A mean where a smaller value is better (error-like).
    pub fn lower_is_better(batch: F) -> Self {
        Self::new(batch, false)
    }

    fn new(batch: F, higher_is_better: bool) -> Self {
        Self {
            batch,
            higher_is_better,
            state: NumericMetricState::default(),
        }
    }
}

/// A metric computed once per epoch from what every batch adds to it: e.g. macro-averaged
/// recall from a confusion matrix. The value given to [`Epoch`] is the empty state each epoch
/// starts from (it is cloned, so `update` and `value` never reset anything themselves).
pub trait EpochMetric<O>: Clone + Send + 'static {
    /// Adds one batch's output of the split.
    fn update(&mut self, output: &O) -> Result<(), TensorReadError>;
    /// The epoch's value, from every batch of the epoch.
    fn value(&self) -> f64;
}

/// An [`EpochMetric`] with its direction:
/// `valid.metric(recall = Epoch::higher_is_better(MacroRecall::new(3)))`.
pub struct Epoch<M> {
    empty: M,
    /// The epoch's state, a clone of `empty` from the epoch's first batch on (`None`: no
    /// batch yet). Cloned there, not here, so that a state without `Clone` is one error, at
    /// the user's `impl EpochMetric` (its supertrait), not a second at
    /// `Epoch::higher_is_better(..)`.
    state: Option<M>,
    higher_is_better: bool,
}

impl<M> Epoch<M> {
    /// An epoch metric where a larger value is better.
    pub fn higher_is_better(empty: M) -> Self {
        Self::new(empty, true)
    }

    /// An epoch metric where a smaller value is better.
    pub fn lower_is_better(empty: M) -> Self {
        Self::new(empty, false)
    }

    fn new(empty: M, higher_is_better: bool) -> Self {
        Self {
            state: None,
            empty,
            higher_is_better,
        }
    }
}

/// A function metric under the key `training!` gives it (the name in `split.metric(name = ..)`).
pub(crate) struct Keyed<M> {
    key: String,
    metric: M,
}

impl<M> Keyed<M> {
    /// `tracked`, its key and metric, as a split metric of outputs `O`.
    pub(crate) fn boxed<O>(tracked: Tracked<M>) -> Box<dyn SplitMetric<O>>
    where
        M: FunctionMetric<O> + 'static,
    {
        let (key, metric) = tracked.into_parts();
        Box::new(Self { key, metric })
    }
}

/// What the two forms do per batch and per epoch; [`Keyed`] turns either into a split metric.
pub(crate) trait FunctionMetric<O>: Send {
    fn higher_is_better(&self) -> bool;
    /// Feeds a batch; returns its own value where the form has one.
    fn update(&mut self, output: &O) -> Result<Option<f64>, TensorReadError>;
    /// The epoch's value from its batches (none: NaN), then the state of a new epoch.
    fn finish(&mut self) -> f64;
}

impl<O, F, R> FunctionMetric<O> for Mean<F>
where
    F: Fn(&O) -> R + Send,
    R: BatchValue,
{
    fn higher_is_better(&self) -> bool {
        self.higher_is_better
    }

    fn update(&mut self, output: &O) -> Result<Option<f64>, TensorReadError> {
        let (value, weight) = (self.batch)(output).read()?;
        self.state.update(value, weight);
        Ok(Some(value))
    }

    fn finish(&mut self) -> f64 {
        // Burn's state divides the weighted sum by the samples: NaN for an epoch without any.
        let value = self.state.final_value().current();
        self.state.reset();
        value
    }
}

impl<O, M: EpochMetric<O>> FunctionMetric<O> for Epoch<M> {
    fn higher_is_better(&self) -> bool {
        self.higher_is_better
    }

    fn update(&mut self, output: &O) -> Result<Option<f64>, TensorReadError> {
        let empty = &self.empty;
        self.state
            .get_or_insert_with(|| empty.clone())
            .update(output)?;
        Ok(None)
    }

    fn finish(&mut self) -> f64 {
        self.state.take().map_or(f64::NAN, |state| state.value())
    }
}

impl<O, M: FunctionMetric<O>> SplitMetric<O> for Keyed<M> {
    fn key(&self) -> &str {
        &self.key
    }

    fn higher_is_better(&self) -> bool {
        self.metric.higher_is_better()
    }

    fn update(
        &mut self,
        item: &O,
        _metadata: &MetricMetadata,
    ) -> Result<Option<f64>, TensorReadError> {
        self.metric.update(item)
    }

    fn finish_epoch(&mut self) -> Result<f64, TensorReadError> {
        Ok(self.metric.finish())
    }
}

#[cfg(test)]
mod tests {
    use burn::data::dataloader::Progress;
    use burn::tensor::{Device, Int, Tensor, TensorData};
    use burn::train::ClassificationOutput;
    use burn::train::metric::MetricMetadata;

    use super::*;
    use crate::metric::{Tracked, recall};

    fn metadata() -> MetricMetadata {
        MetricMetadata {
            progress: Progress {
                items_processed: 0,
                items_total: 0,
                unit: None,
            },
            iteration: None,
            lr: None,
        }
    }

    fn output(device: &Device, logits: &[[f32; 3]], targets: &[i64]) -> ClassificationOutput {
        let rows = logits.len();
        ClassificationOutput {
            loss: Tensor::from_floats([0.0], device),
            output: Tensor::from_data(TensorData::new(logits.concat(), [rows, 3]), device),
            targets: Tensor::<1, Int>::from_data(TensorData::new(targets.to_vec(), [rows]), device),
        }
    }

    /// The arg-max class of each sample counted against its target, per class.
    #[derive(Clone)]
    struct MacroRecall {
        hits: [usize; 3],
        totals: [usize; 3],
    }

    impl EpochMetric<ClassificationOutput> for MacroRecall {
        fn update(&mut self, output: &ClassificationOutput) -> Result<(), TensorReadError> {
            let predicted = output.output.clone().argmax(1).try_into_data_as::<i64>()?;
            let targets = output.targets.clone().try_into_data_as::<i64>()?;
            for (p, t) in predicted.iter::<i64>().zip(targets.iter::<i64>()) {
                self.totals[t as usize] += 1;
                self.hits[t as usize] += usize::from(p == t);
            }
            Ok(())
        }

        fn value(&self) -> f64 {
            let seen = self.totals.iter().filter(|&&n| n > 0).count() as f64;
            let recalls: f64 = (0..3)
                .filter(|&c| self.totals[c] > 0)
                .map(|c| self.hits[c] as f64 / self.totals[c] as f64)
                .sum();
            100.0 * recalls / seen
        }
    }

    fn batches(device: &Device) -> [ClassificationOutput; 2] {
        [
            output(
                device,
                &[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0]],
                &[0, 2, 2],
            ),
            output(device, &[[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]], &[1, 1]),
        ]
    }

    #[test]
    fn a_mean_weights_each_batch_by_its_samples_and_starts_over_each_epoch() {
        let device = Device::flex();
        let first_logit = |o: &ClassificationOutput| {
            let [samples, _] = o.output.dims();
            (o.output.clone().slice([0..1, 0..1]).reshape([1]), samples)
        };
        let mut mean: Box<dyn SplitMetric<ClassificationOutput>> =
            <ClassificationOutput as crate::model::contract::MeasurableBy<_>>::boxed(Tracked::new(
                "first",
                Mean::lower_is_better(first_logit),
            ));
        assert_eq!(mean.key(), "first");
        assert!(!mean.higher_is_better());
        let [a, b] = batches(&device);
        assert_eq!(mean.update(&a, &metadata()).unwrap(), Some(2.0));
        assert_eq!(mean.update(&b, &metadata()).unwrap(), Some(0.0));
        // (2.0 * 3 + 0.0 * 2) / 5
        assert_eq!(mean.finish_epoch().unwrap(), 1.2);
        assert!(
            mean.finish_epoch().unwrap().is_nan(),
            "an epoch without batches"
        );
        mean.update(&b, &metadata()).unwrap();
        assert_eq!(
            mean.finish_epoch().unwrap(),
            0.0,
            "nothing of the last epoch"
        );
    }

    #[test]
    fn an_epoch_metric_equals_burns_macro_recall_and_starts_over_each_epoch() {
        let device = Device::flex();
        let mut ours: Box<dyn SplitMetric<ClassificationOutput>> =
            <ClassificationOutput as crate::model::contract::MeasurableBy<_>>::boxed(Tracked::new(
                "my_recall",
                Epoch::higher_is_better(MacroRecall {
                    hits: [0; 3],
                    totals: [0; 3],
                }),
            ));
        let mut burns = recall();
        assert!(ours.higher_is_better());
        for _ in 0..2 {
            for batch in batches(&device) {
                assert_eq!(ours.update(&batch, &metadata()).unwrap(), None);
                SplitMetric::<ClassificationOutput>::update(&mut burns, &batch, &metadata())
                    .unwrap();
            }
            let expected = SplitMetric::<ClassificationOutput>::finish_epoch(&mut burns).unwrap();
            // Class 0: 1/1, class 1: 1/2, class 2: 1/2.
            assert!((expected - 100.0 * 2.0 / 3.0).abs() < 1e-4, "{expected}");
            let value = ours.finish_epoch().unwrap();
            assert!(
                (value - expected).abs() < 1e-4,
                "{value} vs Burn's {expected}"
            );
        }
        assert!(ours.finish_epoch().unwrap().is_nan());
    }
}
