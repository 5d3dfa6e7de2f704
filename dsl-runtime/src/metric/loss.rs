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
use burn::train::metric::{
    Adaptor, Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes,
    NumericEntry, SerializedEntry,
};
use burn::train::{
    ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput, SequenceOutput,
};
use serde::{Deserialize, Serialize};

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
///
/// Its sums are kept here rather than in Burn's `NumericMetricState` (same arithmetic) because
/// a checkpoint taken inside an epoch must carry them, and Burn's state keeps them private.
#[derive(Clone)]
pub struct SampleLoss {
    name: MetricName,
    /// Sum of `loss × samples` over the epoch's batches.
    sum: f64,
    /// Samples over the epoch's batches.
    samples: usize,
    last: f32,
    /// Batches read at a time (1: each on update); see [`SampleLoss::defer`].
    every: usize,
    /// Losses fed and still on the device, with their sample counts, in order.
    pending: Vec<(Tensor<1>, usize)>,
    /// Losses read and not yet taken by the fit loop.
    taken: Vec<f32>,
}

/// What a checkpoint inside an epoch carries of [`SampleLoss`]: its sums, exact in JSON.
#[derive(Serialize, Deserialize)]
struct Carried {
    sum: f64,
    samples: usize,
}

impl Default for SampleLoss {
    fn default() -> Self {
        Self {
            name: Arc::new("Loss".to_owned()),
            sum: 0.0,
            samples: 0,
            last: f32::NAN,
            every: 1,
            pending: Vec::new(),
            taken: Vec::new(),
        }
    }
}

impl SampleLoss {
    /// Keeps each batch's loss on the device and reads `every` of them in one transfer: on a
    /// GPU a read per step would wait for the device every step. The sums take the values in
    /// the order fed, the same arithmetic as reading each on update, so every bit is the same.
    pub(crate) fn defer(&mut self, every: usize) {
        self.every = every.max(1);
    }

    /// Whether losses are read later, in one transfer for several batches.
    pub(crate) fn deferring(&self) -> bool {
        self.every > 1
    }

    /// Losses fed and not yet taken.
    pub(crate) fn deferred(&self) -> usize {
        self.pending.len() + self.taken.len()
    }

    /// The losses fed since the last call, in order, reading what is still on the device.
    pub(crate) fn take_deferred(&mut self) -> Result<Vec<f64>, TensorReadError> {
        self.transfer()?;
        Ok(self.taken.drain(..).map(f64::from).collect())
    }

    /// Reads the pending losses in one transfer and adds them to the sums, in order.
    fn transfer(&mut self) -> Result<(), TensorReadError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let (losses, samples): (Vec<_>, Vec<_>) = self.pending.drain(..).unzip();
        let values = Tensor::cat(losses, 0).try_into_vec_as::<f32>()?;
        super::reads::count();
        for (value, samples) in values.into_iter().zip(samples) {
            self.add(value, samples);
        }
        Ok(())
    }

    /// One batch's loss into the sums.
    fn add(&mut self, value: f32, samples: usize) {
        self.last = value;
        if samples > 0 {
            self.sum += f64::from(value) * samples as f64;
            self.samples += samples;
        }
        if self.deferring() {
            self.taken.push(value);
        }
    }

    /// This epoch's sums so far, for a checkpoint inside an epoch (the fit loop takes the
    /// deferred losses first).
    pub(crate) fn carry(&self) -> serde_json::Value {
        debug_assert!(self.pending.is_empty(), "losses left on the device");
        serde_json::json!(Carried {
            sum: self.sum,
            samples: self.samples,
        })
    }

    /// Takes back the sums [`SampleLoss::carry`] gave.
    pub(crate) fn restore(&mut self, carried: &serde_json::Value) -> serde_json::Result<()> {
        let Carried { sum, samples } = serde_json::from_value(carried.clone())?;
        self.sum = sum;
        self.samples = samples;
        Ok(())
    }

    fn mean(&self) -> f64 {
        self.sum / self.samples as f64
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
        if self.deferring() {
            self.pending.push((loss, input.samples));
            if self.pending.len() >= self.every {
                self.transfer()?;
            }
        } else {
            let value = loss.try_into_scalar::<f32>()?;
            super::reads::count();
            self.add(value, input.samples);
        }
        // Burn's metrics format a display string on every update for its renderers. The fit
        // loop reads values, not strings, and on small models that formatting was a visible
        // share of each step (see the README's benchmark notes), so the per-step entry is empty.
        Ok(SerializedEntry::new(String::new(), String::new()))
    }

    fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
        // The epoch's value takes every loss, those still on the device too.
        self.transfer()?;
        // As in `update`: the fit loop reads `final_value`, not the display string.
        Ok(SerializedEntry::new(String::new(), String::new()))
    }

    fn clear(&mut self) {
        self.sum = 0.0;
        self.samples = 0;
        self.last = f32::NAN;
        self.pending.clear();
        self.taken.clear();
    }
}

impl Numeric for SampleLoss {
    fn value(&self) -> Option<NumericEntry> {
        Some(NumericEntry::Value(f64::from(self.last)))
    }

    fn running_value(&self) -> Option<NumericEntry> {
        Some(NumericEntry::Aggregated {
            aggregated_value: self.mean(),
            count: self.samples,
        })
    }

    fn final_value(&self) -> NumericEntry {
        NumericEntry::Final(self.mean())
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
