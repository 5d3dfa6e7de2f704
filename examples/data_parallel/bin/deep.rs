//! A compute-bound task for `bench.sh`: the medium task's data through an MLP with two
//! 768-wide hidden layers (784→768→768→10, 1.2 M parameters), batch 128, Adam, with
//! `data_parallel: mpi`. Its weight matrices are about equal, so two owners split the
//! optimizer state about evenly.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use dsl_runtime::prelude::*;

#[allow(dead_code)]
#[path = "../../bench/tasks.rs"]
mod tasks;

use tasks::{DigitBatch, DigitBatcher, medium_data};

/// MLP 784 → 768 → 768 → 10.
#[derive(Module, Debug)]
pub struct Deep {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
    act: Relu,
}

impl Deep {
    /// The same initial weights in every process.
    fn new(device: &Device) -> Self {
        device.seed(42);
        let model = Self {
            fc1: LinearConfig::new(784, 768).init(device),
            fc2: LinearConfig::new(768, 768).init(device),
            fc3: LinearConfig::new(768, 10).init(device),
            act: Relu::new(),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let hidden = self.act.forward(self.fc1.forward(batch.x));
        let hidden = self.act.forward(self.fc2.forward(hidden));
        let logits = self.fc3.forward(hidden);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

training! {
    /// A compute-bound MLP on the medium task's data, data-parallel under `mpirun`.
    name: DeepParallel,
    model: Deep = Deep::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: DigitBatcher::default(), batch_size: 128 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    DeepParallel::cli()
}
