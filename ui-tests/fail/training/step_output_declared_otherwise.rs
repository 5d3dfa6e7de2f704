// The step's output type written by mistake (its body returns a `ClassificationOutput`): one
// error, the mismatch at the body, not one more at `valid.accuracy`, which the body feeds.
use burn::train::RegressionOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> RegressionOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
