use burn::lr_scheduler::noam::NoamLrSchedulerConfig;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: adam(lr = 1e-3),
    lr_schedule: NoamLrSchedulerConfig::new(1e-2).with_warmup_steps(100),
    epochs: 3,
    groups: { fc1: lr(1e-4) },
    sweep: { lr: [1e-3, 1e-2] },
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
