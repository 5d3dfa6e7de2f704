use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};
use burn::data::dataloader::batcher::Batcher;
use burn::tensor::Device;
use seed::Sample;

struct Features;

impl Batcher<Sample, Vec<f32>> for Features {
    fn batch(&self, items: Vec<Sample>, _device: &Device) -> Vec<f32> {
        items.iter().flat_map(|s| s.x).collect()
    }
}
training! {
    name: Seed,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
}

fn main() -> std::process::ExitCode {
    let (_, model) = Seed::load_best(&Device::flex()).unwrap();
    let _ = Seed::predict(&model, samples(0..8), Features);
    Seed::cli()
}
