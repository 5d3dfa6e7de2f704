use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

struct Quiet;
impl Callback for Quiet {}
training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    callbacks: [Quiet],
    engine: burn,
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
