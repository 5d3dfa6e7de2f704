//! A fault for `tests/mpi.rs`: the experiment of `main.rs` whose step panics on rank 1 (read
//! from Open MPI's `OMPI_COMM_WORLD_RANK`) at its third batch, to show that one rank's panic
//! ends the whole job with that rank's message.

use std::sync::atomic::{AtomicUsize, Ordering};

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

static STEPS: AtomicUsize = AtomicUsize::new(0);

// Named `step` on purpose: the expansion's own step function must not hide a user's.

fn step(model: &Mlp, batch: Batch) -> ClassificationOutput {
    let rank = std::env::var("OMPI_COMM_WORLD_RANK").unwrap_or_default();
    if rank == "1" && STEPS.fetch_add(1, Ordering::Relaxed) == 2 {
        panic!("rank 1 cannot go on");
    }
    model.forward_classification(batch)
}

training! {
    /// The seed task, whose rank 1 panics.
    name: Panicking,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { step(model, batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 8 },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
    metrics: [train.loss, valid.loss],
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    Panicking::cli()
}
