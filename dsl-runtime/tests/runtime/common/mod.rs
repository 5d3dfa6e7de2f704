//! The seed tasks and the hand-written Burn loop every `fit` test is compared against.
#![allow(dead_code)] // not every helper serves every test

use std::ops::Range;

use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::transform::ShuffledDataset;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::module::Module;
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use burn::train::{ClassificationOutput, InferenceStep, RegressionOutput, TrainOutput, TrainStep};
use burn_experiment::data::epoch_seed;
pub use seed::{Batch, Mlp, Sample, SampleBatcher, sample, samples};

/// The classification experiment as Burn's Learner would see it.
#[derive(Module, Debug)]
pub struct Classifier {
    pub mlp: Mlp,
}

impl TrainStep for Classifier {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> TrainOutput<ClassificationOutput> {
        let out = self.mlp.forward_classification(batch);
        TrainOutput::new(self, out.loss.backward(), out)
    }
}

impl InferenceStep for Classifier {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> ClassificationOutput {
        self.mlp.forward_classification(batch)
    }
}

/// The regression experiment as Burn's Learner would see it.
#[derive(Module, Debug)]
pub struct Regressor {
    pub mlp: Mlp,
}

impl TrainStep for Regressor {
    type Input = Batch;
    type Output = RegressionOutput;

    fn step(&self, batch: Batch) -> TrainOutput<RegressionOutput> {
        let out = self.mlp.forward_regression(batch);
        TrainOutput::new(self, out.loss.backward(), out)
    }
}

impl InferenceStep for Regressor {
    type Input = Batch;
    type Output = RegressionOutput;

    fn step(&self, batch: Batch) -> RegressionOutput {
        self.mlp.forward_regression(batch)
    }
}

/// The device the tests train on, with gradients: see [`run_device`].
pub fn device() -> Device {
    run_device().autodiff()
}

/// The device the tests run on: the one `DSL_TEST_DEVICE` names (`--device`'s spellings), or
/// `flex`. `.ci/run` runs the device tests again with `wgpu` (on lavapipe) and `ndarray`; a
/// name whose backend was not built in fails every test that asks, never skips it.
pub fn run_device() -> Device {
    let name = std::env::var("DSL_TEST_DEVICE").unwrap_or_else(|_| "flex".to_owned());
    burn_experiment::config::device::parse(&name)
        .unwrap_or_else(|e| panic!("DSL_TEST_DEVICE={name}: {e}"))
}

/// The seed's MLP with `outputs` outputs, drawn on the CPU and moved to the test device, as
/// `training!` builds a run's model (`placement.rs`): on every backend the same initial weights.
pub fn mlp(outputs: usize) -> Mlp {
    let model = Mlp::new(outputs, &Device::flex().autodiff()).fork(&device());
    // Another test device is seeded too, as `seed:` seeds the run's: what a run draws there
    // later (LoRA's adapters) repeats from run to run. (`Mlp::new` seeds flex itself, under a
    // lock that parallel tests share: seeding it again here could land between its draws.)
    if run_device() != Device::flex() {
        device().seed(42);
    }
    model
}

/// The seed task's 4→16→3 classifier, initialised from the CPU's RNG.
pub fn classifier() -> Classifier {
    Classifier { mlp: mlp(3) }
}

/// What a hand loop measured.
#[derive(Debug, Default)]
pub struct HandRun {
    /// Every training step's loss.
    pub losses: Vec<f32>,
    /// Per epoch: validation accuracy in percent (classification only).
    pub valid_accuracy: Vec<f64>,
    /// Per epoch: sample-weighted validation loss.
    pub valid_loss: Vec<f64>,
    /// Final weights.
    pub weights: Vec<u32>,
}

pub struct HandSetup {
    pub train: Range<usize>,
    pub valid: Range<usize>,
    pub batch_size: usize,
    pub epochs: usize,
    pub shuffle: Option<u64>,
    pub grad_accumulation: usize,
    pub regression: bool,
}

/// A loop written the way the Burn book writes one: Burn's single-thread `DataLoaderBuilder`
/// (a fresh `ShuffledDataset` per epoch when shuffling, seeded with `epoch_seed`), forward,
/// backward, `GradientsParams::from_grads`, scheduler step, `ModuleOptimizer::step`; validation
/// on `model.valid()` with batches on `device.inner()`.
pub fn hand_loop(
    setup: &HandSetup,
    mut model: Mlp,
    mut optim: ModuleOptimizer,
    mut lr: ModuleLrScheduler,
) -> HandRun {
    let device = device();
    let mut run = HandRun::default();
    let valid = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(setup.batch_size)
        .set_device(device.clone().inner())
        .build(samples(setup.valid.clone()));
    let forward = |model: &Mlp, batch: Batch| -> (Tensor<1>, Option<ClassificationOutput>) {
        if setup.regression {
            (model.forward_regression(batch).loss, None)
        } else {
            let out = model.forward_classification(batch);
            (out.loss.clone(), Some(out))
        }
    };
    for epoch in 1..=setup.epochs {
        let builder = DataLoaderBuilder::new(SampleBatcher)
            .batch_size(setup.batch_size)
            .set_device(device.clone());
        let train: std::sync::Arc<dyn DataLoader<Batch>> = match setup.shuffle {
            Some(seed) => builder.build(ShuffledDataset::new(
                samples(setup.train.clone()),
                epoch_seed(seed, epoch),
            )),
            None => builder.build(samples(setup.train.clone())),
        };
        let num_batches = setup.train.len().div_ceil(setup.batch_size);
        let mut accumulator = GradientsAccumulator::<Mlp>::new();
        for (i, batch) in train.iter().enumerate() {
            let (loss, _) = forward(&model, batch.expect("in-memory dataset"));
            run.losses.push(loss.clone().into_scalar::<f32>());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            if setup.grad_accumulation == 1 {
                model = optim.step(lr.step(), model, grads);
            } else {
                accumulator.accumulate(&model, grads);
                if (i + 1) % setup.grad_accumulation == 0 || i + 1 == num_batches {
                    model = optim.step(lr.step(), model, accumulator.grads());
                }
            }
        }
        let eval = model.valid();
        let (mut weighted, mut n, mut correct) = (0.0f64, 0usize, 0i64);
        for batch in valid.iter() {
            let batch = batch.expect("in-memory dataset");
            let len = batch.x.dims()[0];
            let (loss, out) = forward(&eval, batch);
            weighted += f64::from(loss.into_scalar::<f32>()) * len as f64;
            n += len;
            if let Some(out) = out {
                correct += out
                    .output
                    .argmax(1)
                    .squeeze::<1>()
                    .equal(out.targets)
                    .int()
                    .sum()
                    .into_scalar::<i64>();
            }
        }
        run.valid_loss.push(weighted / n as f64);
        run.valid_accuracy.push(100.0 * correct as f64 / n as f64);
    }
    run.weights = model.weights();
    run
}

/// Asserts two loss sequences are the same bits, printing them side by side otherwise.
pub fn assert_bit_identical(fit: &[f32], hand: &[f32]) {
    let table: Vec<String> = fit
        .iter()
        .zip(hand)
        .enumerate()
        .map(|(i, (a, b))| format!("{i:>3} {a:.8} {b:.8} {}", a.to_bits() == b.to_bits()))
        .collect();
    assert_eq!(fit.len(), hand.len(), "step counts differ");
    assert!(
        fit.iter()
            .zip(hand)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "losses differ:\nstep fit hand equal\n{}",
        table.join("\n")
    );
}

/// The seed batcher, counting the batches it builds: what a resumed run trained, to prove it
/// did not start over.
#[derive(Clone, Default)]
pub struct CountingBatcher {
    pub built: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl CountingBatcher {
    pub fn count(&self) -> usize {
        self.built.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl burn::data::dataloader::batcher::Batcher<seed::Sample, seed::Batch> for CountingBatcher {
    fn batch(&self, items: Vec<seed::Sample>, device: &Device) -> seed::Batch {
        self.built.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        seed::SampleBatcher.batch(items, device)
    }
}

/// Batches per epoch, as a numeric Burn metric reading nothing of the output (`()` input): the
/// same value every epoch, so `best(..)` on it keeps the first epoch.
#[derive(Clone, Default)]
pub struct BatchCount {
    count: usize,
}

impl BatchCount {
    fn entry(&self) -> burn::train::metric::SerializedEntry {
        burn::train::metric::SerializedEntry::new(self.count.to_string(), self.count.to_string())
    }
}

impl burn::train::metric::Metric for BatchCount {
    type Input = ();

    fn name(&self) -> burn::train::metric::MetricName {
        std::sync::Arc::new("Batch count".to_owned())
    }

    fn attributes(&self) -> burn::train::metric::MetricAttributes {
        burn::train::metric::NumericAttributes {
            unit: None,
            higher_is_better: false,
        }
        .into()
    }

    fn update(
        &mut self,
        _: &(),
        _: &burn::train::metric::MetricMetadata,
    ) -> Result<burn::train::metric::SerializedEntry, burn::tensor::TensorReadError> {
        self.count += 1;
        Ok(self.entry())
    }

    fn compute(
        &mut self,
    ) -> Result<burn::train::metric::SerializedEntry, burn::tensor::TensorReadError> {
        Ok(self.entry())
    }

    fn clear(&mut self) {
        self.count = 0;
    }
}

impl burn::train::metric::Numeric for BatchCount {
    fn value(&self) -> Option<burn::train::metric::NumericEntry> {
        Some(burn::train::metric::NumericEntry::Value(self.count as f64))
    }

    fn running_value(&self) -> Option<burn::train::metric::NumericEntry> {
        self.value()
    }

    fn final_value(&self) -> burn::train::metric::NumericEntry {
        burn::train::metric::NumericEntry::Final(self.count as f64)
    }
}
