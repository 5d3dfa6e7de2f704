use burn::data::dataloader::batcher::Batcher;
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, Sample, SampleBatcher, samples};

/// A batch type of the user's own, which does not implement `CastFloats`.
#[derive(Clone, Debug)]
pub struct Plain(Batch);

#[derive(Clone, Default)]
pub struct PlainBatcher;

impl Batcher<Sample, Plain> for PlainBatcher {
    fn batch(&self, items: Vec<Sample>, device: &Device) -> Plain {
        Plain(SampleBatcher.batch(items, device))
    }
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Plain| -> ClassificationOutput { model.forward_classification(batch.0) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: PlainBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    precision: bf16,
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
