//! The seed tasks and the hand-written Burn loop every `fit` test is compared against.
#![allow(dead_code)] // each test binary uses part of this module

use std::ops::Range;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::data::dataset::transform::ShuffledDataset;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLossConfig, MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn::train::{
    ClassificationOutput, InferenceStep, RegressionOutput, TrainOutput, TrainStep,
};
use dsl_runtime::data::epoch_seed;

/// Four sine features; `class` for the classification task, `target` for the regression task.
#[derive(Clone, Debug)]
pub struct Sample {
    pub x: [f32; 4],
    pub class: i64,
    pub target: f32,
}

/// Sample `k`: features `sin(0.37 k + 1.3 j)` computed in f64, then cast to f32; class = argmax of
/// `[x0 + x1, x2 - x3, x3 - x0]`; regression target `x0 - 2 x1 + x2 x3`.
pub fn sample(k: usize) -> Sample {
    let xf: Vec<f64> = (0..4)
        .map(|j| (0.37 * k as f64 + 1.3 * j as f64).sin())
        .collect();
    let x = [xf[0] as f32, xf[1] as f32, xf[2] as f32, xf[3] as f32];
    let scores = [
        x[0] + x[1],
        x[2] - x[3],
        x[3] - x[0],
    ];
    let class = (0..3)
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap() as i64;
    let target = (xf[0] - 2.0 * xf[1] + xf[2] * xf[3]) as f32;
    Sample { x, class, target }
}

pub fn samples(range: Range<usize>) -> InMemDataset<Sample> {
    InMemDataset::new(range.map(sample).collect())
}

#[derive(Clone, Debug)]
pub struct Batch {
    pub x: Tensor<2>,
    pub classes: Tensor<1, Int>,
    pub targets: Tensor<2>,
}

#[derive(Clone, Default)]
pub struct SampleBatcher;

impl Batcher<Sample, Batch> for SampleBatcher {
    fn batch(&self, items: Vec<Sample>, device: &Device) -> Batch {
        let n = items.len();
        let xs: Vec<f32> = items.iter().flat_map(|s| s.x).collect();
        let classes: Vec<i64> = items.iter().map(|s| s.class).collect();
        let targets: Vec<f32> = items.iter().map(|s| s.target).collect();
        Batch {
            x: Tensor::from_data(TensorData::new(xs, [n, 4]), device),
            classes: Tensor::from_data(TensorData::new(classes, [n]), device),
            targets: Tensor::from_data(TensorData::new(targets, [n, 1]), device),
        }
    }
}

/// MLP `4 → 16 → out` with ReLU.
#[derive(Module, Debug)]
pub struct Mlp {
    fc1: Linear,
    act: Relu,
    fc2: Linear,
}

impl Mlp {
    /// The same initial weights on every call: the device RNG is global and tests run in
    /// parallel, so seeding and drawing happen under one lock, and the weights are materialised
    /// so that clones cannot draw lazily later.
    pub fn new(outputs: usize, device: &Device) -> Self {
        static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
        device.seed(42);
        let model = Self {
            fc1: LinearConfig::new(4, 16).init(device),
            act: Relu::new(),
            fc2: LinearConfig::new(16, outputs).init(device),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(self.act.forward(self.fc1.forward(x)))
    }

    pub fn forward_classification(&self, batch: Batch) -> ClassificationOutput {
        let logits = self.forward(batch.x);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }

    pub fn forward_regression(&self, batch: Batch) -> RegressionOutput {
        let output = self.forward(batch.x);
        let loss = MseLoss::new().forward(output.clone(), batch.targets.clone(), Reduction::Mean);
        RegressionOutput::new(loss, output, batch.targets)
    }

    /// All parameter values, for bit-exact comparison of two models.
    pub fn weights(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for linear in [&self.fc1, &self.fc2] {
            let w = linear.weight.val().into_data().try_to_vec::<f32>().unwrap();
            let b = linear.bias.as_ref().unwrap().val().into_data();
            out.extend(w.iter().map(|v| v.to_bits()));
            out.extend(b.try_to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()));
        }
        out
    }
}

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

pub fn device() -> Device {
    Device::flex().autodiff()
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
        fit.iter().zip(hand).all(|(a, b)| a.to_bits() == b.to_bits()),
        "losses differ:\nstep fit hand equal\n{}",
        table.join("\n")
    );
}
