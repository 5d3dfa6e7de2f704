//! The seed regression task: predict `x0 - 2 x1 + x2 x3` from 4 sine features, 200 samples to
//! train on (six batches of 32 and one of 8) and 64 to validate on, an MLP 4→16→1 trained with
//! Adam, warmed up then annealed.
//!
//! `cargo run -p regression` writes `artifacts/sine_regression/run-<N>/{config.json,metrics.csv}` (a new `run-<N>` per run).

use burn::train::RegressionOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// Regression on the seed features.
    name: SineRegression,
    model: Mlp = Mlp::new(1, device),
    step: |model, batch: Batch| -> RegressionOutput { model.forward_regression(batch) },
    loader: {
        train: samples(0..200),
        valid: samples(200..264),
        batcher: SampleBatcher,
        batch_size: 32,
        shuffle: 7,
        workers: 2,
    },
    optimizer: adam(lr = 1e-2),
    lr_schedule: warm_up(steps = 7, then = cosine(min = 1e-3)),
    epochs: 20,
    metrics: [train.loss, train.lr, valid.loss],
    early_stopping: patience(3, valid.loss, min_delta = 1e-3),
    grad_clip: norm(5.0),
}

fn main() -> std::process::ExitCode {
    SineRegression::cli()
}
