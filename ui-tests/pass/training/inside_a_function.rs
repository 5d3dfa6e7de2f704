//! `training!` inside a function body: its items are local to the function, and it trains.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

pub fn main() {
    training! {
        name: Local,
        hparams: { width: usize = 8 },
        model: Mlp = Mlp::with_hidden(config.width, 3, device),
        step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
        loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
        optimizer: sgd(lr = 0.1),
        epochs: 2,
        metrics: [train.loss, valid.accuracy],
        checkpoint: none,
    }
    let dir = std::env::temp_dir().join(format!("dsl-ui-local-{}", std::process::id()));
    let config = LocalConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..Local::config()
    };
    let report = Local::with_config(config, &burn::tensor::Device::flex()).unwrap();
    assert_eq!(report.last_epoch, 2);
    assert_eq!(report.history.train_losses().len(), 4);
    std::fs::remove_dir_all(dir).unwrap();
}
