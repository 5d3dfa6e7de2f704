//! Red wine quality as 6-class classification: an MLP 11→64→6 on standardised features.
//!
//! `cargo run --release -p wine` trains for 60 epochs (a few seconds) and writes
//! `artifacts/wine/run-<N>/`. The majority class (quality 5) is 42.6 % of the wines; this model reaches
//! about 60 % validation accuracy, which `tests/figure.rs` checks loosely (above 50 %).

mod data;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Tensor};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use data::{CLASSES, Part, WineBatch, WineBatcher, wines};

/// An MLP with one hidden layer.
#[derive(Module, Debug)]
pub struct Net {
    hidden: Linear,
    act: Relu,
    out: Linear,
}

impl Net {
    fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(11, 64).init(device),
            act: Relu::new(),
            out: LinearConfig::new(64, CLASSES).init(device),
        }
    }

    fn forward(&self, batch: WineBatch) -> ClassificationOutput {
        let logits: Tensor<2> = self
            .out
            .forward(self.act.forward(self.hidden.forward(batch.features)));
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.quality.clone());
        ClassificationOutput::new(loss, logits, batch.quality)
    }
}

training! {
    /// Red wine quality from 11 physico-chemical measurements.
    name: Wine,
    model: Net = Net::new(device),
    step: |model, batch: WineBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: wines(Part::Train)?,
        valid: wines(Part::Valid)?,
        batcher: WineBatcher,
        batch_size: 32,
        shuffle: 1,
        workers: 2,
    },
    optimizer: adam(lr = 1e-3),
    epochs: 60,
    metrics: [train.loss, valid.loss, valid.accuracy, valid.f1],
    checkpoint: best(valid.accuracy),
    seed: 7,
}

fn main() -> std::process::ExitCode {
    Wine::cli()
}
