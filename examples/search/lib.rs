//! A plane fit whose best learning rate lies inside the range searched: points `(a, b)` with
//! `a` spread more than 3 times wider than `b`, the target `1.5 a - 2 b + 0.5`, and a linear
//! model trained by full-batch gradient descent from zero. Each epoch shrinks the error along
//! each direction by `|1 - 2 lr λ|` (λ the direction's variance): too small a rate leaves the
//! narrow direction `b` unfitted, too large a one makes the wide direction `a` oscillate and
//! then diverge, and the best rate (about 0.42) balances the two. Full batches keep the
//! objective a smooth function of the rate, with no noise from the order of the samples.

use std::ops::Range;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};
use burn::train::RegressionOutput;

/// One point and its target.
#[derive(Clone, Debug)]
pub struct Point {
    pub x: [f32; 2],
    pub y: f32,
}

/// Point `k`, computed in f64 and cast to f32 so every platform gets the same bits.
pub fn point(k: usize) -> Point {
    let k = k as f64;
    let a = 2.0 * (0.731 * k).sin();
    let b = 0.6 * (1.917 * k + 0.4).sin();
    Point {
        x: [a as f32, b as f32],
        y: (1.5 * a - 2.0 * b + 0.5) as f32,
    }
}

/// Points `range`, as a Burn dataset.
pub fn points(range: Range<usize>) -> InMemDataset<Point> {
    InMemDataset::new(range.map(point).collect())
}

/// Points and targets, stacked.
#[derive(Clone, Debug)]
pub struct Batch {
    pub x: Tensor<2>,
    pub y: Tensor<2>,
}

/// A 16-bit run (`--precision bf16`) casts points and targets.
impl burn_experiment::CastFloats for Batch {
    fn cast_floats(self, dtype: burn::tensor::FloatDType) -> Self {
        Batch {
            x: self.x.cast(dtype),
            y: self.y.cast(dtype),
        }
    }
}

/// Stacks points into a [`Batch`].
#[derive(Clone, Default)]
pub struct PointBatcher;

impl Batcher<Point, Batch> for PointBatcher {
    fn batch(&self, items: Vec<Point>, device: &Device) -> Batch {
        let n = items.len();
        let x: Vec<f32> = items.iter().flat_map(|p| p.x).collect();
        let y: Vec<f32> = items.iter().map(|p| p.y).collect();
        Batch {
            x: Tensor::from_data(TensorData::new(x, [n, 2]), device),
            y: Tensor::from_data(TensorData::new(y, [n, 1]), device),
        }
    }
}

/// `y = w · x + c`.
#[derive(Module, Debug)]
pub struct Plane {
    pub linear: Linear,
}

impl Plane {
    /// Starts from zero weights: every trial starts from the same plane whatever the seed.
    pub fn new(device: &Device) -> Self {
        let linear = LinearConfig::new(2, 1)
            .with_initializer(burn::nn::Initializer::Zeros)
            .init(device);
        Self { linear }
    }

    /// The prediction and its mean squared error.
    pub fn forward_regression(&self, batch: Batch) -> RegressionOutput {
        let output = self.linear.forward(batch.x);
        let loss = MseLoss::new().forward(output.clone(), batch.y.clone(), Reduction::Mean);
        RegressionOutput::new(loss, output, batch.y)
    }
}
