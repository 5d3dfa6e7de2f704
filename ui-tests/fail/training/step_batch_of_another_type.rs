use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// Not the batch `SampleBatcher` builds.
#[derive(Clone, Debug)]
struct Wrapped {
    batch: Batch,
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Wrapped| -> ClassificationOutput { model.forward_classification(batch.batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
