//! A resumable experiment. Each epoch ends with a checkpoint in
//! `artifacts/resumable/run-1/checkpoint/`; kill the training process at any moment and start it
//! again: it continues after the newest intact checkpoint (after Ctrl-C, from the step it
//! finished and saved) and reaches the same weights as an uninterrupted run.
//!
//! - `cargo run -p checkpointing --bin train` trains (all of `<Name>::cli()`'s flags apply);
//! - `cargo run -p checkpointing --bin evaluate` loads the best epoch by validation loss and
//!   measures it on a held-out test set.

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use burn_experiment::rand::RngExt;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// The seed classification task, shuffled, on Adam, resumable.
    name: pub Resumable,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 40,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    resume: latest,
}

training! {
    /// [`Resumable`] with random noise on every training feature, drawn per item from the
    /// run's seed, the epoch and the item's position: a resumed run draws the same noise.
    name: pub Jittered,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
        augment: |mut sample, rng| {
            for x in &mut sample.x {
                *x += rng.random_range(-0.1..0.1);
            }
            sample
        },
    },
    optimizer: adam(lr = 1e-2),
    epochs: 40,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    resume: latest,
}
