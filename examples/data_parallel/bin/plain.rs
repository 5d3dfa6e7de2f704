//! For `tests/mpi.rs`: the seed task without `data_parallel`, which refuses to start under
//! `mpirun` rather than train one full run per process.

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// The seed task, trained in one process.
    name: Plain,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 8 },
    optimizer: sgd(lr = 0.1),
    epochs: 1,
    metrics: [train.loss, valid.loss],
}

fn main() -> std::process::ExitCode {
    Plain::cli()
}
