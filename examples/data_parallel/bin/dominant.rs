//! A compute-bound task for `bench.sh` whose one weight matrix holds most of the model, as an
//! embedding or a head does in many real ones: the medium task's first 256 features through an
//! MLP 256→768→768→10 (795,658 values, the 768x768 matrix 74 % of them), batch 128, Adam, with
//! `data_parallel: mpi`. Whole-tensor owners would leave three quarters of the optimizer's
//! work and state on one rank; owners of ranges split that matrix.

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

/// The features the model reads of each item.
const INPUTS: usize = 256;

/// MLP 256 → 768 → 768 → 10.
#[derive(Module, Debug)]
pub struct Dominant {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
    act: Relu,
}

impl Dominant {
    /// The same initial weights in every process.
    fn new(device: &Device) -> Self {
        device.seed(42);
        let model = Self {
            fc1: LinearConfig::new(INPUTS, 768).init(device),
            fc2: LinearConfig::new(768, 768).init(device),
            fc3: LinearConfig::new(768, 10).init(device),
            act: Relu::new(),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let x = batch.x.narrow(1, 0, INPUTS);
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
    /// An MLP dominated by one matrix on the medium task's data, data-parallel under `mpirun`.
    name: DominantParallel,
    model: Dominant = Dominant::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: DigitBatcher::default(), batch_size: 128 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    DominantParallel::cli()
}
