use burn::train::{ClassificationOutput, RegressionOutput};
use burn_experiment::metric::Mean;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// The mean target of a regression batch.
fn mean_target(output: &RegressionOutput) -> (burn::tensor::Tensor<1>, usize) {
    let [samples, _] = output.targets.dims();
    (output.targets.clone().mean(), samples)
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.metric(target = Mean::lower_is_better(mean_target))],
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
