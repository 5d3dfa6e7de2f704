//! The benchmark's medium task (784 features, 10 classes, MLP 784→256→10, 8,192 items, batch
//! 64, Adam) with `data_parallel: mpi`, for `bench.sh`: `mpirun -n 2` against one process
//! with `--set grad_accumulation=2`, the same run.

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

/// The benchmark's tasks, of which this binary trains the medium one.
#[allow(dead_code)]
#[path = "../../bench/tasks.rs"]
mod tasks;

use tasks::{DigitBatch, DigitBatcher, Medium, medium_data};

training! {
    /// The medium task of the benchmark, data-parallel under `mpirun`.
    name: MediumParallel,
    model: Medium = Medium::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: DigitBatcher::default(), batch_size: 64 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    MediumParallel::cli()
}
