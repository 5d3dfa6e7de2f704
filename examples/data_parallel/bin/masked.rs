//! For `tests/mpi.rs`: the seed task through dropout, whose training steps draw random numbers,
//! data-parallel. Each batch's step draws from a stream of its own (seed, epoch, batch), so
//! `mpirun -n 2` equals one process accumulating two batches here too.

use burn::nn::{Dropout, DropoutConfig};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// The seed MLP with dropout on its input features.
#[derive(burn::module::Module, Debug)]
pub struct Masked {
    dropout: Dropout,
    mlp: Mlp,
}

impl Masked {
    fn new(device: &burn::tensor::Device) -> Self {
        Self {
            dropout: DropoutConfig::new(0.2).init(),
            mlp: Mlp::with_hidden(16, 3, device),
        }
    }

    fn forward(&self, batch: Batch) -> ClassificationOutput {
        let x = self.dropout.forward(batch.x.clone());
        self.mlp.forward_classification(Batch { x, ..batch })
    }
}

training! {
    /// The seed task with dropout, data-parallel under `mpirun`.
    name: MaskedParallel,
    model: Masked = Masked::new(device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch) },
    loader: { train: samples(0..200), valid: samples(200..240), batcher: SampleBatcher, batch_size: 8, shuffle: 7 },
    optimizer: adam(lr = 0.01),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(1),
    seed: 11,
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    MaskedParallel::cli()
}
