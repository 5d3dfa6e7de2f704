//! A sweep of a several-optimizer experiment without `best(..)`: nothing says which player's
//! metric ranks the trials.
use burn_experiment::prelude::*;
use gan::{Gan, GanLoss, SampleBatch, SampleBatcher, ring};

/// The mean of a step's loss, as a metric of the user's own.
fn loss_value(output: &GanLoss) -> (burn::tensor::Tensor<1>, usize) {
    (output.loss.clone(), 1)
}

training! {
    name: TwoPlayers,
    model: Gan = Gan::new(device),
    optimizers: {
        discriminator: sgd(lr = 1e-2) on [discriminator],
        generator: adam(lr = 1e-3) on [generator],
    },
    steps: [
        discriminator: |model, batch: SampleBatch| -> GanLoss { model.discriminator_step(batch) },
        generator(every = 2): |model, batch: SampleBatch| -> GanLoss { model.generator_step(batch) },
    ],
    loader: { train: ring(0..256), valid: ring(256..320), batcher: SampleBatcher, batch_size: 64 },
    epochs: 3,
    metrics: [
        train.discriminator.loss,
        train.generator.loss,
        valid.generator.loss,
        valid.discriminator.metric(own_loss = metric::Mean::lower_is_better(loss_value)),
    ],
    sweep: { optimizers.generator.lr: [1e-3, 2e-3] },
}

fn main() -> std::process::ExitCode {
    TwoPlayers::cli()
}
