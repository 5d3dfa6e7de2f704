//! A CSV read with `?`, a derived batch of several fields, `cli()` in `main`.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Tensor};
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;

#[derive(Clone, Debug, Batch)]
pub struct Patient {
    pub vitals: [f32; 6],
    pub age: f32,
    pub outcome: usize,
}

#[derive(Clone, Copy)]
pub enum Part {
    Train,
    Valid,
}

fn patients(part: Part) -> Result<InMemDataset<Patient>, FitError> {
    let text = std::fs::read_to_string("patients.csv").map_err(FitError::dataset)?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().skip(1).enumerate() {
        let cells: Vec<f32> = line.split(',').map(|c| c.parse().unwrap_or(0.0)).collect();
        if (i % 5 == 0) == matches!(part, Part::Valid) {
            let mut vitals = [0.0; 6];
            vitals.copy_from_slice(&cells[..6]);
            rows.push(Patient { vitals, age: cells[6], outcome: cells[7] as usize });
        }
    }
    Ok(InMemDataset::new(rows))
}

#[derive(Module, Debug)]
pub struct Net {
    hidden: Linear,
    act: Relu,
    out: Linear,
}

impl Net {
    pub fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(7, 32).init(device),
            act: Relu::new(),
            out: LinearConfig::new(32, 3).init(device),
        }
    }

    pub fn forward(&self, batch: PatientBatch) -> ClassificationOutput {
        let x = Tensor::cat(vec![batch.vitals, batch.age.unsqueeze_dim(1)], 1);
        let logits = self.out.forward(self.act.forward(self.hidden.forward(x)));
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.outcome.clone());
        ClassificationOutput::new(loss, logits, batch.outcome)
    }
}

training! {
    /// Outcome from vitals and age.
    name: Triage,
    model: Net = Net::new(device),
    step: |model, batch: PatientBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: patients(Part::Train)?,
        valid: patients(Part::Valid)?,
        batcher: PatientBatcher,
        batch_size: 32,
        shuffle: 7,
        workers: 2,
    },
    optimizer: adam(1e-3, weight_decay = 1e-4),
    lr_schedule: cosine(min = 1e-5),
    epochs: 20,
    metrics: [train.loss, valid.loss, valid.accuracy, valid.f1],
    checkpoint: keep_last(2) | best(valid.accuracy),
    early_stopping: patience(5, valid.loss),
    grad_clip: norm(1.0),
    seed: 7,
}

fn main() -> std::process::ExitCode {
    Triage::cli()
}
