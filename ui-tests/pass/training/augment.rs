//! Training items augmented with a per-item RNG: the same run twice, with 0 and 2 workers.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use burn_experiment::rand::RngExt;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Jittered,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..64),
        valid: samples(64..96),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 3,
        augment: |mut sample, rng| {
            sample.x[0] += rng.random_range(-0.1..0.1);
            sample
        },
    },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
}

pub fn main() {
    let device = burn::tensor::Device::flex();
    let run = |workers| {
        let dir = tempfile::tempdir().unwrap();
        let config = JitteredConfig {
            artifacts: dir.path().to_string_lossy().into_owned(),
            workers,
            ..Jittered::config()
        };
        Jittered::with_config(config, &device).unwrap().history.train_losses()
    };
    let bits = |losses: Vec<f32>| losses.iter().map(|l| l.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(run(0)), bits(run(2)));
}
