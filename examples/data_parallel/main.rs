//! The seed classification task as one run over the processes of an MPI job.
//!
//! `mpirun -n 2 target/release/data_parallel` trains with each optimizer step summing one batch
//! per process, and gives bit for bit what `data_parallel --set grad_accumulation=2` gives
//! alone (`tests/mpi.rs`). Started alone the binary trains as if the key were absent. The step
//! output is a derived `StepOutput`, which can travel between processes because every field has
//! a role.

use burn::tensor::{Int, Tensor};
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// The classification output, as `#[derive(StepOutput)]` writes it.
#[derive(StepOutput)]
pub struct Output {
    #[loss]
    loss: Tensor<1>,
    #[logits]
    logits: Tensor<2>,
    #[targets]
    targets: Tensor<1, Int>,
}

training! {
    /// The seed task, 3 classes from 4 sine features, data-parallel under `mpirun`.
    name: SeedParallel,
    model: Mlp = Mlp::with_hidden(config.hidden, 3, device),
    step: |model, batch: Batch| -> Output {
        let out = model.forward_classification(batch);
        Output { loss: out.loss, logits: out.output, targets: out.targets }
    },
    loader: {
        train: samples(0..200),
        valid: samples(200..240),
        test: samples(240..280),
        batcher: SampleBatcher,
        batch_size: 8,
        shuffle: 7,
    },
    optimizer: adam(lr = 0.01),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy, test.loss, test.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    hparams: {
        /// Width of the hidden layer.
        hidden: usize = 16,
    },
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    SeedParallel::cli()
}
