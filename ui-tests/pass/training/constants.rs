//! Constants as values: a hand-written baseline and the experiment share `LR`, `EPOCHS` and
//! `BATCH`. The config's defaults are the constants' values, the run is bit for bit the run of
//! the same values written as literals, and a constant out of its range is refused at start-up
//! by name.
use burn::train::ClassificationOutput;
use dsl_runtime::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

const LR: f64 = 0.1;
const EPOCHS: usize = 2;
const BATCH: usize = 8;
const NO_BATCH: usize = 0;
const NEGATIVE_LR: f64 = -0.1;

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
    epochs: 2,
    seed: 7,
    checkpoint: none,
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
    let _ = std::fs::remove_dir_all(dir);
}
