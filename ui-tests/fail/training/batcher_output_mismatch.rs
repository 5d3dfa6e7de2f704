use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use burn::data::dataloader::batcher::Batcher;
use burn::tensor::Device;
use seed::{Batch, Mlp, Sample, samples};

/// Builds plain feature vectors, not the `Batch` the step takes.
#[derive(Clone)]
struct FeatureBatcher;

impl Batcher<Sample, Vec<[f32; 4]>> for FeatureBatcher {
    fn batch(&self, items: Vec<Sample>, _device: &Device) -> Vec<[f32; 4]> {
        items.iter().map(|s| s.x).collect()
    }
}

training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: FeatureBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

fn main() -> std::process::ExitCode {
    Seed::cli()
}
