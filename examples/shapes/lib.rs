//! A CNN on 8×8 grayscale images of three shapes — a horizontal bar, a vertical bar, a plus —
//! drawn at a position and brightness that vary, with noise. The images are generated from
//! their index (no data set ships with the repository, and none with a clear licence can be
//! fetched here); `#[derive(Batch)]` stacks the `[[f32; 8]; 8]` pixels into a `Tensor<3>`, and
//! training images are mirrored and re-noised per item by `augment`, reproducibly.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d, Relu};
use burn::tensor::{Device, Tensor};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use burn_experiment::rand::RngExt;

/// The side of an image.
pub const SIDE: usize = 8;

/// One image and its shape: 0 horizontal bar, 1 vertical bar, 2 plus.
#[derive(Clone, Debug, Batch)]
pub struct Image {
    pub pixels: [[f32; SIDE]; SIDE],
    pub class: usize,
}

/// SplitMix64: the image of index `k` is a pure function of `k`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Image `k`: its class is `k mod 3`; position, brightness and noise come from `k`.
pub fn image(k: usize) -> Image {
    let class = k % 3;
    let draw = |salt: u64| mix((k as u64) << 8 | salt);
    let (row, col) = (1 + draw(1) as usize % 6, 1 + draw(2) as usize % 6);
    let brightness = 0.6 + (draw(3) % 40) as f32 / 100.0;
    let mut pixels = [[0.0; SIDE]; SIDE];
    for (r, line) in pixels.iter_mut().enumerate() {
        for (c, pixel) in line.iter_mut().enumerate() {
            let on = match class {
                0 => r == row,
                1 => c == col,
                _ => (r == row && c.abs_diff(col) <= 1) || (c == col && r.abs_diff(row) <= 1),
            };
            let noise = (draw(10 + (r * SIDE + c) as u64) % 100) as f32 / 500.0;
            *pixel = if on { brightness } else { 0.0 } + noise;
        }
    }
    Image { pixels, class }
}

/// Images `range`.
pub fn images(range: std::ops::Range<usize>) -> burn::data::dataset::InMemDataset<Image> {
    burn::data::dataset::InMemDataset::new(range.map(image).collect())
}

/// Mirrors an image left to right half of the time (every shape keeps its class) and adds
/// fresh noise: what the model trains on differs each epoch, reproducibly.
pub fn augment(mut image: Image, rng: &mut burn_experiment::rand::rngs::StdRng) -> Image {
    if rng.random_bool(0.5) {
        for line in &mut image.pixels {
            line.reverse();
        }
    }
    for pixel in image.pixels.iter_mut().flatten() {
        *pixel += rng.random_range(-0.05..0.05);
    }
    image
}

/// conv 3×3 (8 channels) → ReLU → conv 3×3 (16) → ReLU → global average → linear.
#[derive(Module, Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: AdaptiveAvgPool2d,
    act: Relu,
    head: Linear,
}

impl Cnn {
    pub fn new(device: &Device) -> Self {
        let conv = |channels| {
            Conv2dConfig::new(channels, [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device)
        };
        Self {
            conv1: conv([1, 8]),
            conv2: conv([8, 16]),
            pool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            act: Relu::new(),
            head: LinearConfig::new(16, 3).init(device),
        }
    }

    pub fn forward(&self, batch: ImageBatch) -> ClassificationOutput {
        let [n, height, width] = batch.pixels.dims();
        let x = batch.pixels.reshape([n, 1, height, width]);
        let x = self.act.forward(self.conv1.forward(x));
        let x = self.act.forward(self.conv2.forward(x));
        let x: Tensor<2> = self.pool.forward(x).reshape([n, 16]);
        let output = self.head.forward(x);
        let targets = batch.class;
        let loss = CrossEntropyLossConfig::new()
            .init(&output.device())
            .forward(output.clone(), targets.clone());
        ClassificationOutput {
            loss,
            output,
            targets,
        }
    }
}

training! {
    /// Three shapes on 8×8 images.
    name: pub Shapes,
    model: Cnn = Cnn::new(device),
    step: |model, batch: ImageBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: images(0..300),
        valid: images(300..390),
        test: images(390..480),
        batcher: ImageBatcher,
        batch_size: 30,
        shuffle: 5,
        augment: augment,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 6,
    seed: 1,
    metrics: [train.loss, valid.loss, valid.accuracy, test.accuracy],
    checkpoint: keep_last(1) | best(valid.accuracy),
}
