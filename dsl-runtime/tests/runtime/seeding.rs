//! One `seed` on `flex` and on the test device (`DSL_TEST_DEVICE`): the same initial weights,
//! and losses that agree within a stated tolerance. In the `seeded` binary: the runs seed Burn's
//! global RNG and draw their lazy parameters from it at the first step, and a test of the
//! `runtime` binary drawing in a parallel thread in between gave other weights (it did in CI).

use crate::common::*;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use dsl_runtime::prelude::*;

/// The seed MLP built the way a model config builds one: its parameters are lazy, drawn where
/// and when they are first used.
#[derive(burn::module::Module, Debug)]
pub struct Lazy {
    fc1: Linear,
    act: Relu,
    fc2: Linear,
}

impl Lazy {
    fn new(device: &Device) -> Self {
        Self {
            fc1: LinearConfig::new(4, 16).init(device),
            act: Relu::new(),
            fc2: LinearConfig::new(16, 3).init(device),
        }
    }

    fn forward(&self, batch: Batch) -> ClassificationOutput {
        let logits = self
            .fc2
            .forward(self.act.forward(self.fc1.forward(batch.x)));
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

training! {
    /// The seed task with a seed and lazy parameters: drawn on the CPU whatever the device.
    name: Seeded,
    model: Lazy = Lazy::new(device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
    seed: 5,
}

/// The largest relative difference between two backends' per-step losses on the seed task:
/// measured 1.4e-7 between flex and wgpu on lavapipe and 8.2e-8 between flex and ndarray
/// (`docs/src/guide/backends.md` explains the cause): one or two units in the last place of an
/// f32. The bound is about 8 of them.
const CROSS_BACKEND: f32 = 1e-6;

fn seeded(device: &Device) -> FitReport<SeededModel> {
    let dir = tempfile::tempdir().unwrap();
    let config = SeededConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..Seeded::config()
    };
    Seeded::with_options(config, device, |o| o.quiet = true).unwrap()
}

#[test]
fn the_same_seed_trains_from_the_same_weights_on_flex_and_the_test_device() {
    let _one = crate::one_at_a_time();
    let on_flex = seeded(&Device::flex());
    let here = seeded(&run_device());
    let (a, b) = (on_flex.history.train_losses(), here.history.train_losses());
    assert_eq!(a.len(), 18);
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs() / x.abs())
        .fold(0f32, f32::max);
    println!(
        "{:?} against flex: largest relative difference of the per-step losses {worst:e}",
        run_device()
    );
    assert!(
        worst <= CROSS_BACKEND,
        "losses part by {worst:e}:\n{a:?}\n{b:?}"
    );
    // Other initial weights would part at the first step by far more than rounding does.
    assert!((a[0] - b[0]).abs() <= CROSS_BACKEND * a[0]);
}
