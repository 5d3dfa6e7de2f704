//! The seed classification task: 3 classes from 4 sine features, 96 samples to train on and 24
//! to validate on, an MLP 4→16→3 trained with SGD for 3 epochs.
//!
//! `cargo run -p classification` prints one line per epoch and a summary table, and writes
//! `artifacts/three_class/run-<N>/{config.json,metrics.csv}` (a new `run-<N>` per run).

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// The seed task: 3 classes from 4 sine features.
    name: ThreeClass,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
}

fn main() -> std::process::ExitCode {
    ThreeClass::cli()
}
