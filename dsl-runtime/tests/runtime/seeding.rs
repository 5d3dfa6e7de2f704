//! One `seed` on `flex` and on the test device (`DSL_TEST_DEVICE`): the same initial weights,
//! and losses that agree within a stated tolerance; and the random numbers a step draws
//! (dropout), seeded per batch, so that a resumed run draws what an uninterrupted one did. In the `seeded` binary: the runs seed Burn's
//! global RNG and draw their lazy parameters from it at the first step, and a test of the
//! `runtime` binary drawing in a parallel thread in between gave other weights (it did in CI).

use crate::common::*;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig, Relu};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

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

/// The seed MLP with dropout on its hidden layer: each training step draws a mask.
#[derive(burn::module::Module, Debug)]
pub struct Dropped {
    fc1: Linear,
    act: Relu,
    dropout: Dropout,
    fc2: Linear,
}

impl Dropped {
    fn new(p: f64, device: &Device) -> Self {
        Self {
            fc1: LinearConfig::new(4, 16).init(device),
            act: Relu::new(),
            dropout: DropoutConfig::new(p).init(),
            fc2: LinearConfig::new(16, 3).init(device),
        }
    }

    fn forward(&self, batch: Batch) -> ClassificationOutput {
        let hidden = self.act.forward(self.fc1.forward(batch.x));
        let logits = self.fc2.forward(self.dropout.forward(hidden));
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

training! {
    /// The seed task through a dropout layer, checkpointed every epoch.
    name: Masked,
    model: Dropped = Dropped::new(config.p, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16, shuffle: 3 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss],
    checkpoint: keep_last(3),
    seed: 5,
    hparams: {
        /// The dropout probability.
        p: f64 = 0.3,
    },
}

fn masked(
    dir: &std::path::Path,
    epochs: usize,
    adjust: impl FnOnce(&mut FitOptions),
) -> FitReport<MaskedModel> {
    masked_with(dir, Masked::config().p, epochs, adjust)
}

fn masked_with(
    dir: &std::path::Path,
    p: f64,
    epochs: usize,
    adjust: impl FnOnce(&mut FitOptions),
) -> FitReport<MaskedModel> {
    let config = MaskedConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        epochs,
        p,
        ..Masked::config()
    };
    Masked::with_options(config, &run_device(), |o| {
        o.quiet = true;
        adjust(o);
    })
    .unwrap()
}

#[test]
fn a_step_draws_from_its_batchs_own_stream_so_a_resumed_run_draws_the_same() {
    let _one = crate::one_at_a_time();
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = masked(whole_dir.path(), 3, |_| ());
    masked(dir.path(), 1, |_| ());
    // Whatever the process drew in between, the resumed epochs draw their own masks.
    let _ = burn::tensor::Tensor::<2>::random(
        [64, 64],
        burn::tensor::Distribution::Default,
        &run_device().autodiff(),
    );
    let resumed = masked(dir.path(), 3, |o| {
        o.resume = Some(burn_experiment::checkpoint::Resume::Latest);
    });
    assert_eq!(whole.history.train_losses().len(), 18);
    assert_bit_identical(
        &whole.history.train_losses(),
        &resumed.history.train_losses(),
    );
    // Worker threads build the batches; the draws stay the step's.
    let workers_dir = tempfile::tempdir().unwrap();
    let with_workers = masked(workers_dir.path(), 3, |o| o.workers = 2);
    assert_bit_identical(
        &whole.history.train_losses(),
        &with_workers.history.train_losses(),
    );
    // The masks are drawn: without dropout the same initial weights train to other losses.
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = masked_with(plain_dir.path(), 0.0, 3, |_| ());
    assert_ne!(whole.history.train_losses(), plain.history.train_losses());
}
