//! [`checkpointing::Resumable`]'s task with a test split: after training, the best checkpoint
//! is measured on samples 120..180 (`test.*` rows in `metrics.csv`, `metrics.test` in
//! `config.json`). The MLflow tests (`tests/mlflow.rs`) track it.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// The seed classification task, resumable, with a held-out test split.
    name: Tested,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        test: samples(120..180),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy, test.loss, test.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    resume: latest,
}

fn main() -> std::process::ExitCode {
    Tested::cli()
}
