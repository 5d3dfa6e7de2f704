//! The names Burn's own examples give their items, beside experiments named after them: a
//! `LineFitModel` of the user's beside `name: LineFit`, Burn's `TrainingConfig` (a
//! `#[derive(Config)]`) beside `name: Training`. Theirs keep the names; ours are
//! `ConfigOf<..>` and `ModelOf<..>`.
use burn::config::Config;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// The user's own model, named as the experiment's wrapper would be.
#[derive(burn::module::Module, Debug)]
pub struct LineFitModel {
    mlp: Mlp,
}

impl LineFitModel {
    fn new(device: &burn::tensor::Device) -> Self {
        Self { mlp: Mlp::new(3, device) }
    }

    fn forward_classification(&self, batch: Batch) -> ClassificationOutput {
        self.mlp.forward_classification(batch)
    }
}

/// Burn's usual training config.
#[derive(Config, Debug)]
pub struct TrainingConfig {
    #[config(default = 2)]
    pub num_epochs: usize,
}

/// A function of the user's named as our step function once was.
fn experiment_step(x: usize) -> usize {
    x
}

training! {
    name: LineFit,
    model: LineFitModel = LineFitModel::new(device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
    metrics: [train.loss, valid.accuracy],
    checkpoint: none,
}

training! {
    name: Training,
    model: Mlp = Mlp::new(experiment_step(3), device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
    checkpoint: none,
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-names-{}", std::process::id()));
    let burn_config = TrainingConfig::new();
    let config: ConfigOf<Training> = ConfigOf::<Training> {
        epochs: burn_config.num_epochs,
        artifacts: dir.to_string_lossy().into_owned(),
        ..Training::config()
    };
    // Printed under its public name.
    assert!(format!("{config:?}").starts_with("TrainingConfig {"), "{config:?}");
    let report: FitReport<ModelOf<Training>> =
        Training::with_config(config, &burn::tensor::Device::flex()).unwrap();
    assert_eq!(report.last_epoch, 2);
    // The user's own model, inside ours.
    let line_fit = LineFitConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..LineFit::config()
    };
    let report: FitReport<LineFitModel_> = LineFit::with_config(line_fit, &burn::tensor::Device::flex()).unwrap();
    let _: &LineFitModel = &report.model.model;
    std::fs::remove_dir_all(dir).unwrap();
}

type LineFitModel_ = ModelOf<LineFit>;
