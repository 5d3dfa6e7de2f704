//! A step output of its own (derived), an augmentation, a plateau schedule and a device.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};
use burn_experiment::prelude::*;
use burn_experiment::rand::RngExt;

#[derive(Clone, Debug, Batch)]
pub struct Signal {
    pub samples: [f32; 8],
    pub kind: usize,
}

#[derive(StepOutput)]
pub struct Scored {
    #[loss]
    pub loss: Tensor<1>,
    #[targets]
    pub scores: Tensor<2>,
    #[logits]
    pub kinds: Tensor<1, Int>,
}

fn signals(count: usize) -> InMemDataset<Signal> {
    InMemDataset::new(
        (0..count)
            .map(|k| Signal { samples: [(k % 4) as f32; 8], kind: k % 4 })
            .collect(),
    )
}

#[derive(Module, Debug)]
pub struct Detector {
    linear: Linear,
}

impl Detector {
    pub fn new(device: &Device) -> Self {
        Self { linear: LinearConfig::new(8, 4).init(device) }
    }

    pub fn score(&self, batch: SignalBatch) -> Scored {
        let scores = self.linear.forward(batch.samples);
        let loss = CrossEntropyLossConfig::new()
            .init(&scores.device())
            .forward(scores.clone(), batch.kind.clone());
        Scored { loss, scores, kinds: batch.kind }
    }
}

training! {
    name: Detect,
    model: Detector = Detector::new(device),
    step: |model, batch: SignalBatch| -> Scored { model.score(batch) },
    loader: {
        train: signals(256),
        valid: signals(64),
        augment: |mut signal, rng| {
            signal.samples[0] += rng.random_range(-0.1..0.1);
            signal
        },
        batcher: SignalBatcher,
        batch_size: 16,
        shuffle: 3,
    },
    optimizer: rmsprop(lr = 1e-3, alpha = 0.9),
    lr_schedule: plateau(valid.loss, factor = 0.5, patience = 2),
    epochs: 30,
    metrics: [train.loss, valid.loss, valid.accuracy, valid.auroc],
    checkpoint: every(5),
    device: "flex",
}

fn main() -> std::process::ExitCode {
    Detect::cli()
}
