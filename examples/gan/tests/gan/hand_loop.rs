//! The declared GAN against the loop a Burn user writes by hand with two optimizers: same data,
//! order and initial weights, bit-identical per-step losses of both steps and final weights.
//! The generator step's gradients reach the discriminator too; only its own parameters may
//! move, or the discriminator's weights and every later loss would differ.

use burn::optim::{AdamConfig, RmsPropConfig};
use burn::tensor::Device;
use burn_experiment::prelude::*;
use gan::hand::{Run, hand_loop};
use gan::{
    Gan, GanLoss, RingCritic, RingCriticConfig, RingGan, RingGanConfig, SampleBatch, SampleBatcher,
    ring,
};

/// A declared run's losses of steps `first` and `second`, and the weights of `model`.
fn declared(history: &History, model: &Gan, first: &str, second: &str) -> Run {
    let bits = |step: &str| -> Vec<u32> {
        let series = history.get(Split::Train, &format!("{step}.loss")).unwrap();
        series.steps.iter().map(|&v| (v as f32).to_bits()).collect()
    };
    Run {
        first: bits(first),
        second: bits(second),
        generator: model.generator.weights(),
        discriminator: model.discriminator.weights(),
        valid: vec![],
    }
}

#[test]
fn the_declared_gan_is_bit_identical_to_the_hand_loop_with_two_optimizers() {
    let dir = tempfile::tempdir().unwrap();
    let config = RingGanConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        epochs: 2,
        ..RingGan::config()
    };
    let report = RingGan::with_config(config, &Device::flex()).unwrap();
    let adam = || AdamConfig::new().with_beta_1(0.5).init();
    let hand = hand_loop(
        (0..2048, None, 2, |_, _| true),
        (adam(), 2e-3),
        (adam(), 2e-3),
        Gan::discriminator_step,
        Gan::generator_step,
        |model| model,
    );
    assert_eq!(hand.first.len(), 64, "32 batches in each of 2 epochs");
    assert_eq!(hand.second.len(), 64);
    let run = declared(
        &report.history,
        &report.model.model,
        "discriminator",
        "generator",
    );
    assert_eq!(run, hand);
    // Both players moved from their initial weights.
    let start = Gan::new(&Device::flex());
    assert_ne!(run.generator, start.generator.weights());
    assert_ne!(run.discriminator, start.discriminator.weights());
}

#[test]
fn a_critic_stepped_five_times_per_generator_step_is_bit_identical_to_its_hand_loop() {
    let dir = tempfile::tempdir().unwrap();
    let config = RingCriticConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..RingCritic::config()
    };
    let report = RingCritic::with_config(config, &Device::flex()).unwrap();
    let rmsprop = || RmsPropConfig::new().init();
    let hand = hand_loop(
        (0..1024, None, 2, |step, _| step % 5 == 0),
        (rmsprop(), 5e-4),
        (rmsprop(), 5e-4),
        Gan::critic_step,
        Gan::wasserstein_generator_step,
        |model| model,
    );
    assert_eq!(hand.first.len(), 32, "16 batches in each of 2 epochs");
    assert_eq!(hand.second.len(), 6, "steps 5, 10, .., 30");
    assert_eq!(
        declared(&report.history, &report.model.model, "critic", "generator"),
        hand
    );
}

training! {
    /// Burn's wgan order: the generator at `iteration % 5 == 0` of each epoch, its batches 1, 6,
    /// 11 and 16 of 16, where `every = 5` would run it at global steps 5, 10, .., 30.
    name: RingCriticBurnOrder,
    model: Gan = Gan::new(device),
    optimizers: {
        critic: rmsprop(lr = 5e-4) on [discriminator],
        generator: rmsprop(lr = 5e-4) on [generator],
    },
    steps: [
        critic: |model, batch: SampleBatch| -> GanLoss { model.critic_step(batch) },
        generator(every_in_epoch = 5, first = 1): |model, batch: SampleBatch| -> GanLoss { model.wasserstein_generator_step(batch) },
    ],
    loader: { train: ring(0..1024), valid: ring(2048..2304), batcher: SampleBatcher, batch_size: 64, shuffle: 3 },
    epochs: 2,
    metrics: [train.critic.loss, train.generator.loss],
    checkpoint: keep_last(1),
}

#[test]
fn a_generator_counted_within_each_epoch_from_its_first_batch_is_burns_wgan_order() {
    let dir = tempfile::tempdir().unwrap();
    let config = RingCriticBurnOrderConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..RingCriticBurnOrder::config()
    };
    let report = RingCriticBurnOrder::with_config(config.clone(), &Device::flex()).unwrap();
    let rmsprop = || RmsPropConfig::new().init();
    let hand = hand_loop(
        (0..1024, None, 2, |_, iteration| iteration % 5 == 0),
        (rmsprop(), 5e-4),
        (rmsprop(), 5e-4),
        Gan::critic_step,
        Gan::wasserstein_generator_step,
        |model| model,
    );
    assert_eq!(
        hand.second.len(),
        8,
        "batches 1, 6, 11, 16 of each of 2 epochs"
    );
    let run = declared(&report.history, &report.model.model, "critic", "generator");
    assert_eq!(run, hand);
    // The generator's rows sit at those batches: global steps 1, 6, 11, 16, 17, 22, 27, 32.
    let steps: Vec<usize> = std::fs::read_to_string(report.run_dir.join("metrics.csv"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(",train,generator.loss,") && !l.starts_with(','))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(steps, [1, 6, 11, 16, 17, 22, 27, 32]);
    // Resumed from its epoch-1 checkpoint, the count starts again at the epoch's first batch.
    let resumed_dir = tempfile::tempdir().unwrap();
    let artifacts = resumed_dir.path().to_string_lossy().into_owned();
    let part = |epochs: usize, resume| RingCriticBurnOrderConfig {
        artifacts: artifacts.clone(),
        epochs,
        resume,
        ..config.clone()
    };
    RingCriticBurnOrder::with_config(part(1, None), &Device::flex()).unwrap();
    let resumed = RingCriticBurnOrder::with_config(
        part(2, Some(burn_experiment::checkpoint::Resume::Latest)),
        &Device::flex(),
    )
    .unwrap();
    assert_eq!(
        declared(
            &resumed.history,
            &resumed.model.model,
            "critic",
            "generator"
        ),
        hand
    );
}

training! {
    /// Burn's wgan set-up: the critic's weights clipped after each of its steps, the generator
    /// at `iteration % 5 == 0` of each epoch.
    name: RingWgan,
    model: Gan = Gan::new(device),
    optimizers: {
        critic: rmsprop(lr = 5e-4) on [discriminator],
        generator: rmsprop(lr = 5e-4) on [generator],
    },
    steps: [
        critic: |model, batch: SampleBatch| -> GanLoss { model.critic_step(batch) },
        generator(every_in_epoch = 5, first = 1): |model, batch: SampleBatch| -> GanLoss { model.wasserstein_generator_step(batch) },
    ],
    after_step: { critic: |model| model.clip_critic(CLIP) },
    at_epoch_end: |model, at| std::fs::write(
        at.run_dir.join(format!("samples-{}.txt", at.epoch)),
        format!("{:?}", model.generate(0..4, &Device::flex())),
    ),
    loader: { train: ring(0..1024), valid: ring(2048..2304), batcher: SampleBatcher, batch_size: 64, shuffle: 3 },
    epochs: 2,
    metrics: [train.critic.loss, train.generator.loss],
    checkpoint: keep_last(1),
}

/// Burn's wgan default (`clip_value`) is 0.01; a larger bound still clips this small net's
/// weights from the first step.
const CLIP: f32 = 0.05;

#[test]
fn the_critic_clipped_after_each_of_its_steps_is_burns_wgan() {
    let dir = tempfile::tempdir().unwrap();
    let config = RingWganConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..RingWgan::config()
    };
    let report = RingWgan::with_config(config.clone(), &Device::flex()).unwrap();
    let rmsprop = || RmsPropConfig::new().init();
    let wgan = |clip: fn(Gan) -> Gan| {
        hand_loop(
            (0..1024, None, 2, |_, iteration| iteration % 5 == 0),
            (rmsprop(), 5e-4),
            (rmsprop(), 5e-4),
            Gan::critic_step,
            Gan::wasserstein_generator_step,
            clip,
        )
    };
    let hand = wgan(|model| model.clip_critic(CLIP));
    let run = declared(&report.history, &report.model.model, "critic", "generator");
    assert_eq!(run, hand);
    // The hook clipped: every critic weight lies within the bound, and the run differs from
    // the unclipped one.
    let critic = report.model.model.discriminator.weights();
    assert!(critic.iter().all(|&w| f32::from_bits(w).abs() <= CLIP));
    assert_ne!(run, wgan(|model| model));
    // The generator's weights are not clipped (the hook is the critic's).
    let generator = &report.model.model.generator.weights();
    assert!(generator.iter().any(|&w| f32::from_bits(w).abs() > CLIP));
    // Each epoch's end wrote its samples, those of the last epoch from the final weights.
    let last = report.model.model.generate(0..4, &Device::flex());
    let written = std::fs::read_to_string(report.run_dir.join("samples-2.txt")).unwrap();
    assert_eq!(written, format!("{last:?}"));
    assert!(report.run_dir.join("samples-1.txt").exists());
    // Resumed from its epoch-1 checkpoint: the same weights, nothing clipped twice.
    let resumed_dir = tempfile::tempdir().unwrap();
    let part = |epochs: usize, resume| RingWganConfig {
        artifacts: resumed_dir.path().to_string_lossy().into_owned(),
        epochs,
        resume,
        ..config.clone()
    };
    RingWgan::with_config(part(1, None), &Device::flex()).unwrap();
    let resumed = RingWgan::with_config(
        part(2, Some(burn_experiment::checkpoint::Resume::Latest)),
        &Device::flex(),
    )
    .unwrap();
    assert_eq!(
        declared(
            &resumed.history,
            &resumed.model.model,
            "critic",
            "generator"
        ),
        hand
    );
}

#[test]
fn the_moving_average_of_the_generator_leaves_the_discriminator_as_trained() {
    let run = |ema_on: Vec<String>| {
        let dir = tempfile::tempdir().unwrap();
        let config = RingGanConfig {
            artifacts: dir.path().to_string_lossy().into_owned(),
            epochs: 1,
            ema_on,
            ..RingGan::config()
        };
        RingGan::with_config(config, &Device::flex()).unwrap()
    };
    let generator_only = run(vec!["generator".to_owned()]);
    let whole = run(Vec::new());
    let averaged = &generator_only.averaged.as_ref().unwrap().model;
    let trained = &generator_only.model.model;
    // Outside `on [generator]`, the average is the trained weights themselves.
    assert_eq!(
        averaged.discriminator.weights(),
        trained.discriminator.weights()
    );
    assert_ne!(averaged.generator.weights(), trained.generator.weights());
    // The generator's average is the one a whole-model average keeps for it, bit for bit.
    let whole_average = &whole.averaged.as_ref().unwrap().model;
    assert_eq!(
        averaged.generator.weights(),
        whole_average.generator.weights()
    );
    assert_ne!(
        whole_average.discriminator.weights(),
        trained.discriminator.weights()
    );
    // Training itself is the same either way.
    assert_eq!(
        trained.generator.weights(),
        whole.model.model.generator.weights()
    );
}

/// Both players train in bf16 and f16: every step's loss is a 16-bit number (bf16's have 8
/// bits of mantissa), no step is skipped on these data, the weights stay f32, and the last
/// validation losses land within 5 % of the f32 run's.
#[test]
fn both_players_train_in_16_bits_with_f32_weights() {
    let run = |precision: burn_experiment::Precision| {
        let dir = tempfile::tempdir().unwrap();
        let config = RingGanConfig {
            artifacts: dir.path().to_string_lossy().into_owned(),
            epochs: 1,
            precision,
            ..RingGan::config()
        };
        RingGan::with_config(config, &Device::flex()).unwrap()
    };
    let last_valid = |report: &FitReport<_>, step: &str| -> f64 {
        let series = report
            .history
            .get(Split::Valid, &format!("{step}.loss"))
            .unwrap();
        *series.values().last().unwrap()
    };
    let f32_run = run(burn_experiment::Precision::F32);
    for precision in [
        burn_experiment::Precision::Bf16,
        burn_experiment::Precision::F16,
    ] {
        let report = run(precision);
        for step in ["discriminator", "generator"] {
            let losses = &report
                .history
                .get(Split::Train, &format!("{step}.loss"))
                .unwrap()
                .steps;
            assert_eq!(losses.len(), 32, "{precision:?} {step}: no step skipped");
            assert!(losses.iter().all(|v| v.is_finite()), "{precision:?} {step}");
            if precision == burn_experiment::Precision::Bf16 {
                assert!(
                    losses.iter().all(|&v| (v as f32).to_bits() & 0xffff == 0),
                    "{step}: bf16 losses"
                );
            }
            let (low, full) = (last_valid(&report, step), last_valid(&f32_run, step));
            assert!(
                (low - full).abs() < 0.05 * full,
                "{precision:?} {step}: {low} against f32's {full}"
            );
        }
        let generator = &report.model.model.generator;
        assert_eq!(
            generator.weights().len(),
            f32_run.model.model.generator.weights().len(),
            "the weights read back as f32"
        );
    }
}
