//! A study of the plane fit's learning rate: 30 trials drawn by TPE from `log_uniform(1e-3,
//! 1.0)`, each trained 10 epochs of full-batch gradient descent unless successive halving
//! (ASHA) stops it at epoch 2 or 6.
//!
//! `cargo run -p search` writes `artifacts/plane_fit/study-<hash>/` with `study.md`,
//! `study.csv`, `study.svg` and one `trial-<K>.json` per trial; each trial is its own run in
//! `artifacts/plane_fit/run-<N>`. Killed, the same command resumes the study.

use burn::train::RegressionOutput;
use burn_experiment::prelude::*;
use search::{Batch, Plane, PointBatcher, points};

training! {
    /// The plane fit, its learning rate searched.
    name: PlaneFit,
    model: Plane = Plane::new(device),
    step: |model, batch: Batch| -> RegressionOutput { model.forward_regression(batch) },
    loader: {
        train: points(0..256),
        valid: points(256..320),
        batcher: PointBatcher,
        batch_size: 256,
    },
    optimizer: sgd(lr = 0.01),
    epochs: 10,
    metrics: [train.loss, valid.loss],
    checkpoint: keep_last(1),
    search: {
        space: { lr: log_uniform(1e-3, 1.0) },
        trials: 30,
        objective: min(valid.loss),
        sampler: tpe,
        prune: asha,
        seed: 0,
    },
}

fn main() -> std::process::ExitCode {
    PlaneFit::cli()
}
