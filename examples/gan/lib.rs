//! A GAN on a ring of eight Gaussians in the plane, declared with two optimizers: per batch the
//! discriminator steps on real and generated points, then the generator steps against the
//! discriminator it just moved, and a moving average of the generator is what validation and
//! the figure use. `RingCritic` is the Wasserstein variant, its critic stepped on every batch
//! and its generator on every fifth.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::prelude::*;
use burn::tensor::activation::softplus;
use burn_experiment::prelude::*;

pub mod hand;

/// Modes of the ring.
pub const MODES: usize = 8;
/// Radius of the ring.
pub const RADIUS: f32 = 2.0;
/// Standard deviation of each mode.
pub const SPREAD: f32 = 0.05;
/// Dimensions of the generator's input noise.
pub const LATENT: usize = 4;

/// One training item: a point of the ring and the noise the generator turns into a fake one.
/// Both are functions of the item's index, so every run, and the hand loop, sees the same.
#[derive(Clone, Debug, Batch)]
pub struct Sample {
    pub point: [f32; 2],
    pub noise: [f32; LATENT],
}

/// Item `k`: mode `k mod 8` of the ring plus Gaussian noise, and the generator's noise.
pub fn sample(k: usize) -> Sample {
    let angle = std::f32::consts::TAU * (k % MODES) as f32 / MODES as f32;
    let k = k as u64;
    Sample {
        point: [
            RADIUS * angle.cos() + SPREAD * normal(k, 0),
            RADIUS * angle.sin() + SPREAD * normal(k, 1),
        ],
        noise: std::array::from_fn(|i| normal(k, 2 + i as u64)),
    }
}

/// Items `range` of the ring.
pub fn ring(range: std::ops::Range<usize>) -> burn::data::dataset::InMemDataset<Sample> {
    burn::data::dataset::InMemDataset::new(range.map(sample).collect())
}

/// A standard normal draw, a pure function of `(k, stream)` (Box–Muller on SplitMix64).
fn normal(k: u64, stream: u64) -> f32 {
    let uniform = |x: u64| (splitmix(x) >> 11) as f64 / (1u64 << 53) as f64;
    let key = k.wrapping_mul(64).wrapping_add(stream);
    let (u1, u2) = (
        uniform(2 * key).max(f64::MIN_POSITIVE),
        uniform(2 * key + 1),
    );
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `inputs → 64 → 64 → outputs`, ReLU between.
#[derive(Module, Debug)]
pub struct Net {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
    act: Relu,
}

impl Net {
    fn new(inputs: usize, outputs: usize, device: &Device) -> Self {
        Self {
            fc1: LinearConfig::new(inputs, 64).init(device),
            fc2: LinearConfig::new(64, 64).init(device),
            fc3: LinearConfig::new(64, outputs).init(device),
            act: Relu::new(),
        }
    }

    /// Every weight and bias as bits, layer by layer: what "untouched" and "identical" compare.
    pub fn weights(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for linear in [&self.fc1, &self.fc2, &self.fc3] {
            let weight = linear.weight.val().into_data();
            let bias = linear.bias.as_ref().expect("a bias").val().into_data();
            for values in [weight, bias] {
                out.extend(
                    values
                        .try_to_vec::<f32>()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits()),
                );
            }
        }
        out
    }

    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = self.act.forward(self.fc1.forward(x));
        let x = self.act.forward(self.fc2.forward(x));
        self.fc3.forward(x)
    }
}

/// The two players: the generator maps noise to points, the discriminator scores points.
#[derive(Module, Debug)]
pub struct Gan {
    pub generator: Net,
    pub discriminator: Net,
}

/// Burn's wgan `Clip` mapper, as that example writes it: every float parameter clamped to
/// `[min, max]`, keeping whether it requires gradients.
pub struct Clip {
    pub min: f32,
    pub max: f32,
}

impl burn::module::ModuleMapper for Clip {
    fn map_float<const D: usize>(
        &mut self,
        param: burn::module::Param<Tensor<D>>,
    ) -> burn::module::Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let is_require_grad = tensor.is_require_grad();
        let mut tensor = Tensor::from_inner(tensor.inner().clamp(self.min, self.max));
        if is_require_grad {
            tensor = tensor.require_grad();
        }
        burn::module::Param::from_mapped_value(id, tensor, mapper)
    }
}

/// A step's output: its loss alone.
#[derive(StepOutput)]
pub struct GanLoss {
    #[loss]
    pub loss: Tensor<1>,
}

impl Gan {
    /// The same initial weights on every call: the device RNG is global, so seeding and drawing
    /// happen under one lock, and the weights are materialised so clones cannot draw later.
    pub fn new(device: &Device) -> Self {
        static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
        device.seed(7);
        let model = Self {
            generator: Net::new(LATENT, 2, device),
            discriminator: Net::new(2, 1, device),
        };
        let record = model.clone().into_record();
        model.load_record(record)
    }

    /// The discriminator's loss: real points scored 1, generated ones 0 (binary cross-entropy
    /// on logits). The fakes are detached: this step trains the discriminator alone.
    pub fn discriminator_step(&self, batch: SampleBatch) -> GanLoss {
        let fake = self.generator.forward(batch.noise).detach();
        let real = self.discriminator.forward(batch.point);
        let fake = self.discriminator.forward(fake);
        let loss = softplus(real.neg(), 1.0).mean() + softplus(fake, 1.0).mean();
        GanLoss { loss }
    }

    /// The generator's loss: its points scored 1 by the discriminator (the non-saturating
    /// loss). Its gradients reach the discriminator too; only the generator's are applied.
    pub fn generator_step(&self, batch: SampleBatch) -> GanLoss {
        let fake = self
            .discriminator
            .forward(self.generator.forward(batch.noise));
        GanLoss {
            loss: softplus(fake.neg(), 1.0).mean(),
        }
    }

    /// The Wasserstein critic's loss: fake scores down, real scores up.
    pub fn critic_step(&self, batch: SampleBatch) -> GanLoss {
        let fake = self.generator.forward(batch.noise).detach();
        let loss = self.discriminator.forward(fake).mean()
            - self.discriminator.forward(batch.point).mean();
        GanLoss { loss }
    }

    /// The Wasserstein generator's loss: its points scored up by the critic.
    pub fn wasserstein_generator_step(&self, batch: SampleBatch) -> GanLoss {
        GanLoss {
            loss: self
                .discriminator
                .forward(self.generator.forward(batch.noise))
                .mean()
                .neg(),
        }
    }

    /// The model with the critic's weights clamped to `[-bound, bound]`, as Burn's wgan clips
    /// its discriminator after each of its optimizer steps (its `Clip` mapper).
    pub fn clip_critic(self, bound: f32) -> Self {
        let mut clip = Clip {
            min: -bound,
            max: bound,
        };
        Self {
            discriminator: self.discriminator.map(&mut clip),
            ..self
        }
    }

    /// `n` generated points, from the noise of items `range`, as `[x, y]` pairs.
    pub fn generate(&self, range: std::ops::Range<usize>, device: &Device) -> Vec<[f32; 2]> {
        let noise: Vec<f32> = range.clone().flat_map(|k| sample(k).noise).collect();
        let noise = Tensor::from_data(TensorData::new(noise, [range.len(), LATENT]), device);
        let points: Vec<f32> = self
            .generator
            .forward(noise)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        points.chunks(2).map(|p| [p[0], p[1]]).collect()
    }
}

training! {
    /// A GAN on a ring of eight Gaussians: the discriminator, then the generator, on each batch.
    name: pub RingGan,
    model: Gan = Gan::new(device),
    optimizers: {
        discriminator: adam(lr = 2e-3, beta_1 = 0.5) on [discriminator],
        generator: adam(lr = 2e-3, beta_1 = 0.5) on [generator],
    },
    steps: [
        discriminator: |model, batch: SampleBatch| -> GanLoss { model.discriminator_step(batch) },
        generator: |model, batch: SampleBatch| -> GanLoss { model.generator_step(batch) },
    ],
    loader: { train: ring(0..2048), valid: ring(2048..2304), batcher: SampleBatcher, batch_size: 64, shuffle: 3 },
    epochs: 20,
    ema: 0.95 on [generator],
    metrics: [train.discriminator.loss, train.generator.loss, valid.discriminator.loss, valid.generator.loss],
    checkpoint: keep_last(2),
}

training! {
    /// The Wasserstein variant: the critic on every batch, the generator on every fifth.
    name: pub RingCritic,
    model: Gan = Gan::new(device),
    optimizers: {
        critic: rmsprop(lr = 5e-4) on [discriminator],
        generator: rmsprop(lr = 5e-4) on [generator],
    },
    steps: [
        critic: |model, batch: SampleBatch| -> GanLoss { model.critic_step(batch) },
        generator(every = 5): |model, batch: SampleBatch| -> GanLoss { model.wasserstein_generator_step(batch) },
    ],
    loader: { train: ring(0..1024), valid: ring(2048..2304), batcher: SampleBatcher, batch_size: 64, shuffle: 3 },
    epochs: 2,
    metrics: [train.critic.loss, train.generator.loss],
    checkpoint: keep_last(1),
}

/// How well `points` cover the ring: how many of the eight modes have a point within 0.5 of
/// their centre, and the percentage of points within 0.5 of the ring's circle.
pub fn coverage(points: &[[f32; 2]]) -> (usize, f64) {
    let centre = |m: usize| {
        let angle = std::f32::consts::TAU * m as f32 / MODES as f32;
        [RADIUS * angle.cos(), RADIUS * angle.sin()]
    };
    let modes = (0..MODES)
        .filter(|&m| {
            let [cx, cy] = centre(m);
            points.iter().any(|[x, y]| (x - cx).hypot(y - cy) < 0.5)
        })
        .count();
    let near = points
        .iter()
        .filter(|[x, y]| (x.hypot(*y) - RADIUS).abs() < 0.5)
        .count();
    (modes, 100.0 * near as f64 / points.len().max(1) as f64)
}
