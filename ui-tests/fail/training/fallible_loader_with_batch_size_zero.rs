use burn::data::dataset::InMemDataset;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, Sample, SampleBatcher, samples};

/// A loader as most are: reading a file, it can fail, and the experiment says `?`.
fn load(range: std::ops::Range<usize>) -> Result<InMemDataset<Sample>, FitError> {
    Ok(samples(range))
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: load(0..96)?, valid: load(96..120)?, batcher: SampleBatcher, batch_size: 0 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
