//! The run the fine-tuning tests share: the seed classifier with SGD at 0.1, checkpointing
//! every epoch. Also compiled into `tests/seeded.rs`.

use std::path::Path;

use burn::optim::SgdConfig;
use burn_experiment::checkpoint::Policy;
use burn_experiment::prelude::*;

use crate::common::*;

pub fn options(dir: &Path, epochs: usize) -> FitOptions {
    FitOptions {
        name: "tuned".into(),
        artifacts: dir.to_owned(),
        epochs,
        batch_size: 16,
        quiet: true,
        checkpoint: Some(vec![Policy::KeepLast { n: 5 }]),
        ..FitOptions::default()
    }
}

pub fn run(options: FitOptions) -> Result<FitReport<Classifier>, FitError> {
    Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .options(options)
        .train_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
}
