//! Fine-tuning keys: weights to start from, a frozen layer until epoch 2, a moving average, a
//! group at its own rate, another optimizer.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Pretrain,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..64), valid: samples(64..96), batcher: SampleBatcher, batch_size: 16 },
    optimizer: rmsprop(lr = 1e-2, momentum = 0.5),
    lr_schedule: plateau(valid.loss, factor = 0.5, patience = 1),
    epochs: 1,
}

training! {
    name: FineTune,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(64..128), valid: samples(128..160), batcher: SampleBatcher, batch_size: 16 },
    optimizer: lamb(lr = 1e-3, weight_decay = 0.01),
    epochs: 3,
    init_from: "pretrained.safetensors",
    freeze: [fc1],
    unfreeze: 2,
    ema: 0.9,
    gradient_checkpointing: true,
    groups: { fc2: lr(5e-4) },
    checkpoint: keep_last(3),
}

training! {
    name: Adapted,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(64..128), valid: samples(128..160), batcher: SampleBatcher, batch_size: 16 },
    optimizer: adam(lr = 1e-2),
    epochs: 2,
    lora: { rank: 2, alpha: 4, on: [fc1, fc2] },
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-fine-tune-{}", std::process::id()));
    let artifacts = dir.to_string_lossy().into_owned();
    let device = burn::tensor::Device::flex();
    let pretrained = Pretrain::with_config(
        PretrainConfig {
            artifacts: artifacts.clone(),
            ..Pretrain::config()
        },
        &device,
    )
    .unwrap();
    let file = dir.join("pretrained.safetensors");
    burn_experiment::model::weights::export_safetensors(&pretrained.model, &file).unwrap();

    let config = FineTune::config();
    assert_eq!(config.init_from.as_deref(), Some("pretrained.safetensors"));
    assert_eq!((config.freeze.clone(), config.unfreeze), (vec!["fc1".to_owned()], Some(2)));
    assert_eq!(config.groups[0].lr, 5e-4);
    let config = FineTuneConfig {
        artifacts,
        init_from: Some(file.to_string_lossy().into_owned()),
        ..config
    };
    let tuned = FineTune::with_config(config.clone(), &device).unwrap();
    let averaged = tuned.averaged.as_ref().expect("ema: 0.9 keeps an average");
    let (_, best) = FineTune::load_best_with(&config, &device).unwrap();
    assert_eq!(best.model.weights(), averaged.model.weights(), "checkpoints load as the average");
    let first = FineTune::load_with(&config, 1, &device).unwrap();
    let fc1 = |weights: Vec<u32>| weights[..80].to_vec();
    assert_eq!(fc1(first.model.weights()), fc1(pretrained.model.model.weights()));
    assert_ne!(fc1(tuned.model.model.weights()), fc1(first.model.weights()));

    let adapted = Adapted::with_config(
        AdaptedConfig {
            artifacts: dir.to_string_lossy().into_owned(),
            ..Adapted::config()
        },
        &device,
    )
    .unwrap();
    let fc2_bias = |w: Vec<u32>| w[w.len() - 3..].to_vec();
    assert_eq!(
        fc2_bias(adapted.model.model.weights()),
        fc2_bias(Mlp::new(3, &device).weights()),
        "LoRA freezes every base parameter"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
