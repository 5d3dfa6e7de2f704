//! The declared GAN against the loop a Burn user writes by hand with two optimizers: same data,
//! order and initial weights, bit-identical per-step losses of both steps and final weights.
//! The generator step's gradients reach the discriminator too; only its own parameters may
//! move, or the discriminator's weights and every later loss would differ.

use burn::optim::{AdamConfig, RmsPropConfig};
use burn::tensor::Device;
use dsl_runtime::prelude::*;
use gan::hand::{Run, hand_loop};
use gan::{Gan, RingCritic, RingCriticConfig, RingGan, RingGanConfig};

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
        (0..2048, None, 2, 1),
        (adam(), 2e-3),
        (adam(), 2e-3),
        Gan::discriminator_step,
        Gan::generator_step,
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
        (0..1024, None, 2, 5),
        (rmsprop(), 5e-4),
        (rmsprop(), 5e-4),
        Gan::critic_step,
        Gan::wasserstein_generator_step,
    );
    assert_eq!(hand.first.len(), 32, "16 batches in each of 2 epochs");
    assert_eq!(hand.second.len(), 6, "steps 5, 10, .., 30");
    assert_eq!(
        declared(&report.history, &report.model.model, "critic", "generator"),
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
