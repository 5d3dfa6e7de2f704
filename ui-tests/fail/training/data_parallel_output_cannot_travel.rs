use burn::tensor::{Int, Tensor};
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// An output with a field of no role: it cannot be rebuilt on another process.
#[derive(StepOutput)]
pub struct Output {
    #[loss]
    loss: Tensor<1>,
    #[logits]
    logits: Tensor<2>,
    #[targets]
    targets: Tensor<1, Int>,
    note: String,
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> Output {
        let out = model.forward_classification(batch);
        Output { loss: out.loss, logits: out.output, targets: out.targets, note: String::new() }
    },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.accuracy],
    data_parallel: mpi,
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
