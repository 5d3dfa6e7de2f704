use burn::nn::loss::{MseLoss, Reduction};
use burn::tensor::Tensor;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// A regression output: its targets are values, not class indices.
#[derive(StepOutput)]
struct Fitted {
    #[loss]
    loss: Tensor<1>,
    #[logits]
    predictions: Tensor<2>,
    #[targets]
    targets: Tensor<2>,
}

fn fit(model: &Mlp, batch: Batch) -> Fitted {
    let predictions = model.forward(batch.x);
    let loss = MseLoss::new().forward(predictions.clone(), batch.targets.clone(), Reduction::Mean);
    Fitted { loss, predictions, targets: batch.targets }
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(1, device),
    step: |model, batch: Batch| -> Fitted { fit(model, batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: adam(lr = 1e-3),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
