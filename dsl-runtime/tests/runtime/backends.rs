//! The seed task on the test device (`DSL_TEST_DEVICE`: `.ci/run` sets `wgpu` on lavapipe and
//! `ndarray`): the same initial weights as on `flex`, and runs that repeat their own bits. The
//! losses across backends are compared in `seeding.rs`, in a binary of its own.

use crate::common::*;
use burn::optim::SgdConfig;
use burn::tensor::Device;

#[test]
fn the_model_is_drawn_on_the_cpu_and_moved_with_its_bits() {
    let on_cpu = Mlp::new(3, &Device::flex().autodiff());
    let moved = burn_experiment::model::placement::to_run_device(on_cpu.clone(), &device());
    assert_eq!(moved.weights(), on_cpu.weights());
    assert_eq!(mlp(3).weights(), on_cpu.weights());
    use burn::module::Module;
    assert_eq!(
        moved.devices(),
        [device()],
        "the parameters are on the run's device"
    );
}

#[test]
fn the_backend_repeats_its_own_results_bit_for_bit() {
    let setup = HandSetup {
        train: 0..96,
        valid: 96..120,
        batch_size: 16,
        epochs: 3,
        shuffle: Some(3),
        grad_accumulation: 1,
        regression: false,
    };
    let first = hand_loop(&setup, mlp(3), SgdConfig::new().init(), 0.1.into());
    let second = hand_loop(&setup, mlp(3), SgdConfig::new().init(), 0.1.into());
    assert_bit_identical(&first.losses, &second.losses);
    assert_eq!(first.weights, second.weights);
    assert_eq!(first.valid_loss, second.valid_loss);
}
