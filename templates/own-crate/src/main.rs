//! A regression from scratch: `y = 2 x0 - x1 + 0.5` from two features, with the sample type,
//! the model and the experiment in one file.

use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::Device;
use burn::train::RegressionOutput;
use burn_experiment::prelude::*;

/// One sample. `#[derive(Batch)]` writes `PointBatch` (`x: Tensor<2>` `[n, 2]`,
/// `y: Tensor<2>` `[n, 1]`) and `PointBatcher`.
#[derive(Clone, Debug, Batch)]
struct Point {
    x: [f32; 2],
    y: [f32; 1],
}

/// Points `k` in `range`, computed from their index (no data files to ship).
fn points(range: std::ops::Range<usize>) -> InMemDataset<Point> {
    InMemDataset::new(
        range
            .map(|k| {
                let x = [(0.7 * k as f32).sin(), (1.3 * k as f32).cos()];
                Point {
                    x,
                    y: [2.0 * x[0] - x[1] + 0.5],
                }
            })
            .collect(),
    )
}

#[derive(Module, Debug)]
struct Line {
    linear: Linear,
}

impl Line {
    fn new(device: &Device) -> Self {
        Self {
            linear: LinearConfig::new(2, 1).init(device),
        }
    }

    fn forward(&self, batch: PointBatch) -> RegressionOutput {
        let output = self.linear.forward(batch.x);
        let loss = MseLoss::new().forward(output.clone(), batch.y.clone(), Reduction::Mean);
        RegressionOutput::new(loss, output, batch.y)
    }
}

training! {
    /// A line through two features.
    name: LineFit,
    model: Line = Line::new(device),
    step: |model, batch: PointBatch| -> RegressionOutput { model.forward(batch) },
    loader: {
        train: points(0..256),
        valid: points(256..320),
        batcher: PointBatcher,
        batch_size: 32,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 20,
    metrics: [train.loss, valid.loss],
    seed: 1,
}

fn main() -> std::process::ExitCode {
    LineFit::cli()
}
