//! `engine: burn` and `strategy: multi`: the same experiment handed to Burn's
//! `SupervisedTraining`, checked against our loop and a hand-written loop.

use crate::common::*;
use burn::optim::{GradientsAccumulator, GradientsParams, SgdConfig};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

training! {
    /// The seed task on Burn's engine, one device.
    name: OnBurn,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    engine: burn,
}

training! {
    /// The seed task on two CPU devices with Burn's `MultiDevice` strategy.
    name: TwoDevices,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    strategy: multi,
    devices: 2,
}

fn quiet(o: &mut FitOptions) {
    o.quiet = true;
}

#[test]
fn engine_burn_takes_its_settings_from_the_run_options_not_the_macro() {
    let dir = tempfile::tempdir().unwrap();
    // As `--set checkpoint=..` would: keep only the newest epoch, where the macro keeps two.
    let config = OnBurnConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        checkpoint: Some(vec![burn_experiment::checkpoint::Policy::KeepLast { n: 1 }]),
        ..OnBurn::config()
    };
    let report = OnBurn::with_options(config.clone(), &device(), |o| {
        o.quiet = true;
        o.limit_train_batches = Some(2);
    })
    .unwrap();
    let checkpoints = dir.path().join("on_burn/run-1/checkpoint");
    assert!(checkpoints.join("model-3.bpk").exists());
    assert!(
        !checkpoints.join("model-2.bpk").exists(),
        "the macro's keep_last(2) was used"
    );
    assert_eq!(
        report.history.train_losses().len(),
        3 * 2,
        "two batches per epoch"
    );

    // A fast dev run leaves nothing behind, on Burn's engine too.
    let empty = tempfile::tempdir().unwrap();
    OnBurn::with_options(
        OnBurnConfig {
            artifacts: empty.path().to_string_lossy().into_owned(),
            ..config
        },
        &device(),
        |o| {
            *o = std::mem::take(o).fast_dev_run();
            o.quiet = true;
        },
    )
    .unwrap();
    assert!(
        std::fs::read_dir(empty.path()).unwrap().next().is_none(),
        "files were written"
    );
}

#[test]
fn engine_burn_on_one_device_is_bit_identical_to_our_loop() {
    let dir = tempfile::tempdir().unwrap();
    let config = OnBurnConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..OnBurn::config()
    };
    let burn_run = OnBurn::with_options(config.clone(), &device(), quiet).unwrap();
    let ours = OnBurn::with_options(
        OnBurnConfig {
            engine: burn_experiment::fit::engine::Engine::Ours,
            artifacts: dir.path().join("ours").to_string_lossy().into_owned(),
            ..config
        },
        &device(),
        quiet,
    )
    .unwrap();
    let losses = burn_run.history.train_losses();
    assert_eq!(
        losses.len(),
        18,
        "one loss per step from Burn's metric logs"
    );
    assert_bit_identical(&losses, &ours.history.train_losses());
    assert_eq!(burn_run.model.model.weights(), ours.model.model.weights());
    // Burn's validation accuracy is sample-weighted like ours.
    assert_eq!(
        burn_run
            .history
            .get(Split::Valid, "accuracy")
            .unwrap()
            .values(),
        ours.history.get(Split::Valid, "accuracy").unwrap().values()
    );
    // Burn's checkpointer kept epochs 2 and 3 under keep_last(2) | best(valid.loss).
    let checkpoints = dir.path().join("on_burn/run-1/checkpoint");
    assert!(checkpoints.join("model-3.bpk").exists() && checkpoints.join("model-2.bpk").exists());
    assert!(!checkpoints.join("model-1.bpk").exists());
}

/// Two devices, each on its half of the data, gradients summed: a single device that sums
/// the gradients of batch `i` of each half computes the same update.
fn combined_batches_by_hand() -> Vec<u32> {
    // The CPU, as the experiment's two devices are, whatever `DSL_TEST_DEVICE` names.
    let device = burn::tensor::Device::flex().autodiff();
    let mut model = Mlp::new(3, &device);
    let mut optim = SgdConfig::new().init();
    let batch = |range: std::ops::Range<usize>| {
        use burn::data::dataloader::batcher::Batcher;
        SampleBatcher.batch(range.map(sample).collect(), &device)
    };
    for _ in 0..3 {
        for i in 0..3 {
            let mut sum = GradientsAccumulator::<Mlp>::new();
            for start in [16 * i, 48 + 16 * i] {
                let out = model.forward_classification(batch(start..start + 16));
                sum.accumulate(
                    &model,
                    GradientsParams::from_grads(out.loss.backward(), &model),
                );
            }
            model = optim.step(0.1, model, sum.grads());
        }
    }
    model.weights()
}

#[test]
fn two_cpu_devices_with_multi_match_one_device_on_the_combined_batch() {
    let dir = tempfile::tempdir().unwrap();
    let config = TwoDevicesConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..TwoDevices::config()
    };
    let report = TwoDevices::with_options(config, &burn::tensor::Device::flex(), quiet).unwrap();
    let multi: Vec<f32> = report
        .model
        .model
        .weights()
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let single: Vec<f32> = combined_batches_by_hand()
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let worst = multi
        .iter()
        .zip(&single)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    println!("max |multi - single| over the final weights: {worst:e}");
    assert!(worst <= 1e-6, "{worst}");
    // Training ran: metrics for every epoch, checkpoints on disk.
    assert_eq!(report.last_epoch, 3);
    assert_eq!(
        report
            .history
            .get(Split::Valid, "accuracy")
            .unwrap()
            .epochs
            .len(),
        3
    );
    assert!(
        dir.path()
            .join("two_devices/run-1/checkpoint/model-3.bpk")
            .exists()
    );
}

#[test]
fn ddp_on_cpu_devices_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = TwoDevicesConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        strategy: burn_experiment::fit::engine::Strategy::Ddp,
        ..TwoDevices::config()
    };
    let err = TwoDevices::with_options(config, &burn::tensor::Device::flex(), quiet)
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("CUDA only; on the CPU use `multi`"),
        "{err}"
    );
}

/// Settings of our loop set from the command line (`--set ema=0.9`, `--init-from ..`) on a run
/// that goes to Burn's engine are refused before training, naming the setting.
#[test]
fn engine_burn_refuses_settings_of_our_loop() {
    let dir = tempfile::tempdir().unwrap();
    let config = OnBurnConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ema: Some(0.9),
        ..OnBurn::config()
    };
    let Err(err) = OnBurn::with_options(config.clone(), &device(), quiet) else {
        panic!("Burn's engine trained with a moving average it does not keep");
    };
    assert!(
        err.to_string().starts_with("invalid fit option `ema`"),
        "{err}"
    );
    let config = OnBurnConfig {
        ema: None,
        freeze: vec!["fc1".into()],
        ..config
    };
    let Err(err) = OnBurn::with_options(config, &device(), quiet) else {
        panic!("Burn's engine trained with frozen layers it does not freeze");
    };
    assert!(
        err.to_string().starts_with("invalid fit option `freeze`"),
        "{err}"
    );
    assert!(
        !dir.path().join("on_burn").exists(),
        "refused before anything was written"
    );
}
