//! A Burn metric bound to one split of a run, behind an object-safe trait.
//!
//! The fit loop holds the metrics of a split as `Vec<Box<dyn SplitMetric<Output>>>`: one virtual
//! call per metric per batch, no lookup by name. Whether an output can feed a metric is decided
//! when the metric is added (`Output: Adaptor<Input>`), so a mismatch is a compile error.

use std::any::Any;

use burn::tensor::TensorReadError;
use burn::train::metric::{Adaptor, Metric, MetricAttributes, MetricMetadata, Numeric};

use super::SampleLoss;

/// One metric of one split, updated every batch and reduced at the end of an epoch.
pub trait SplitMetric<O>: Send {
    /// The metric's name in the run's outputs (`loss`, `accuracy`, `top_k(2)`, ...).
    fn key(&self) -> &str;
    /// Whether a larger value is better (accuracy) or worse (loss).
    fn higher_is_better(&self) -> bool;
    /// Feeds one step output; returns the batch's own value where the metric has one.
    fn update(
        &mut self,
        item: &O,
        metadata: &MetricMetadata,
    ) -> Result<Option<f64>, TensorReadError>;
    /// The epoch's value; the metric is then cleared for the next epoch.
    fn finish_epoch(&mut self) -> Result<f64, TensorReadError>;
    /// This epoch's state so far, for a checkpoint taken inside an epoch; `None` when the
    /// metric cannot hand it over, and an interrupted run then redoes the epoch instead.
    fn carry(&self) -> Option<serde_json::Value> {
        None
    }
    /// Takes back what [`SplitMetric::carry`] gave, as if those batches had just been fed.
    fn restore(&mut self, _carried: &serde_json::Value) -> Result<(), RestoreError> {
        Err(RestoreError::NotCarried {
            metric: self.key().to_owned(),
        })
    }
    /// Keeps each batch's value on the device, read `every` batches at a time in one transfer
    /// (`every` ≥ 2), where this metric can (our loss can; Burn's metrics read on update).
    fn defer(&mut self, _every: usize) {}
    /// How many batch values were fed and not yet taken by [`SplitMetric::take_deferred`].
    fn deferred(&self) -> usize {
        0
    }
    /// The batch values fed since the last call, in order; what is still on the device is
    /// read in one transfer.
    fn take_deferred(&mut self) -> Result<Vec<f64>, TensorReadError> {
        Ok(Vec::new())
    }
}

/// Why a metric could not take back the state a checkpoint carried for it.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The metric keeps no state across a restart (Burn's metrics keep theirs private).
    #[error("`{metric}` cannot be restored inside an epoch")]
    NotCarried {
        /// The metric's key.
        metric: String,
    },
    /// What the checkpoint carries for the metric is not what it wrote.
    #[error("`{metric}`: the checkpoint's state for it is unreadable: {source}")]
    Malformed {
        /// The metric's key.
        metric: String,
        /// The underlying failure.
        source: serde_json::Error,
    },
}

/// A Burn metric `M` with the key it is reported under.
#[derive(Clone)]
pub struct Tracked<M> {
    key: String,
    metric: M,
    updates: usize,
}

impl<M> Tracked<M> {
    /// Reports `metric` under `key`.
    pub fn new(key: impl Into<String>, metric: M) -> Self {
        Self {
            key: key.into(),
            metric,
            updates: 0,
        }
    }

    /// The key this metric is reported under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key and the metric, for metrics that are not Burn's.
    pub(crate) fn into_parts(self) -> (String, M) {
        (self.key, self.metric)
    }

    /// The Burn metric itself, e.g. to register it with Burn's `SupervisedTraining`.
    pub fn into_inner(self) -> M {
        self.metric
    }
}

impl<O, M> SplitMetric<O> for Tracked<M>
where
    M: Metric + Numeric + 'static,
    O: Adaptor<M::Input>,
{
    fn key(&self) -> &str {
        &self.key
    }

    fn higher_is_better(&self) -> bool {
        match self.metric.attributes() {
            MetricAttributes::Numeric(attributes) => attributes.higher_is_better,
            MetricAttributes::None => true,
        }
    }

    fn update(
        &mut self,
        item: &O,
        metadata: &MetricMetadata,
    ) -> Result<Option<f64>, TensorReadError> {
        self.metric.update(&item.adapt(), metadata)?;
        self.updates += 1;
        let loss: &dyn Any = &self.metric;
        match loss.downcast_ref::<SampleLoss>() {
            Some(loss) if loss.deferring() => return Ok(None),
            Some(_) => {}
            None => super::reads::count(),
        }
        Ok(self.metric.value().map(|entry| entry.current()))
    }

    fn finish_epoch(&mut self) -> Result<f64, TensorReadError> {
        // Burn's accumulating metrics (AUROC) have no value before their first update.
        let value = if self.updates == 0 {
            f64::NAN
        } else {
            self.metric.compute()?;
            self.metric.final_value().current()
        };
        self.metric.clear();
        self.updates = 0;
        Ok(value)
    }

    // Only our loss can hand its state over: Burn's metrics keep theirs private.
    fn carry(&self) -> Option<serde_json::Value> {
        let loss: &dyn Any = &self.metric;
        let loss = loss.downcast_ref::<SampleLoss>()?;
        Some(serde_json::json!({ "batches": self.updates, "loss": loss.carry() }))
    }

    fn defer(&mut self, every: usize) {
        let loss: &mut dyn Any = &mut self.metric;
        if let Some(loss) = loss.downcast_mut::<SampleLoss>() {
            loss.defer(every);
        }
    }

    fn deferred(&self) -> usize {
        let loss: &dyn Any = &self.metric;
        loss.downcast_ref::<SampleLoss>()
            .map_or(0, SampleLoss::deferred)
    }

    fn take_deferred(&mut self) -> Result<Vec<f64>, TensorReadError> {
        let loss: &mut dyn Any = &mut self.metric;
        match loss.downcast_mut::<SampleLoss>() {
            Some(loss) => loss.take_deferred(),
            None => Ok(Vec::new()),
        }
    }

    fn restore(&mut self, carried: &serde_json::Value) -> Result<(), RestoreError> {
        let metric = self.key.clone();
        let loss: &mut dyn Any = &mut self.metric;
        let Some(loss) = loss.downcast_mut::<SampleLoss>() else {
            return Err(RestoreError::NotCarried { metric });
        };
        let malformed = |source| RestoreError::Malformed {
            metric: metric.clone(),
            source,
        };
        let batches: usize =
            serde_json::from_value(carried["batches"].clone()).map_err(malformed)?;
        loss.restore(&carried["loss"]).map_err(malformed)?;
        self.updates = batches;
        Ok(())
    }
}

/// A boxed metric is a metric: lets `Fit::train_metric` take what `training!` builds.
impl<O> SplitMetric<O> for Box<dyn SplitMetric<O>> {
    fn key(&self) -> &str {
        self.as_ref().key()
    }

    fn higher_is_better(&self) -> bool {
        self.as_ref().higher_is_better()
    }

    fn update(
        &mut self,
        item: &O,
        metadata: &MetricMetadata,
    ) -> Result<Option<f64>, TensorReadError> {
        self.as_mut().update(item, metadata)
    }

    fn finish_epoch(&mut self) -> Result<f64, TensorReadError> {
        self.as_mut().finish_epoch()
    }

    fn carry(&self) -> Option<serde_json::Value> {
        self.as_ref().carry()
    }

    fn restore(&mut self, carried: &serde_json::Value) -> Result<(), RestoreError> {
        self.as_mut().restore(carried)
    }

    fn defer(&mut self, every: usize) {
        self.as_mut().defer(every);
    }

    fn deferred(&self) -> usize {
        self.as_ref().deferred()
    }

    fn take_deferred(&mut self) -> Result<Vec<f64>, TensorReadError> {
        self.as_mut().take_deferred()
    }
}

#[cfg(test)]
mod tests {
    use burn::data::dataloader::Progress;
    use burn::tensor::{Device, Tensor};
    use burn::train::metric::MetricMetadata;
    use burn::train::{ClassificationOutput, RegressionOutput};

    use super::SplitMetric;
    use crate::metric::{accuracy, loss};

    fn batch(device: &Device, loss: f32, samples: usize) -> RegressionOutput {
        RegressionOutput {
            loss: Tensor::from_floats([loss], device),
            output: Tensor::zeros([samples, 1], device),
            targets: Tensor::zeros([samples, 1], device),
        }
    }

    #[test]
    fn the_loss_carried_over_an_interruption_ends_the_epoch_with_the_same_bits() {
        let device = Device::flex();
        let batches = [(0.913_f32, 16), (0.71, 16), (0.652, 7)];
        let metadata = MetricMetadata {
            progress: Progress {
                items_processed: 0,
                items_total: 39,
                unit: None,
            },
            iteration: None,
            lr: None,
        };
        let mut whole = loss();
        let mut before = loss();
        for &(value, samples) in &batches {
            SplitMetric::<RegressionOutput>::update(
                &mut whole,
                &batch(&device, value, samples),
                &metadata,
            )
            .unwrap();
        }
        for &(value, samples) in &batches[..2] {
            SplitMetric::<RegressionOutput>::update(
                &mut before,
                &batch(&device, value, samples),
                &metadata,
            )
            .unwrap();
        }
        let carried = SplitMetric::<RegressionOutput>::carry(&before).unwrap();
        let text = serde_json::to_string(&carried).unwrap();
        let mut after = loss();
        SplitMetric::<RegressionOutput>::restore(&mut after, &serde_json::from_str(&text).unwrap())
            .unwrap();
        let (value, samples) = batches[2];
        SplitMetric::<RegressionOutput>::update(
            &mut after,
            &batch(&device, value, samples),
            &metadata,
        )
        .unwrap();
        let expected = SplitMetric::<RegressionOutput>::finish_epoch(&mut whole).unwrap();
        let resumed = SplitMetric::<RegressionOutput>::finish_epoch(&mut after).unwrap();
        assert_eq!(resumed.to_bits(), expected.to_bits());
        // Nothing is carried into the next epoch.
        assert_eq!(
            SplitMetric::<RegressionOutput>::carry(&whole),
            Some(serde_json::json!({"batches": 0, "loss": {"sum": 0.0, "samples": 0}}))
        );
    }

    #[test]
    fn burns_metrics_cannot_be_carried() {
        let mut metric = accuracy();
        assert_eq!(SplitMetric::<ClassificationOutput>::carry(&metric), None);
        let err = SplitMetric::<ClassificationOutput>::restore(&mut metric, &serde_json::json!({}))
            .unwrap_err();
        assert!(err.to_string().contains("`accuracy`"), "{err}");
    }
}
