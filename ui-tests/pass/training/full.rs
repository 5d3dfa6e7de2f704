//! Every key, with a doc comment; trains one short run into a temporary folder.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// All keys at once.
    name: Everything,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..64),
        valid: samples(64..96),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
        workers: 2,
    },
    optimizer: adamw(lr = 1e-2, beta1 = 0.9, beta2 = 0.99, epsilon = 1e-6, weight_decay = 1e-3),
    lr_schedule: warm_up(steps = 2, then = cosine(min = 1e-4)),
    epochs: 2,
    metrics: [
        train.loss, train.lr, valid.loss, valid.accuracy, valid.top_k(2), valid.precision,
        valid.recall, valid.f1, valid.fbeta(0.5), valid.auroc, valid.perplexity,
    ],
    checkpoint: keep_last(2) | best(valid.loss) | every(5),
    early_stopping: patience(3, valid.accuracy, min_delta = 0.5),
    grad_accumulation: 2,
    grad_clip: norm(1.0),
    seed: 42,
    artifacts: "target/ui-artifacts",
    resume: latest,
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-full-{}", std::process::id()));
    let config = EverythingConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..Everything::config()
    };
    assert_eq!(Everything::config().artifacts, "target/ui-artifacts");
    let report = Everything::with_config(config, &burn::tensor::Device::flex()).unwrap();
    assert_eq!(report.history.series().len(), 11);
    // Two epochs with keep_last(2): both checkpoints load, and the best one is known.
    let config = EverythingConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..Everything::config()
    };
    let (best, model) = Everything::load_best_with(&config, &burn::tensor::Device::flex()).unwrap();
    assert!(best == 1 || best == 2);
    let test = Everything::evaluate(&model, samples(96..128), SampleBatcher).unwrap();
    assert_eq!(test.values.len(), 9, "every valid metric");
    std::fs::remove_dir_all(dir).unwrap();
}
