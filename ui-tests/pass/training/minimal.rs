//! Only the required keys.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Minimal,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 1,
}

pub fn main() {
    let config = Minimal::config();
    assert_eq!((config.epochs, config.batch_size, config.workers), (1, 16, 0));
    assert_eq!(config.shuffle, None);
}
