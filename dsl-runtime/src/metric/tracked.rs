//! A Burn metric bound to one split of a run, behind an object-safe trait.
//!
//! The fit loop holds the metrics of a split as `Vec<Box<dyn SplitMetric<Output>>>`: one virtual
//! call per metric per batch, no lookup by name. Whether an output can feed a metric is decided
//! when the metric is added (`Output: Adaptor<Input>`), so a mismatch is a compile error.

use burn::tensor::TensorReadError;
use burn::train::metric::{Adaptor, Metric, MetricAttributes, MetricMetadata, Numeric};

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
}
