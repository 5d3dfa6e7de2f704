//! Compute-bound tasks for `bench.sh`: the medium task's data through an MLP with two 768-wide
//! hidden layers, batch 128, Adam, with `data_parallel: mpi`. As written, 784→768→768→10 (1.2 M
//! parameters), whose weight matrices are about equal; with `--set inputs=256` the model reads
//! the first 256 features (256→768→768→10, 795,658 values), and its 768x768 matrix holds 74 %
//! of them, as an embedding or a head does in many real models: whole-tensor owners would
//! leave three quarters of the optimizer's work and state on one rank, owners of ranges split
//! that matrix.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

#[allow(dead_code)]
#[path = "../../bench/tasks.rs"]
mod tasks;

use tasks::{DigitBatch, DigitBatcher, medium_data};

/// MLP `inputs` → 768 → 768 → 10.
#[derive(Module, Debug)]
pub struct Deep {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
    act: Relu,
    inputs: usize,
}

impl Deep {
    /// The same initial weights in every process; `inputs` from 1 to all 784 features.
    fn new(inputs: usize, device: &Device) -> Self {
        let inputs = inputs.clamp(1, tasks::FEATURES);
        device.seed(42);
        let model = Self {
            fc1: LinearConfig::new(inputs, 768).init(device),
            fc2: LinearConfig::new(768, 768).init(device),
            fc3: LinearConfig::new(768, 10).init(device),
            act: Relu::new(),
            inputs,
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let x = batch.x.narrow(1, 0, self.inputs);
        let hidden = self.act.forward(self.fc1.forward(x));
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
    model: Deep = Deep::new(config.inputs, device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: DigitBatcher::default(), batch_size: 128 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    hparams: {
        /// The features of each item the model reads, from the first (784: all).
        inputs: usize = 784,
    },
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    DeepParallel::cli()
}
