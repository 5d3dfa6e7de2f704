//! The UCI red wine quality data (Cortez et al., 2009), shipped as `winequality-red.csv`
//! (taken from the `linfa-datasets` 0.8.1 crate, which ships it; CC BY 4.0).
//!
//! Rows are read with Burn's `InMemDataset::from_csv` and serde, split 80/20 after a seeded
//! shuffle (Burn's `ShuffledDataset` and `PartialDataset`), and standardised with the training
//! part's mean and deviation, so validation rows never inform the scaling.

use burn::data::dataset::transform::{PartialDataset, ShuffledDataset};
use burn::data::dataset::{Dataset, InMemDataset};
use burn_experiment::prelude::*;
use serde::Deserialize;

/// One row of the CSV, columns as the file names them.
#[derive(Clone, Debug, Deserialize)]
struct Row {
    #[serde(rename = "fixed acidity")]
    fixed_acidity: f32,
    #[serde(rename = "volatile acidity")]
    volatile_acidity: f32,
    #[serde(rename = "citric acid")]
    citric_acid: f32,
    #[serde(rename = "residual sugar")]
    residual_sugar: f32,
    chlorides: f32,
    #[serde(rename = "free sulfur dioxide")]
    free_sulfur_dioxide: f32,
    #[serde(rename = "total sulfur dioxide")]
    total_sulfur_dioxide: f32,
    density: f32,
    #[serde(rename = "pH")]
    ph: f32,
    sulphates: f32,
    alcohol: f32,
    quality: u8,
}

impl Row {
    fn features(&self) -> [f32; 11] {
        [
            self.fixed_acidity,
            self.volatile_acidity,
            self.citric_acid,
            self.residual_sugar,
            self.chlorides,
            self.free_sulfur_dioxide,
            self.total_sulfur_dioxide,
            self.density,
            self.ph,
            self.sulphates,
            self.alcohol,
        ]
    }
}

/// A wine: standardised features, and its quality (3..=8) as a class index 0..=5.
#[derive(Clone, Debug, Batch)]
pub struct Wine {
    pub features: [f32; 11],
    pub quality: usize,
}

/// Lowest quality grade in the data; class index = quality - LOWEST.
const LOWEST: u8 = 3;
/// Number of quality classes (3..=8).
pub const CLASSES: usize = 6;
const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/winequality-red.csv");
const SPLIT_SEED: u64 = 42;
const TRAIN_FRACTION: f64 = 0.8;

/// Which part of the data.
#[derive(Clone, Copy, Debug)]
pub enum Part {
    Train,
    Valid,
}

fn rows() -> Result<Vec<Row>, FitError> {
    let csv = csv::ReaderBuilder::new();
    let all = InMemDataset::<Row>::from_csv(PATH, &csv)
        .map_err(|e| FitError::dataset(format!("{PATH}: {e}")))?;
    ShuffledDataset::new(all, SPLIT_SEED)
        .iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(FitError::dataset)
}

/// The `part` of the data set, standardised with the training part's statistics.
pub fn wines(part: Part) -> Result<InMemDataset<Wine>, FitError> {
    let rows = rows()?;
    let cut = (rows.len() as f64 * TRAIN_FRACTION) as usize;
    let all = std::sync::Arc::new(InMemDataset::new(rows));
    let train = PartialDataset::new(all.clone(), 0, cut);
    let (mean, std) = statistics(&collect(&train)?);
    let selected = match part {
        Part::Train => collect(&train)?,
        Part::Valid => collect(&PartialDataset::new(all.clone(), cut, all.len()))?,
    };
    Ok(InMemDataset::new(
        selected
            .iter()
            .map(|row| {
                let mut features = row.features();
                for (j, f) in features.iter_mut().enumerate() {
                    *f = (*f - mean[j]) / std[j];
                }
                Wine {
                    features,
                    quality: usize::from(row.quality - LOWEST),
                }
            })
            .collect(),
    ))
}

fn collect(dataset: &impl Dataset<Row>) -> Result<Vec<Row>, FitError> {
    dataset
        .iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(FitError::dataset)
}

fn statistics(rows: &[Row]) -> ([f32; 11], [f32; 11]) {
    let n = rows.len() as f64;
    let mut mean = [0f64; 11];
    for row in rows {
        for (m, f) in mean.iter_mut().zip(row.features()) {
            *m += f64::from(f) / n;
        }
    }
    let mut var = [0f64; 11];
    for row in rows {
        for ((v, m), f) in var.iter_mut().zip(mean).zip(row.features()) {
            *v += (f64::from(f) - m).powi(2) / n;
        }
    }
    (
        mean.map(|m| m as f32),
        var.map(|v| (v.sqrt() as f32).max(1e-6)),
    )
}
