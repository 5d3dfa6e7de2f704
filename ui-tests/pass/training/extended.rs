//! A metric of the user's own, catalogue metrics added from Burn, a callback and a test split;
//! then `test_saved`, `predict`, `predict_saved` and `export_saved` on the saved run.
use std::sync::Arc;

use burn::tensor::TensorReadError;
use burn::train::ClassificationOutput;
use burn::train::metric::{
    Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes,
    NumericEntry, SerializedEntry,
};
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// Batches per epoch: reads nothing of the output (`()` input).
#[derive(Clone, Default)]
struct Batches {
    count: usize,
}

impl Batches {
    fn entry(&self) -> SerializedEntry {
        SerializedEntry::new(self.count.to_string(), self.count.to_string())
    }
}

impl Metric for Batches {
    type Input = ();

    fn name(&self) -> MetricName {
        Arc::new("Batches".to_owned())
    }

    fn attributes(&self) -> MetricAttributes {
        NumericAttributes {
            unit: None,
            higher_is_better: false,
        }
        .into()
    }

    fn update(&mut self, _: &(), _: &MetricMetadata) -> Result<SerializedEntry, TensorReadError> {
        self.count += 1;
        Ok(self.entry())
    }

    fn compute(&mut self) -> Result<SerializedEntry, TensorReadError> {
        Ok(self.entry())
    }

    fn clear(&mut self) {
        self.count = 0;
    }
}

impl Numeric for Batches {
    fn value(&self) -> Option<NumericEntry> {
        Some(NumericEntry::Value(self.count as f64))
    }

    fn running_value(&self) -> Option<NumericEntry> {
        self.value()
    }

    fn final_value(&self) -> NumericEntry {
        NumericEntry::Final(self.count as f64)
    }
}

/// Stops after epoch `at`.
struct StopAfter {
    at: usize,
}

impl Callback for StopAfter {
    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        if end.epoch == self.at {
            Control::Stop(format!("epoch {} done", end.epoch))
        } else {
            Control::Continue
        }
    }
}

training! {
    name: Extended,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..64),
        valid: samples(64..96),
        test: samples(96..136),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 4,
    metrics: [
        train.loss, train.iteration_speed, valid.loss, valid.auc_pr,
        valid.metric(batches = Batches::default()),
        test.loss, test.accuracy, test.metric(batches = Batches::default()),
    ],
    callbacks: [StopAfter { at: 2 }],
    checkpoint: keep_last(1) | best(valid.batches),
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-extended-{}", std::process::id()));
    let config = || ExtendedConfig {
        artifacts: dir.to_string_lossy().into_owned(),
        ..Extended::config()
    };
    let device = burn::tensor::Device::flex();
    let report = Extended::with_config(config(), &device).unwrap();
    assert_eq!(report.last_epoch, 2, "the callback stopped the run");
    assert_eq!(report.stopped.as_deref(), Some("epoch 2 done"));
    let batches = report.history.get(Split::Valid, "batches").unwrap();
    assert_eq!(batches.values(), [2.0, 2.0], "32 samples in batches of 16");
    // Equal in every epoch, so `best` keeps the first; the test split is measured on it.
    let test = report.test.as_ref().unwrap();
    assert_eq!(test.epoch, Some(1));
    assert_eq!(test.get("batches"), Some(3.0), "40 samples in batches of 16");
    let again = Extended::test_saved(&config(), &device).unwrap();
    assert_eq!(again.values, test.values);

    let (_, model) = Extended::load_best_with(&config(), &device).unwrap();
    let outputs = Extended::predict(&model, samples(0..20), SampleBatcher).unwrap();
    assert_eq!(outputs.iter().map(|o| o.targets.dims()[0]).collect::<Vec<_>>(), [16, 4]);
    let csv = Extended::predict_saved(&config(), &device).unwrap();
    let rows = std::fs::read_to_string(csv).unwrap();
    assert_eq!(rows.lines().count(), 41, "a header and the 40 test samples");
    let file = dir.join("weights.safetensors");
    Extended::export_saved(&config(), &file, &device).unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() > 0);
    std::fs::remove_dir_all(dir).unwrap();
}
