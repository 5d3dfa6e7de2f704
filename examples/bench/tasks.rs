//! The benchmark tasks: their data, models and batchers.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d, Relu};
use burn::tensor::{Device, FloatDType, Int, Tensor, TensorData};
use burn::train::ClassificationOutput;

/// Features of the synthetic medium task.
pub const FEATURES: usize = 784;
/// Classes of the synthetic medium task.
pub const CLASSES: usize = 10;

/// One sample of the medium task.
#[derive(Clone, Debug)]
pub struct Digit {
    pub x: Vec<f32>,
    pub class: i64,
}

/// A deterministic pseudo-random value in [-1, 1) from two indices (SplitMix64), so every
/// process and variant builds the same data without a RNG crate.
fn noise(a: u64, b: u64) -> f32 {
    let mut z = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_add(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// Samples `range` of the medium task: class `k % 10`, features a class centroid plus noise.
pub fn digits(range: std::ops::Range<usize>) -> InMemDataset<Digit> {
    InMemDataset::new(
        range
            .map(|k| {
                let class = k % CLASSES;
                let x = (0..FEATURES)
                    .map(|j| {
                        0.5 * noise(class as u64, j as u64) + noise(k as u64, 1_000_000 + j as u64)
                    })
                    .collect();
                Digit {
                    x,
                    class: class as i64,
                }
            })
            .collect(),
    )
}

/// Features of an image-sized item: 3 × 224 × 224 floats.
pub const PIXELS: usize = 3 * 224 * 224;

/// Samples `range` of the large-item task: image-sized items (a class-dependent ramp plus a
/// cheap per-item pattern, so that generating them does not dominate the process).
pub fn pictures(range: std::ops::Range<usize>) -> InMemDataset<Digit> {
    InMemDataset::new(
        range
            .map(|k| {
                let class = k % CLASSES;
                let x = (0..PIXELS)
                    .map(|j| ((j * 7 + k * 13 + class * 101) % 251) as f32 / 251.0 - 0.5)
                    .collect();
                Digit {
                    x,
                    class: class as i64,
                }
            })
            .collect(),
    )
}

/// The medium task's batch.
#[derive(Clone, Debug)]
pub struct DigitBatch {
    pub x: Tensor<2>,
    pub classes: Tensor<1, Int>,
}

/// Stacks digits (or pictures: any feature count); with `cost` set it also spends that long per batch: busy, as a decoding or
/// augmenting batcher would, or waiting (`io`), as one reading from disk or network would.
#[derive(Clone, Debug, Default)]
pub struct DigitBatcher {
    pub cost: Option<Duration>,
    pub io: bool,
}

impl Batcher<Digit, DigitBatch> for DigitBatcher {
    fn batch(&self, items: Vec<Digit>, device: &Device) -> DigitBatch {
        match self.cost {
            Some(cost) if self.io => std::thread::sleep(cost),
            Some(cost) => {
                let start = std::time::Instant::now();
                while start.elapsed() < cost {
                    std::hint::spin_loop();
                }
            }
            None => {}
        }
        let (n, features) = (items.len(), items.first().map_or(0, |d| d.x.len()));
        let xs: Vec<f32> = items.iter().flat_map(|d| d.x.iter().copied()).collect();
        let classes: Vec<i64> = items.iter().map(|d| d.class).collect();
        DigitBatch {
            x: Tensor::from_data(TensorData::new(xs, [n, features]), device),
            classes: Tensor::from_data(TensorData::new(classes, [n]), device),
        }
    }
}

// A 16-bit run (`--precision`, the cnn64 task) casts the batch's features; classes stay ints.
impl burn_experiment::CastFloats for DigitBatch {
    fn cast_floats(self, dtype: FloatDType) -> Self {
        DigitBatch {
            x: self.x.cast(dtype),
            classes: self.classes,
        }
    }
}

/// The side of the cnn64 task's images: 3 × 64 × 64 floats each.
pub const SIDE: usize = 64;

/// The cnn64 task's data: `len` images generated on each `get` (a class-dependent stripe
/// pattern), so that the dataset holds nothing and the process's peak memory is the model's
/// and its activations'.
pub struct Images {
    pub offset: usize,
    pub len: usize,
}

impl burn::data::dataset::Dataset<Digit> for Images {
    fn get(&self, index: usize) -> Result<Digit, burn::data::dataset::DatasetError> {
        assert!(index < self.len, "index {index} of {} images", self.len);
        let k = self.offset + index;
        let class = k % CLASSES;
        let x = (0..3 * SIDE * SIDE)
            .map(|j| {
                let (row, col) = ((j / SIDE) % SIDE, j % SIDE);
                let stripe = f32::from(u8::from((row + col * class).is_multiple_of(class + 2)));
                stripe + 0.1 * noise(k as u64, j as u64)
            })
            .collect();
        Ok(Digit {
            x,
            class: class as i64,
        })
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// Three 3×3 convolutions at 64×64 (3 → 16 → 32 → 32 channels), pooled, then a linear head:
/// the activations of a batch of 64 outweigh the 14,000 weights many times, as in the image
/// models whose memory mixed precision is for.
#[derive(Module, Debug)]
pub struct Cnn64 {
    conv1: Conv2d,
    conv2: Conv2d,
    conv3: Conv2d,
    pool: AdaptiveAvgPool2d,
    act: Relu,
    head: Linear,
}

impl Cnn64 {
    /// The same initial weights in every process.
    pub fn new(device: &Device) -> Self {
        device.seed(42);
        let conv = |channels| {
            Conv2dConfig::new(channels, [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device)
        };
        let model = Self {
            conv1: conv([3, 16]),
            conv2: conv([16, 32]),
            conv3: conv([32, 32]),
            pool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            act: Relu::new(),
            head: LinearConfig::new(32, CLASSES).init(device),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    pub fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let [n, _] = batch.x.dims();
        let x = batch.x.reshape([n, 3, SIDE, SIDE]);
        let x = self.act.forward(self.conv1.forward(x));
        let x = self.act.forward(self.conv2.forward(x));
        let x = self.act.forward(self.conv3.forward(x));
        let x: Tensor<2> = self.pool.forward(x).reshape([n, 32]);
        let logits = self.head.forward(x);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

/// MLP 784 → 256 → 10.
#[derive(Module, Debug)]
pub struct Medium {
    fc1: Linear,
    act: Relu,
    fc2: Linear,
}

impl Medium {
    /// The same initial weights in every process.
    pub fn new(device: &Device) -> Self {
        device.seed(42);
        let model = Self {
            fc1: LinearConfig::new(FEATURES, 256).init(device),
            act: Relu::new(),
            fc2: LinearConfig::new(256, CLASSES).init(device),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    pub fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let logits = self
            .fc2
            .forward(self.act.forward(self.fc1.forward(batch.x)));
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

/// One linear layer over image-sized items, `PIXELS` → 10: the large-item task's model, cheap
/// per step so that costs growing with item size show.
#[derive(Module, Debug)]
pub struct Wide {
    fc: Linear,
}

impl Wide {
    /// The same initial weights in every process.
    pub fn new(device: &Device) -> Self {
        device.seed(42);
        let model = Self {
            fc: LinearConfig::new(PIXELS, CLASSES).init(device),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    pub fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let logits = self.fc.forward(batch.x);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

/// The medium task's train and valid splits.
pub type Splits = (Arc<InMemDataset<Digit>>, Arc<InMemDataset<Digit>>);

/// Medium-task data, generated once per process before any clock starts.
pub fn medium_data() -> Splits {
    static DATA: OnceLock<Splits> = OnceLock::new();
    DATA.get_or_init(|| (Arc::new(digits(0..8192)), Arc::new(digits(8192..10240))))
        .clone()
}

/// Large-item data (image-sized items), generated once per process.
pub fn large_data() -> Splits {
    static DATA: OnceLock<Splits> = OnceLock::new();
    DATA.get_or_init(|| (Arc::new(pictures(0..256)), Arc::new(pictures(256..320))))
        .clone()
}
