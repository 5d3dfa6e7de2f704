//! Two experiments train the same model type with different steps: each gets its own wrapper.
use burn::train::{ClassificationOutput, RegressionOutput};
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: AsClassifier,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 1,
    metrics: [valid.accuracy],
}

training! {
    name: AsRegressor,
    model: Mlp = Mlp::new(1, device),
    step: |model, batch: Batch| -> RegressionOutput { model.forward_regression(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: adam(lr = 1e-3),
    epochs: 1,
}

pub fn main() {
    let _: fn(&burn::tensor::Device) -> Result<FitReport<AsClassifierModel>, FitError> = AsClassifier::fit;
    let _: fn(&burn::tensor::Device) -> Result<FitReport<AsRegressorModel>, FitError> = AsRegressor::fit;
}
