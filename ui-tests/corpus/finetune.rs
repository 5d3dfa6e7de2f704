//! Fine-tuning: weights from a file, a frozen encoder that thaws, its own learning rate, a
//! moving average, and a run that resumes.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

#[derive(Clone, Debug, Batch)]
pub struct Review {
    pub embedding: [f32; 16],
    pub stars: usize,
}

fn reviews(path: &str) -> Result<InMemDataset<Review>, FitError> {
    let bytes = std::fs::read(path).map_err(FitError::dataset)?;
    let reviews = bytes
        .chunks(17)
        .map(|chunk| Review {
            embedding: std::array::from_fn(|i| f32::from(chunk[i % chunk.len()]) / 255.0),
            stars: usize::from(chunk[0] % 5),
        })
        .collect();
    Ok(InMemDataset::new(reviews))
}

#[derive(Module, Debug)]
pub struct Encoder {
    layer: Linear,
    act: Relu,
}

#[derive(Module, Debug)]
pub struct Rater {
    encoder: Encoder,
    head: Linear,
}

impl Rater {
    pub fn new(device: &Device) -> Self {
        Self {
            encoder: Encoder { layer: LinearConfig::new(16, 32).init(device), act: Relu::new() },
            head: LinearConfig::new(32, 5).init(device),
        }
    }

    pub fn forward(&self, batch: ReviewBatch) -> ClassificationOutput {
        let hidden = self.encoder.act.forward(self.encoder.layer.forward(batch.embedding));
        let logits = self.head.forward(hidden);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.stars.clone());
        ClassificationOutput::new(loss, logits, batch.stars)
    }
}

training! {
    name: Stars,
    model: Rater = Rater::new(device),
    step: |model, batch: ReviewBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: reviews("train.bin")?,
        valid: reviews("valid.bin")?,
        batcher: ReviewBatcher,
        batch_size: 8,
    },
    optimizer: adam(lr = 1e-4),
    lr_schedule: warm_up(steps = 100, then = linear(final = 1e-6)),
    epochs: 8,
    metrics: [train.loss, valid.loss, valid.accuracy, valid.top_k(2)],
    checkpoint: keep_last(3) | best(valid.loss),
    resume: latest,
    init_from: "pretrained.safetensors",
    freeze: [encoder],
    unfreeze: 3,
    groups: { head: lr(1e-3) },
    ema: 0.99,
}

fn main() -> std::process::ExitCode {
    Stars::cli()
}
