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
        0..2048,
        2,
        (adam(), 2e-3),
        (adam(), 2e-3),
        1,
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
        0..1024,
        2,
        (rmsprop(), 5e-4),
        (rmsprop(), 5e-4),
        5,
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
