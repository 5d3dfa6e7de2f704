//! Regression with a batch type and batcher written by hand, loaders that return `Result`,
//! and code after training in `cli_then`.
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};
use burn::train::RegressionOutput;
use burn_experiment::prelude::*;

#[derive(Clone, Debug)]
pub struct House {
    pub rooms: f32,
    pub area: f32,
    pub price: f32,
}

#[derive(Clone, Debug)]
pub struct HouseBatch {
    pub rooms: Tensor<2>,
    pub area: Tensor<2>,
    pub price: Tensor<2>,
}

#[derive(Clone, Default)]
pub struct HouseBatcher;

impl Batcher<House, HouseBatch> for HouseBatcher {
    fn batch(&self, items: Vec<House>, device: &Device) -> HouseBatch {
        let n = items.len();
        let column = |f: fn(&House) -> f32| {
            let values: Vec<f32> = items.iter().map(f).collect();
            Tensor::from_data(TensorData::new(values, [n, 1]), device)
        };
        HouseBatch {
            rooms: column(|h| h.rooms),
            area: column(|h| h.area),
            price: column(|h| h.price),
        }
    }
}

fn houses(range: std::ops::Range<usize>) -> Result<InMemDataset<House>, FitError> {
    if range.is_empty() {
        return Err(FitError::dataset("an empty range of houses"));
    }
    let houses = range
        .map(|k| House { rooms: (k % 7) as f32, area: k as f32 / 10.0, price: k as f32 })
        .collect();
    Ok(InMemDataset::new(houses))
}

#[derive(Module, Debug)]
pub struct Price {
    linear: Linear,
}

impl Price {
    pub fn new(device: &Device) -> Self {
        Self { linear: LinearConfig::new(2, 1).init(device) }
    }

    pub fn forward(&self, batch: HouseBatch) -> RegressionOutput {
        let x = Tensor::cat(vec![batch.rooms, batch.area], 1);
        let output = self.linear.forward(x);
        let loss = MseLoss::new().forward(output.clone(), batch.price.clone(), Reduction::Mean);
        RegressionOutput::new(loss, output, batch.price)
    }
}

training! {
    name: pub Prices,
    model: Price = Price::new(device),
    step: |model, batch: HouseBatch| -> RegressionOutput { model.forward(batch) },
    loader: {
        train: houses(0..800)?,
        valid: houses(800..1000)?,
        batcher: HouseBatcher,
        batch_size: 64,
    },
    optimizer: sgd(lr = 0.01, momentum = 0.9),
    epochs: 10,
    metrics: [train.loss, valid.loss],
    checkpoint: best(valid.loss),
    grad_accumulation: 2,
    artifacts: "runs",
}

fn main() -> std::process::ExitCode {
    Prices::cli_then(|config, report| {
        let (epoch, _model) = Prices::load_best_with(config, &Device::flex())?;
        println!("best epoch {epoch} of {}", report.last_epoch);
        Ok(())
    })
}
