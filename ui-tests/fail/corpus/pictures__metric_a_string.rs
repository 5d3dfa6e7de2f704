//! Image classification: a derived batch of nested arrays, a convolution, augmentation with a
//! random flip, a test split, a warm-up schedule and checkpoints every few epochs.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use burn_experiment::rand::RngExt;

#[derive(Clone, Debug, Batch)]
pub struct Picture {
    pub pixels: [[f32; 8]; 8],
    pub shape: u8,
}

fn pictures(from: usize, to: usize) -> InMemDataset<Picture> {
    InMemDataset::new(
        (from..to)
            .map(|k| {
                let mut pixels = [[0.0; 8]; 8];
                pixels[k % 8][(k / 8) % 8] = 1.0;
                Picture { pixels, shape: (k % 3) as u8 }
            })
            .collect(),
    )
}

#[derive(Module, Debug)]
pub struct Cnn {
    conv: Conv2d,
    head: Linear,
}

impl Cnn {
    pub fn new(device: &Device) -> Self {
        Self {
            conv: Conv2dConfig::new([1, 4], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device),
            head: LinearConfig::new(4, 3).init(device),
        }
    }

    pub fn forward(&self, batch: PictureBatch) -> ClassificationOutput {
        let features = self.conv.forward(batch.pixels.unsqueeze_dim(1));
        let pooled = features.mean_dim(3).mean_dim(2).flatten(1, 3);
        let logits = self.head.forward(pooled);
        let targets = batch.shape;
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), targets.clone());
        ClassificationOutput::new(loss, logits, targets)
    }
}

training! {
    name: Shapes,
    model: Cnn = Cnn::new(device),
    step: |model, batch: PictureBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: pictures(0, 192),
        valid: pictures(192, 240),
        test: pictures(240, 288),
        augment: |mut picture, rng| {
            if rng.random_bool(0.5) {
                picture.pixels.reverse();
            }
            picture
        },
        batcher: PictureBatcher,
        batch_size: 32,
        shuffle: 5,
    },
    optimizer: adamw(lr = 3e-3, weight_decay = 1e-4),
    lr_schedule: warm_up(steps = 12, then = cosine(min = 1e-5)),
    epochs: 12,
    metrics: ["train.loss", valid.loss, valid.accuracy, valid.top_k(2), test.accuracy],
    checkpoint: every(3) | best(valid.accuracy),
    grad_clip: value(1.0),
    seed: 21,
}

fn main() -> std::process::ExitCode {
    Shapes::cli()
}
