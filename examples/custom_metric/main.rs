//! The seed task with what the catalogue does not have: two metrics of our own written as
//! functions of the step output (`confidence`, a per-batch mean; `macro_recall`, computed once
//! per epoch from counts), hyperparameters of the experiment (`hidden`, the model's width;
//! `stop_at`, the accuracy at which a callback stops the run), a callback that counts the
//! steps it saw (a count that survives a resume), and a test split measured on the best
//! checkpoint after training.
//!
//! `cargo run -p custom_metric` trains, then (`cli_then`) loads the best checkpoint of the run it
//! trained; `-- --set hidden=32` trains a wider model, `-- --sweep hidden=8,16,32` one run
//! per width; `-- --test-only` re-measures the test split of the newest run; `-- --predict`
//! writes its `predictions.csv`; `-- --export model.safetensors` saves its best weights.

use burn::tensor::{TensorReadError, activation};
use burn::train::ClassificationOutput;
use burn_experiment::metric::{Epoch, EpochMetric, Mean};
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// The mean softmax probability of the target class, in percent, with the batch's sample
/// count: unlike accuracy it moves while the arg-max does not, so it shows a model growing
/// surer of what it already gets right.
fn confidence(output: &ClassificationOutput) -> Result<(f64, usize), TensorReadError> {
    let probabilities = activation::softmax(output.output.clone(), 1);
    let chosen = probabilities.gather(1, output.targets.clone().unsqueeze_dim(1));
    let [samples] = output.targets.dims();
    Ok((chosen.mean().try_into_scalar::<f64>()? * 100.0, samples))
}

/// Recall per class averaged over the classes, in percent: counts summed over the epoch, the
/// ratio taken once at its end (a mean of per-batch recalls would weigh small batches wrong).
#[derive(Clone)]
pub struct MacroRecall {
    hits: Vec<usize>,
    totals: Vec<usize>,
}

impl MacroRecall {
    fn new(classes: usize) -> Self {
        Self {
            hits: vec![0; classes],
            totals: vec![0; classes],
        }
    }
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
        let seen = self.totals.iter().zip(&self.hits).filter(|(n, _)| **n > 0);
        let (sum, classes) = seen.fold((0.0, 0.0), |(sum, classes), (n, hits)| {
            (sum + *hits as f64 / *n as f64, classes + 1.0)
        });
        100.0 * sum / classes
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
    /// The seed task, with metrics and hyperparameters of its own, a callback and a test split.
    name: pub Extended,
    hparams: {
        /// Width of the model's hidden layer.
        hidden: usize = 16,
        /// Validation accuracy (%) at which the run stops.
        stop_at: f64 = 75.0,
    },
    model: Mlp = Mlp::with_hidden(config.hidden, 3, device),
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
        valid.metric(confidence = Mean::higher_is_better(confidence)),
        valid.recall,
        valid.metric(macro_recall = Epoch::higher_is_better(MacroRecall::new(3))),
        test.loss,
        test.accuracy,
        test.metric(confidence = Mean::higher_is_better(confidence)),
    ],
    callbacks: [StopAtAccuracy { target: config.stop_at, steps_seen: 0 }],
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
