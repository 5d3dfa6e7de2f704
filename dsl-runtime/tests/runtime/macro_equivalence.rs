//! The `training!` expansion of the seed classification task against the hand-written Burn loop
//! of `seed_classification.rs`: same data, order and initial weights, bit-identical losses.

use crate::common::*;
use burn::lr_scheduler::composed::ComposedLrSchedulerConfig;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::lr_scheduler::linear::LinearLrSchedulerConfig;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::lr_scheduler::noam::NoamLrSchedulerConfig;
use burn::optim::{AdamConfig, SgdConfig};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

training! {
    /// The seed task exactly as the runtime tests run it by hand.
    name: ThreeClass,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

training! {
    /// Same task and model type, shuffled, on Adam, with prefetching workers.
    name: Shuffled,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
        workers: 2,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 3,
    metrics: [train.loss, valid.accuracy],
}

fn setup(shuffle: Option<u64>) -> HandSetup {
    HandSetup {
        train: 0..96,
        valid: 96..120,
        batch_size: 16,
        epochs: 3,
        shuffle,
        grad_accumulation: 1,
        regression: false,
    }
}

#[test]
fn the_macro_experiment_is_bit_identical_to_the_hand_loop() {
    let dir = tempfile::tempdir().unwrap();
    let hand = hand_loop(&setup(None), mlp(3), SgdConfig::new().init(), 0.1.into());
    let config = ThreeClassConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..ThreeClass::config()
    };
    let report = ThreeClass::with_config(config, &run_device()).unwrap();
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(
        report
            .history
            .get(Split::Valid, "accuracy")
            .unwrap()
            .values(),
        hand.valid_accuracy
    );
    assert_eq!(report.model.model.weights(), hand.weights);
    assert_eq!(report.run_dir, dir.path().join("three_class/run-1"));

    // The config written with the run holds the macro's values.
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.run_dir.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(saved["hyperparameters"]["lr"], 0.1);
    assert_eq!(saved["hyperparameters"]["optimizer"]["kind"], "sgd");
}

#[test]
fn a_second_experiment_on_the_same_model_type_shuffles_like_the_hand_loop() {
    let dir = tempfile::tempdir().unwrap();
    let hand = hand_loop(
        &setup(Some(7)),
        mlp(3),
        AdamConfig::new().init(),
        1e-2.into(),
    );
    let config = ShuffledConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..Shuffled::config()
    };
    assert_eq!(config.workers, 2);
    let report = Shuffled::with_config(config, &device()).unwrap();
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(report.model.model.weights(), hand.weights);
}

#[test]
fn the_config_is_a_serde_struct_with_the_macro_values_as_defaults() {
    let config = ThreeClass::config();
    assert_eq!((config.epochs, config.batch_size, config.lr), (3, 16, 0.1));
    let json = serde_json::to_string(&config).unwrap();
    let back: ThreeClassConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, config);
    // Missing fields take the macro's values; unknown ones are refused.
    let partial: ThreeClassConfig = serde_json::from_str(r#"{"epochs": 5}"#).unwrap();
    assert_eq!(
        partial,
        ThreeClassConfig {
            epochs: 5,
            ..config
        }
    );
    let err = serde_json::from_str::<ThreeClassConfig>(r#"{"epoch": 5}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field `epoch`"), "{err}");
}

/// One epoch of the seed task on optimizer `$optimizer` as `training!` names it.
macro_rules! on_optimizer {
    ($name:ident, $optimizer:ident) => {
        training! {
            name: $name,
            model: Mlp = Mlp::new(3, device),
            step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
            loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
            optimizer: $optimizer(lr = 1e-2),
            epochs: 1,
        }
    };
}

on_optimizer!(OnRmsProp, rmsprop);
on_optimizer!(OnAdaGrad, adagrad);
on_optimizer!(OnLion, lion);
on_optimizer!(OnLamb, lamb);

/// Trains `$experiment` into `$dir`: its losses and final weights.
macro_rules! outcome {
    ($experiment:ident, $config:ident, $dir:expr) => {{
        let config = $config {
            artifacts: $dir.to_string_lossy().into_owned(),
            ..$experiment::config()
        };
        let report = $experiment::with_config(config, &run_device()).unwrap();
        (report.history.train_losses(), report.model.model.weights())
    }};
}

#[test]
fn each_named_optimizer_is_burns_with_burns_defaults() {
    use burn::optim::{AdaGradConfig, LambConfig, LionConfig, RmsPropConfig};
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        (
            outcome!(OnRmsProp, OnRmsPropConfig, dir.path()),
            RmsPropConfig::new().init(),
        ),
        (
            outcome!(OnAdaGrad, OnAdaGradConfig, dir.path()),
            AdaGradConfig::new().init(),
        ),
        (
            outcome!(OnLion, OnLionConfig, dir.path()),
            LionConfig::new().init(),
        ),
        (
            outcome!(OnLamb, OnLambConfig, dir.path()),
            LambConfig::new().init(),
        ),
    ];
    let setup = HandSetup {
        epochs: 1,
        ..setup(None)
    };
    let mut finals = Vec::new();
    for ((losses, weights), optimizer) in runs {
        let hand = hand_loop(&setup, mlp(3), optimizer, 1e-2.into());
        assert_bit_identical(&losses, &hand.losses);
        assert_eq!(weights, hand.weights);
        finals.push(hand.weights);
    }
    finals.dedup();
    assert_eq!(
        finals.len(),
        4,
        "four different optimizers, four different models"
    );
}

/// The schedule of Burn's mnist and custom-learning-strategy examples, as they write it (shorter
/// periods for an 18-step run): three of Burn's schedulers multiplied.
fn mnist_schedule() -> ComposedLrSchedulerConfig {
    ComposedLrSchedulerConfig::new()
        .cosine(CosineAnnealingLrSchedulerConfig::new(1.0, 12))
        .linear(LinearLrSchedulerConfig::new(1e-8, 1.0, 12))
        .linear(LinearLrSchedulerConfig::new(1e-2, 1e-6, 18))
}

training! {
    /// Burn's scheduler as the schedule: it sets the rate, so the optimizer has no `lr`.
    name: BurnScheduled,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: adam(),
    lr_schedule: mnist_schedule(),
    epochs: 3,
    metrics: [train.loss, train.lr, valid.loss],
    checkpoint: keep_last(3),
}

training! {
    /// Noam, as Burn's text-classification and text-generation examples schedule.
    name: NoamScheduled,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: adam(beta_2 = 0.98),
    lr_schedule: NoamLrSchedulerConfig::new(0.5).with_warmup_steps(5).with_model_size(16),
    epochs: 3,
}

/// The rates one of Burn's schedulers gives over `steps` steps, as its own `step()` does.
fn rates(mut scheduler: ModuleLrScheduler, steps: usize) -> Vec<f64> {
    (0..steps).map(|_| scheduler.step().base()).collect()
}

/// The `lr` rows of a run's `metrics.csv`, in step order.
fn logged_rates(run_dir: &std::path::Path) -> Vec<f64> {
    let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    csv.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields[2] == "train" && fields[3] == "lr" && !fields[0].is_empty())
                .then(|| fields[4].parse().unwrap())
        })
        .collect()
}

#[test]
fn burns_own_schedulers_are_the_schedule_step_for_step() {
    let dir = tempfile::tempdir().unwrap();
    let composed = || mnist_schedule().init().unwrap();
    let hand = hand_loop(&setup(None), mlp(3), AdamConfig::new().init(), composed());
    let config = BurnScheduledConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..BurnScheduled::config()
    };
    let report = BurnScheduled::with_config(config.clone(), &run_device()).unwrap();
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(report.model.model.weights(), hand.weights);
    assert_eq!(logged_rates(&report.run_dir), rates(composed(), 18));
    // The rate moves: the same run at a constant rate differs.
    let constant = hand_loop(&setup(None), mlp(3), AdamConfig::new().init(), 1e-2.into());
    assert_ne!(constant.weights, hand.weights);
    // The config holds Burn's scheduler and no `lr`.
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.run_dir.join("config.json")).unwrap())
            .unwrap();
    let hyperparameters = &saved["hyperparameters"];
    assert_eq!(hyperparameters["lr_schedule"]["kind"], "burn");
    assert!(hyperparameters.get("lr").is_none(), "{hyperparameters}");

    // Resumed from its epoch-2 checkpoint, the scheduler goes on where it was.
    let resumed_dir = tempfile::tempdir().unwrap();
    let artifacts = resumed_dir.path().to_string_lossy().into_owned();
    BurnScheduled::with_config(
        BurnScheduledConfig {
            artifacts: artifacts.clone(),
            epochs: 2,
            ..config.clone()
        },
        &run_device(),
    )
    .unwrap();
    let resumed = BurnScheduled::with_config(
        BurnScheduledConfig {
            artifacts,
            resume: Some(burn_experiment::checkpoint::Resume::Latest),
            ..config
        },
        &run_device(),
    )
    .unwrap();
    assert_eq!(resumed.model.model.weights(), hand.weights);
    assert_eq!(logged_rates(&resumed.run_dir), rates(composed(), 18));
}

#[test]
fn noam_is_burns_noam() {
    let dir = tempfile::tempdir().unwrap();
    let noam = NoamLrSchedulerConfig::new(0.5)
        .with_warmup_steps(5)
        .with_model_size(16);
    let hand = hand_loop(
        &setup(None),
        mlp(3),
        AdamConfig::new().with_beta_2(0.98).init(),
        noam.init().unwrap(),
    );
    let config = NoamScheduledConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..NoamScheduled::config()
    };
    let report = NoamScheduled::with_config(config, &run_device()).unwrap();
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(report.model.model.weights(), hand.weights);
}

/// A schedule that needs a base rate, given to an experiment whose rate Burn's scheduler sets
/// (through `--config`), is refused before training, naming the key.
#[test]
fn a_named_schedule_without_a_base_rate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = BurnScheduledConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        lr_schedule: burn_experiment::config::spec::Schedule::Cosine { min_lr: 0.0 },
        ..BurnScheduled::config()
    };
    let err = BurnScheduled::with_config(config, &run_device())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("lr_schedule") && err.contains("no `lr`"),
        "{err}"
    );
}
