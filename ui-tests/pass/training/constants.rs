//! Constants as values: a hand-written baseline and the experiment share `LR`, `EPOCHS`,
//! `BATCH` and the arguments of a schedule, early stopping and clipping. The config's defaults are the constants' values, the run is bit for bit the run of
//! the same values written as literals, and a constant out of its range is refused at start-up
//! by name.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

const LR: f64 = 0.1;
const EPOCHS: usize = 2;
const BATCH: usize = 8;
const NO_BATCH: usize = 0;
const NEGATIVE_LR: f64 = -0.1;
const GAMMA: f64 = 0.5;
const PATIENCE: usize = 3;
const CLIP: f64 = 1.0;
const BAD_GAMMA: f64 = 1.5;
const KEEP_NONE: usize = 0;

mod settings {
    pub const MOMENTUM: f64 = 0.5;
    pub const SEED: u64 = 7;
}

training! {
    name: Constants,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: BATCH * 2 },
    optimizer: sgd(lr = LR, momentum = settings::MOMENTUM),
    lr_schedule: step(every_epochs = EPOCHS - 1, gamma = GAMMA),
    early_stopping: patience(PATIENCE, valid.loss, min_delta = CLIP / 1000.0),
    grad_clip: norm(CLIP),
    epochs: EPOCHS,
    seed: settings::SEED,
    checkpoint: none,
}

training! {
    name: Literals,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1, momentum = 0.5),
    lr_schedule: step(every_epochs = 1, gamma = 0.5),
    early_stopping: patience(3, valid.loss, min_delta = 0.001),
    grad_clip: norm(1.0),
    epochs: 2,
    seed: 7,
    checkpoint: none,
}

training! {
    name: BadGamma,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: BATCH },
    optimizer: sgd(lr = LR),
    lr_schedule: exponential(gamma = BAD_GAMMA),
    epochs: EPOCHS,
    checkpoint: none,
}

training! {
    name: KeepNone,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: BATCH },
    optimizer: sgd(lr = LR),
    epochs: EPOCHS,
    checkpoint: keep_last(KEEP_NONE),
}

training! {
    name: NoBatch,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: NO_BATCH },
    optimizer: sgd(lr = LR),
    epochs: EPOCHS,
    checkpoint: none,
}

training! {
    name: NegativeLr,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: BATCH },
    optimizer: sgd(lr = NEGATIVE_LR),
    epochs: EPOCHS,
    checkpoint: none,
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-constants-{}", std::process::id()));
    let artifacts = dir.to_string_lossy().into_owned();
    let config = Constants::config();
    assert_eq!(
        (config.epochs, config.batch_size, config.lr, config.seed),
        (EPOCHS, 16, LR, Some(settings::SEED))
    );
    let device = burn::tensor::Device::flex();
    let constants = Constants::with_config(
        ConstantsConfig {
            artifacts: artifacts.clone(),
            ..config
        },
        &device,
    )
    .unwrap();
    let literals = Literals::with_config(
        LiteralsConfig {
            artifacts: artifacts.clone(),
            ..Literals::config()
        },
        &device,
    )
    .unwrap();
    assert_eq!(Constants::config().lr_schedule, Literals::config().lr_schedule);
    assert_eq!(
        Constants::config().early_stopping,
        Literals::config().early_stopping
    );
    assert_eq!(Constants::config().grad_clip, Literals::config().grad_clip);
    let bits = |losses: Vec<f32>| losses.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let losses = bits(constants.history.train_losses());
    assert_eq!(losses.len(), 4);
    assert_eq!(losses, bits(literals.history.train_losses()));
    // Out of range: refused before training, naming the setting.
    let refused = |result: Result<(), FitError>, setting: &str| {
        let message = result.unwrap_err().to_string();
        assert!(message.contains(setting), "{message}");
    };
    let no_batch = NoBatchConfig {
        artifacts: artifacts.clone(),
        ..NoBatch::config()
    };
    refused(NoBatch::with_config(no_batch, &device).map(drop), "batch_size");
    let negative = NegativeLrConfig {
        artifacts: artifacts.clone(),
        ..NegativeLr::config()
    };
    refused(NegativeLr::with_config(negative, &device).map(drop), "lr");
    let bad_gamma = BadGammaConfig {
        artifacts: artifacts.clone(),
        ..BadGamma::config()
    };
    refused(
        BadGamma::with_config(bad_gamma, &device).map(drop),
        "lr_schedule",
    );
    let keep_none = KeepNoneConfig {
        artifacts: artifacts.clone(),
        ..KeepNone::config()
    };
    refused(
        KeepNone::with_config(keep_none, &device).map(drop),
        "checkpoint",
    );
    let _ = std::fs::remove_dir_all(dir);
}
