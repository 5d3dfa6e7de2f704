//! The sample-weighted loss.
//!
//! Burn's `LossMetric` weights each batch by the length of the loss tensor, which is 1 for a
//! mean-reduced loss: its epoch value is the plain mean of batch losses. With a short last batch
//! that over-weights the few samples in it (on the seed task, epoch-1 validation loss 0.762 by
//! Burn's mean of batch means against 0.740 per sample). This metric weights each batch by its
//! number of samples, the figure `sum(loss_i * n_i) / sum(n_i)` a PyTorch user computes, and keeps
//! the batch value as the exact `f32` the model produced.

use std::sync::Arc;

use burn::tensor::{Tensor, TensorReadError};
use burn::train::metric::state::NumericMetricState;
use burn::train::metric::{
    Adaptor, Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes,
    NumericEntry, SerializedEntry,
};
use burn::train::{
    ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput, SequenceOutput,
};

/// What [`SampleLoss`] reads from a step output: the loss and how many samples it averages.
pub struct SampleLossInput {
    /// The loss, reduced (`[1]`) or per sample (`[n]`, then averaged).
    pub loss: Tensor<1>,
    /// Number of samples the loss is taken over: the batch's weight in the epoch mean.
    pub samples: usize,
}

/// Loss averaged over samples rather than batches (see the module docs). Its `SerializedEntry`s
/// are empty: the fit loop reads numbers, so no string is formatted per step. Register Burn's
/// `LossMetric` instead when handing a model to Burn's `SupervisedTraining` yourself.
#[derive(Clone)]
pub struct SampleLoss {
    name: MetricName,
    state: NumericMetricState,
    last: f32,
    /// This epoch's batch losses and sample counts: what a checkpoint taken inside an epoch
    /// carries, since Burn's `NumericMetricState` does not expose its sums.
    epoch: Vec<(f32, usize)>,
}

impl Default for SampleLoss {
    fn default() -> Self {
        Self {
            name: Arc::new("Loss".to_owned()),
            state: NumericMetricState::new(),
            last: f32::NAN,
            epoch: Vec::new(),
        }
    }
}

impl SampleLoss {
    fn record(&mut self, loss: f32, samples: usize) {
        self.last = loss;
        self.state.update(f64::from(loss), samples);
        self.epoch.push((loss, samples));
    }

    /// This epoch's batches so far, for a checkpoint inside an epoch.
    pub(crate) fn carry(&self) -> serde_json::Value {
        serde_json::json!(self.epoch)
    }

    /// Replays the batches [`SampleLoss::carry`] gave, in order, which reaches the same sums
    /// bit for bit; returns how many there were.
    pub(crate) fn restore(&mut self, carried: &serde_json::Value) -> Result<usize, String> {
        let batches: Vec<(f32, usize)> =
            serde_json::from_value(carried.clone()).map_err(|e| e.to_string())?;
        for &(loss, samples) in &batches {
            self.record(loss, samples);
        }
        Ok(batches.len())
    }
}

impl Metric for SampleLoss {
    type Input = SampleLossInput;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        NumericAttributes {
            unit: None,
            higher_is_better: false,
        }
        .into()
    }

    fn update(
        &mut self,
        input: &SampleLossInput,
        _metadata: &MetricMetadata,
    ) -> Result<SerializedEntry, TensorReadError> {
        let loss = match input.loss.dims() {
            [1] => input.loss.clone(),
            _ => input.loss.clone().mean(),
        };
        self.record(loss.try_into_scalar::<f32>()?, input.samples);
        // Burn's metrics format a display string on every update for its renderers. The fit
        // loop reads values, not strings, and on small models that formatting was a visible
        // share of each step (see the README's benchmark notes), so the per-step entry is empty.
        Ok(SerializedEntry::new(String::new(), String::new()))
    }

    fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
        // As in `update`: the fit loop reads `final_value`, not the display string.
        Ok(SerializedEntry::new(String::new(), String::new()))
    }

    fn clear(&mut self) {
        self.state.reset();
        self.last = f32::NAN;
        self.epoch.clear();
    }
}

impl Numeric for SampleLoss {
    fn value(&self) -> Option<NumericEntry> {
        Some(NumericEntry::Value(f64::from(self.last)))
    }

    fn running_value(&self) -> Option<NumericEntry> {
        Some(self.state.running_value())
    }

    fn final_value(&self) -> NumericEntry {
        self.state.final_value()
    }
}

/// Burn's outputs, each weighted by its number of targets along the batch dimension.
macro_rules! sample_loss_adaptor {
    ($($output:ty),*) => {$(
        impl Adaptor<SampleLossInput> for $output {
            fn adapt(&self) -> SampleLossInput {
                SampleLossInput {
                    loss: self.loss.clone(),
                    samples: self.targets.dims()[0],
                }
            }
        }
    )*};
}

sample_loss_adaptor!(
    ClassificationOutput,
    RegressionOutput,
    MultiLabelClassificationOutput,
    SequenceOutput
);
