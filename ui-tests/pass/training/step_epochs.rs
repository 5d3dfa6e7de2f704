//! `step(every_epochs = n)`: the rate decays once per `n` epochs, however many optimizer steps
//! an epoch has (4 here), as PyTorch's `StepLR` does.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: EpochDecay,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..64), valid: samples(64..96), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    lr_schedule: step(every_epochs = 1, gamma = 0.5),
    epochs: 3,
    metrics: [train.loss, train.lr],
    checkpoint: none,
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-step-epochs-{}", std::process::id()));
    let config = EpochDecayConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..EpochDecay::config()
    };
    let report = EpochDecay::with_config(config, &burn::tensor::Device::flex()).unwrap();
    let lr = report.history.get(Split::Train, "lr").unwrap().values();
    assert_eq!(lr, [0.1, 0.05, 0.025], "one decay per epoch: {lr:?}");
    std::fs::remove_dir_all(dir).unwrap();
}
