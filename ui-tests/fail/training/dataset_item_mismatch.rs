use burn::data::dataset::InMemDataset;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// Items of another kind than the seed batcher takes.
#[derive(Clone, Debug)]
struct Row {
    _features: [f32; 4],
}

fn rows() -> InMemDataset<Row> {
    InMemDataset::new(vec![Row { _features: [0.0; 4] }; 8])
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: rows(), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
