//! The seed tasks: data, batcher and model shared by the examples and the runtime's tests.
//!
//! Sample `k` has four features `sin(0.37 k + 1.3 j)`, computed in f64 and cast to f32 so every
//! platform and language gets the same bits. Classification: 3 classes, the argmax of
//! `[x0 + x1, x2 - x3, x3 - x0]`. Regression: the target `x0 - 2 x1 + x2 x3`.

use std::ops::Range;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLossConfig, MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn::train::{ClassificationOutput, RegressionOutput};

/// One seed sample: four sine features; `class` for the classification task, `target` for the regression task.
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
    let scores = [x[0] + x[1], x[2] - x[3], x[3] - x[0]];
    let class = (0..3)
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap() as i64;
    let target = (xf[0] - 2.0 * xf[1] + xf[2] * xf[3]) as f32;
    Sample { x, class, target }
}

/// The samples with indices in `range`, as a Burn dataset.
pub fn samples(range: Range<usize>) -> InMemDataset<Sample> {
    InMemDataset::new(range.map(sample).collect())
}

/// A batch of seed samples: features, class indices and regression targets.
#[derive(Clone, Debug)]
pub struct Batch {
    pub x: Tensor<2>,
    pub classes: Tensor<1, Int>,
    pub targets: Tensor<2>,
}

/// A 16-bit run (`--precision bf16`) casts the features and the regression targets; the class
/// indices stay integers.
impl burn_experiment::CastFloats for Batch {
    fn cast_floats(self, dtype: burn::tensor::FloatDType) -> Self {
        Batch {
            x: self.x.cast(dtype),
            classes: self.classes,
            targets: self.targets.cast(dtype),
        }
    }
}

/// Stacks seed samples into a [`Batch`].
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

/// MLP `4 → hidden → out` with ReLU.
#[derive(Module, Debug)]
pub struct Mlp {
    /// The hidden layer.
    pub fc1: Linear,
    act: Relu,
    /// The output layer.
    pub fc2: Linear,
}

impl Mlp {
    /// The same initial weights on every call: the device RNG is global and tests run in
    /// parallel, so seeding and drawing happen under one lock, and the weights are materialised
    /// so that clones cannot draw lazily later.
    pub fn new(outputs: usize, device: &Device) -> Self {
        Self::with_hidden(16, outputs, device)
    }

    /// `4 → hidden → out`; [`Mlp::new`] is `hidden = 16`, with the same weights.
    pub fn with_hidden(hidden: usize, outputs: usize, device: &Device) -> Self {
        static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
        device.seed(42);
        let model = Self {
            fc1: LinearConfig::new(4, hidden).init(device),
            act: Relu::new(),
            fc2: LinearConfig::new(hidden, outputs).init(device),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    /// Logits (classification) or predictions (regression).
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(self.act.forward(self.fc1.forward(x)))
    }

    /// Forward pass with cross-entropy against the batch's classes.
    pub fn forward_classification(&self, batch: Batch) -> ClassificationOutput {
        let logits = self.forward(batch.x);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }

    /// Forward pass with mean squared error against the batch's targets.
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
