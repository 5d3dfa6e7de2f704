//! A regression on series of varying length: a derived batch with a padded float field, a
//! derived step output without logits, a metric from a function of it, `cli_then`.
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorReadError};
use burn_experiment::metric::Mean;
use burn_experiment::prelude::*;

#[derive(Clone, Debug, Batch)]
pub struct Window {
    #[pad(0.0)]
    pub history: Vec<f32>,
    pub next: [f32; 1],
}

#[derive(StepOutput)]
pub struct Forecast {
    #[loss]
    pub loss: Tensor<1>,
    pub predicted: Tensor<2>,
    pub actual: Tensor<2>,
}

fn windows(from: usize, to: usize) -> InMemDataset<Window> {
    InMemDataset::new(
        (from..to)
            .map(|k| Window {
                history: (0..k % 5 + 3).map(|i| (k + i) as f32 * 0.1).collect(),
                next: [(k + 8) as f32 * 0.1],
            })
            .collect(),
    )
}

/// Mean absolute error of a batch, and its size.
fn absolute_error(output: &Forecast) -> Result<(f64, usize), TensorReadError> {
    let error = (output.predicted.clone() - output.actual.clone()).abs().mean();
    let [samples, _] = output.actual.dims();
    Ok((error.try_into_scalar::<f64>()?, samples))
}

#[derive(Module, Debug)]
pub struct Forecaster {
    summary: Linear,
}

impl Forecaster {
    pub fn new(device: &Device) -> Self {
        Self { summary: LinearConfig::new(2, 1).init(device) }
    }

    pub fn forward(&self, batch: WindowBatch) -> Forecast {
        let lengths = batch.history_lengths.float().unsqueeze_dim(1);
        let mean = batch.history.sum_dim(1) / lengths.clone();
        let predicted = self.summary.forward(Tensor::cat(vec![mean, lengths], 1));
        let loss = MseLoss::new().forward(predicted.clone(), batch.next.clone(), Reduction::Mean);
        Forecast { loss, predicted, actual: batch.next }
    }
}

training! {
    name: Sales,
    model: Forecaster = Forecaster::new(device),
    step: |model, batch: WindowBatch| -> Forecast { model.forward(batch) },
    loader: {
        train: windows(0, 200),
        valid: windows(200, 250),
        batcher: WindowBatcher,
        batch_size: 25,
        shuffle: 11,
    },
    optimizer: sgd(lr = 1e-2, momentum = 0.9),
    lr_schedule: exponential(gamma = 0.99),
    epochs: 40,
    metrics: [train.loss, valid.loss, valid.metric(mae = Mean::lower_is_better(absolute_error))],
    checkpoint: best(valid.mae),
    early_stopping: patience(4, valid.mae),
}

fn main() -> std::process::ExitCode {
    Sales::cli_then(|config, report| {
        eprintln!("{} epochs in {}", report.last_epoch, config.artifacts);
        Ok(())
    })
}
