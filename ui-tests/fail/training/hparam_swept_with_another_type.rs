use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Tuned,
    hparams: { hidden: usize = 16 },
    model: Mlp = Mlp::with_hidden(config.hidden, 3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [valid.loss],
    sweep: { hidden: [8, 0.5] },
}

fn main() -> std::process::ExitCode {
    Tuned::cli()
}
