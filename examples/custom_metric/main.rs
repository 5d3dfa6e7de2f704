//! The seed task with three things the catalogue does not have: a metric of our own
//! (`confidence`, the mean probability the model gives the right class), a callback that stops
//! the run once validation accuracy reaches a target (and counts the steps it saw, a count that
//! survives a resume), and a test split measured on the best checkpoint after training.
//!
//! `cargo run -p custom_metric` trains, then (`cli_then`) loads the best checkpoint of the run it
//! trained; `-- --test-only` re-measures the test split of the
//! newest run; `-- --predict` writes its `predictions.csv`; `-- --export model.safetensors`
//! saves its best weights for other tools.

use std::sync::Arc;

use burn::tensor::{Int, Tensor, TensorReadError, activation};
use burn::train::ClassificationOutput;
use burn::train::metric::state::{FormatOptions, NumericMetricState};
use burn::train::metric::{
    Adaptor, Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes,
    NumericEntry, SerializedEntry,
};
use dsl_runtime::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// What `Confidence` reads of a step output: the logits and the target classes.
pub struct ConfidenceInput {
    logits: Tensor<2>,
    targets: Tensor<1, Int>,
}

impl Adaptor<ConfidenceInput> for ClassificationOutput {
    fn adapt(&self) -> ConfidenceInput {
        ConfidenceInput {
            logits: self.output.clone(),
            targets: self.targets.clone(),
        }
    }
}

/// The mean softmax probability of the target class, in percent: unlike accuracy it moves
/// while the arg-max does not, so it shows a model growing surer of what it already gets right.
#[derive(Clone)]
pub struct Confidence {
    name: MetricName,
    state: NumericMetricState,
}

impl Default for Confidence {
    fn default() -> Self {
        Self {
            name: Arc::new("Confidence".to_owned()),
            state: NumericMetricState::default(),
        }
    }
}

impl Metric for Confidence {
    type Input = ConfidenceInput;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        NumericAttributes {
            unit: Some("%".to_owned()),
            higher_is_better: true,
        }
        .into()
    }

    fn update(
        &mut self,
        input: &ConfidenceInput,
        _metadata: &MetricMetadata,
    ) -> Result<SerializedEntry, TensorReadError> {
        let [samples, _] = input.logits.dims();
        let probabilities = activation::softmax(input.logits.clone(), 1);
        let chosen = probabilities.gather(1, input.targets.clone().unsqueeze_dim(1));
        let mean = chosen.mean().try_into_scalar::<f64>()? * 100.0;
        self.state.update(mean, samples);
        Ok(self
            .state
            .compute_update(FormatOptions::new(self.name()).unit("%").precision(2)))
    }

    fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
        Ok(self
            .state
            .compute_final(FormatOptions::new(self.name()).unit("%").precision(2)))
    }

    fn clear(&mut self) {
        self.state.reset();
    }
}

impl Numeric for Confidence {
    fn value(&self) -> Option<NumericEntry> {
        Some(self.state.current_value())
    }

    fn running_value(&self) -> Option<NumericEntry> {
        Some(self.state.running_value())
    }

    fn final_value(&self) -> NumericEntry {
        self.state.final_value()
    }
}

/// Stops the run after the first epoch whose validation accuracy reaches `target`, and counts
/// the optimizer steps it saw; the count is saved in every checkpoint.
pub struct StopAtAccuracy {
    pub target: f64,
    pub steps_seen: u64,
}

impl Callback for StopAtAccuracy {
    fn step_end(&mut self, _step: &StepEnd) -> Control {
        self.steps_seen += 1;
        Control::Continue
    }

    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        match end.value(Split::Valid, "accuracy") {
            Some(accuracy) if accuracy >= self.target => Control::Stop(format!(
                "valid.accuracy {accuracy:.2} reached {} after {} steps",
                self.target, self.steps_seen
            )),
            _ => Control::Continue,
        }
    }

    fn save(&self) -> Option<serde_json::Value> {
        Some(self.steps_seen.into())
    }

    fn restore(&mut self, state: serde_json::Value) -> Result<(), String> {
        self.steps_seen = state.as_u64().ok_or("expected a step count")?;
        Ok(())
    }
}

training! {
    /// The seed task, with a metric of its own, a callback and a test split.
    name: pub Extended,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        test: samples(120..156),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 6,
    metrics: [
        train.loss,
        valid.loss,
        valid.accuracy,
        valid.metric(confidence = Confidence::default()),
        test.loss,
        test.accuracy,
        test.metric(confidence = Confidence::default()),
    ],
    callbacks: [StopAtAccuracy { target: 75.0, steps_seen: 0 }],
    checkpoint: keep_last(1) | best(valid.confidence),
}

fn main() -> std::process::ExitCode {
    // After training, the config names the run just trained: `load_best_with` reads it, not an
    // older run (whatever `--artifacts` said).
    Extended::cli_then(|config, _report| {
        let device = burn::tensor::Device::flex();
        let (epoch, _model) = Extended::load_best_with(config, &device)?;
        println!(
            "best checkpoint: epoch {epoch} of {}",
            Extended::run_dir(config)?.display()
        );
        Ok(())
    })
}
