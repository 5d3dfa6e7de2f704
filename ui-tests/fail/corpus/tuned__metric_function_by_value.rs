//! Hyperparameters of its own, a callback that reads one, metrics from functions and a test
//! split.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig, Relu};
use burn::tensor::{Device, TensorReadError, activation};
use burn::train::ClassificationOutput;
use burn_experiment::metric::{Epoch, EpochMetric, Mean};
use burn_experiment::prelude::*;

#[derive(Clone, Debug, Batch)]
pub struct Flower {
    pub measures: [f32; 4],
    pub species: usize,
}

fn flowers(from: usize, to: usize) -> InMemDataset<Flower> {
    InMemDataset::new(
        (from..to)
            .map(|k| Flower { measures: [k as f32 * 0.1; 4], species: k % 3 })
            .collect(),
    )
}

#[derive(Module, Debug)]
pub struct Classifier {
    hidden: Linear,
    dropout: Dropout,
    act: Relu,
    out: Linear,
}

impl Classifier {
    pub fn new(hidden: usize, dropout: f64, device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(4, hidden).init(device),
            dropout: DropoutConfig::new(dropout).init(),
            act: Relu::new(),
            out: LinearConfig::new(hidden, 3).init(device),
        }
    }

    pub fn forward(&self, batch: FlowerBatch) -> ClassificationOutput {
        let x = self.dropout.forward(self.act.forward(self.hidden.forward(batch.measures)));
        let logits = self.out.forward(x);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.species.clone());
        ClassificationOutput::new(loss, logits, batch.species)
    }
}

/// The mean probability of the right class.
fn confidence(output: ClassificationOutput) -> Result<(f64, usize), TensorReadError> {
    let probabilities = activation::softmax(output.output.clone(), 1);
    let chosen = probabilities.gather(1, output.targets.clone().unsqueeze_dim(1));
    let [samples] = output.targets.dims();
    Ok((chosen.mean().try_into_scalar::<f64>()?, samples))
}

/// Correct answers over the epoch.
#[derive(Clone, Default)]
pub struct Hits(usize);

impl EpochMetric<ClassificationOutput> for Hits {
    fn update(&mut self, output: &ClassificationOutput) -> Result<(), TensorReadError> {
        let predicted = output.output.clone().argmax(1).squeeze_dim::<1>(1);
        let same = predicted.equal(output.targets.clone()).int().sum();
        self.0 += same.try_into_scalar::<i64>()? as usize;
        Ok(())
    }

    fn value(&self) -> f64 {
        self.0 as f64
    }
}

/// Stops once validation accuracy reaches `accuracy`.
pub struct StopAt {
    pub accuracy: f64,
}

impl Callback for StopAt {
    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        match end.value(Split::Valid, "accuracy") {
            Some(a) if a >= self.accuracy => Control::Stop(format!("{a:.1} % reached")),
            _ => Control::Continue,
        }
    }
}

training! {
    name: Iris,
    hparams: {
        /// Width of the hidden layer.
        hidden: usize = 16,
        /// Dropout after the hidden layer.
        dropout: f64 = 0.1,
        /// Validation accuracy (%) that ends the run.
        stop_at: f64 = 90.0,
    },
    model: Classifier = Classifier::new(config.hidden, config.dropout, device),
    step: |model, batch: FlowerBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: flowers(0, 100),
        valid: flowers(100, 125),
        test: flowers(125, 150),
        batcher: FlowerBatcher,
        batch_size: 16,
    },
    optimizer: adamw(lr = 1e-2, weight_decay = 1e-2),
    epochs: 50,
    metrics: [
        train.loss,
        valid.loss,
        valid.accuracy,
        valid.metric(confidence = Mean::higher_is_better(confidence)),
        valid.metric(hits = Epoch::higher_is_better(Hits::default())),
        test.accuracy,
    ],
    callbacks: [StopAt { accuracy: config.stop_at }],
    checkpoint: best(valid.confidence),
    sweep: { hidden: [8, 16, 32], lr: [1e-3, 1e-2] },
}

fn main() -> std::process::ExitCode {
    Iris::cli()
}
