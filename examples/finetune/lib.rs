//! Fine-tuning in two experiments. `Pretrain` learns the seed task (3 classes from 4 sine
//! features); its best weights are exported as safetensors. `FineTune` starts from them on a
//! second task, the same features with the classes relabelled (class `c` becomes `c + 1 mod 3`):
//! the first layer's features still serve, the head must be relearnt. It trains the head alone
//! for two epochs (`freeze: [fc1]`, `unfreeze: 3`), then everything, validating a moving average
//! of the weights (`ema`).

use burn::data::dataset::InMemDataset;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, Sample, SampleBatcher, sample, samples};

/// The seed samples `range`, relabelled for the second task.
pub fn relabelled(range: std::ops::Range<usize>) -> InMemDataset<Sample> {
    let items = range
        .map(sample)
        .map(|sample| Sample {
            class: (sample.class + 1) % 3,
            ..sample
        })
        .collect();
    InMemDataset::new(items)
}

training! {
    /// The seed task.
    name: pub Pretrain,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: adam(lr = 1e-2),
    epochs: 20,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(1) | best(valid.accuracy),
}

training! {
    /// The second task, from the pretrained weights.
    name: pub FineTune,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: relabelled(120..216),
        valid: relabelled(216..240),
        test: relabelled(240..300),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 12,
    metrics: [train.loss, valid.loss, valid.accuracy, test.accuracy],
    init_from: "artifacts/pretrained.safetensors",
    freeze: [fc1],
    unfreeze: 3,
    ema: 0.9,
    checkpoint: keep_last(1) | best(valid.accuracy),
}

/// Pretrains, exports the best checkpoint to `<artifacts>/pretrained.safetensors`, and
/// fine-tunes from it; returns both reports.
pub fn pretrain_then_fine_tune(
    artifacts: &str,
    device: &burn::tensor::Device,
    precision: burn_experiment::Precision,
) -> Result<(FitReport<PretrainModel>, FitReport<FineTuneModel>), FitError> {
    let pretrain = PretrainConfig {
        artifacts: artifacts.to_owned(),
        precision,
        ..Pretrain::config()
    };
    let pretrained = Pretrain::with_config(pretrain.clone(), device)?;
    let weights = std::path::Path::new(artifacts).join("pretrained.safetensors");
    Pretrain::export_saved(&pretrain, &weights, device)?;
    let fine_tune = FineTuneConfig {
        artifacts: artifacts.to_owned(),
        precision,
        init_from: Some(weights.to_string_lossy().into_owned()),
        ..FineTune::config()
    };
    let tuned = FineTune::with_config(fine_tune, device)?;
    Ok((pretrained, tuned))
}
