use burn_experiment::prelude::*;
use gan::{Gan, GanLoss, SampleBatch, SampleBatcher, ring};

training! {
    name: Ring,
    model: Gan = Gan::new(device),
    optimizers: {
        discriminator: adam(lr = 2e-3) on [discriminator],
        generator: adam(lr = 2e-3) on [generator],
    },
    steps: [
        discriminator: |model, batch: SampleBatch| -> GanLoss { model.discriminator_step(batch) },
        generator(every = 5, every_in_epoch = 5): |model, batch: SampleBatch| -> GanLoss { model.generator_step(batch) },
    ],
    loader: { train: ring(0..256), valid: ring(256..320), batcher: SampleBatcher, batch_size: 64 },
    epochs: 1,
}

fn main() -> std::process::ExitCode {
    Ring::cli()
}
