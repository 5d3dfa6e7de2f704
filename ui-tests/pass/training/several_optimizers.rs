//! Several optimizers with what names a metric by its step: `best(..)` and early stopping on a
//! step's validation loss, a metric of the user's own on one step's output, and a sweep of one
//! optimizer's rate.
use burn_experiment::prelude::*;
use gan::{Gan, GanLoss, SampleBatch, SampleBatcher, ring};

/// The mean of a step's loss, as a metric of the user's own.
fn loss_value(output: &GanLoss) -> (burn::tensor::Tensor<1>, usize) {
    (output.loss.clone(), 1)
}

training! {
    name: TwoPlayers,
    model: Gan = Gan::new(device),
    optimizers: {
        discriminator: sgd(lr = 1e-2) on [discriminator],
        generator: adam(lr = 1e-3) on [generator],
    },
    steps: [
        discriminator: |model, batch: SampleBatch| -> GanLoss { model.discriminator_step(batch) },
        generator(every = 2): |model, batch: SampleBatch| -> GanLoss { model.generator_step(batch) },
    ],
    loader: { train: ring(0..256), valid: ring(256..320), batcher: SampleBatcher, batch_size: 64 },
    epochs: 3,
    metrics: [
        train.discriminator.loss,
        train.generator.loss,
        valid.generator.loss,
        valid.discriminator.metric(own_loss = metric::Mean::lower_is_better(loss_value)),
    ],
    checkpoint: best(valid.generator.loss),
    early_stopping: patience(1, valid.discriminator.own_loss),
    sweep: { optimizers.generator.lr: [1e-3, 2e-3] },
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-two-players-{}", std::process::id()));
    let config = TwoPlayersConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..TwoPlayers::config()
    };
    let device = burn::tensor::Device::flex();
    let report = TwoPlayers::with_config(config.clone(), &device).unwrap();
    let steps = |metric: &str| report.history.get(Split::Train, metric).unwrap().steps.len();
    // 4 batches an epoch: the discriminator on each, the generator on every second.
    let epochs = report.last_epoch;
    assert_eq!(steps("discriminator.loss"), 4 * epochs);
    assert_eq!(steps("generator.loss"), 2 * epochs);
    let own = report.history.get(Split::Valid, "discriminator.own_loss").unwrap();
    let valid = report.history.get(Split::Valid, "generator.loss").unwrap();
    assert_eq!(own.values().len(), epochs);
    assert!(valid.values().iter().all(|v| v.is_finite()));
    let (best, _) = TwoPlayers::load_best_with(&config, &device).unwrap();
    assert_eq!(Some(best), valid.best_epoch());
    // Each optimizer's rate is a sweep axis, by its config path.
    let trials = TwoPlayers::sweep().trials();
    let key = "optimizers.generator.lr".to_owned();
    assert_eq!(
        trials,
        [
            vec![(key.clone(), serde_json::json!(1e-3))],
            vec![(key, serde_json::json!(2e-3))]
        ]
    );
    std::fs::remove_dir_all(dir).unwrap();
}
