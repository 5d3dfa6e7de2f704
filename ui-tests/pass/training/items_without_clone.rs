//! Items that are not `Clone` (a decoded record owning its buffer, say): the loader takes each
//! item by value from `Dataset::get`, so training, a shuffled order, the test split,
//! `evaluate`, `predict` and `--predict` never ask for a copy.
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, DatasetError};
use burn::prelude::*;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, Sample, SampleBatcher, sample, samples};

/// Deliberately without `#[derive(Clone)]`.
#[derive(Debug)]
pub struct Row {
    sample: Sample,
}

pub struct Rows(std::ops::Range<usize>);

impl Dataset<Row> for Rows {
    fn get(&self, index: usize) -> Result<Row, DatasetError> {
        if index >= self.0.len() {
            let message = format!("row {index} of {}", self.0.len());
            return Err(DatasetError::new(std::io::Error::other(message)));
        }
        Ok(Row {
            sample: sample(self.0.start + index),
        })
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

#[derive(Clone)]
pub struct RowBatcher;

impl Batcher<Row, Batch> for RowBatcher {
    fn batch(&self, items: Vec<Row>, device: &Device) -> Batch {
        SampleBatcher.batch(items.into_iter().map(|r| r.sample).collect(), device)
    }
}

training! {
    name: NotClone,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: Rows(0..48),
        valid: Rows(48..64),
        test: Rows(64..80),
        batcher: RowBatcher,
        batch_size: 16,
        shuffle: 7,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
    seed: 3,
    metrics: [train.loss, valid.loss, valid.accuracy, test.accuracy],
    checkpoint: keep_last(1),
}

// The same experiment on the same samples, held as seed's `Clone` items.
training! {
    name: Cloned,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..48),
        valid: samples(48..64),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 2,
    seed: 3,
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-not-clone-{}", std::process::id()));
    let config = NotCloneConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..NotClone::config()
    };
    let device = burn::tensor::Device::flex();
    let report = NotClone::with_config(config.clone(), &device).unwrap();
    assert_eq!(report.last_epoch, 2);
    assert_eq!(report.test.as_ref().map(|t| t.values.len()), Some(1));
    // The same samples held as `Clone` items give the same losses bit for bit: the shuffled
    // order and the batches do not depend on how items are held.
    let cloned = ClonedConfig {
        artifacts: dir.join("cloned").to_string_lossy().into_owned(),
        ..Cloned::config()
    };
    let cloned = Cloned::with_config(cloned, &device).unwrap();
    let bits = |losses: Vec<f32>| losses.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let losses = bits(report.history.train_losses());
    assert_eq!(losses.len(), 6, "3 steps in each of 2 epochs");
    assert_eq!(losses, bits(cloned.history.train_losses()));
    let test = NotClone::evaluate(&report.model, Rows(64..80), RowBatcher).unwrap();
    assert_eq!(test.values.len(), 2, "valid.loss and valid.accuracy");
    let outputs = NotClone::predict(&report.model, Rows(64..80), RowBatcher).unwrap();
    assert_eq!(outputs.len(), 1, "one batch of 16");
    let saved = NotClone::test_saved(&config, &device).unwrap();
    assert_eq!(saved.values.len(), 1, "test.accuracy");
    let written = NotClone::predict_saved(&config, &device).unwrap();
    assert!(written.exists(), "{}", written.display());
    std::fs::remove_dir_all(dir).unwrap();
}
