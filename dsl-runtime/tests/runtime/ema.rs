//! The moving average of the weights: against its closed form on one parameter, what
//! validation and checkpoints see, and a resume that continues it bit for bit.

use std::path::Path;

use crate::common::*;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::{Module, Param};
use burn::optim::SgdConfig;
use burn::tensor::{Device, Tensor};
use burn::train::{InferenceStep, RegressionOutput, TrainOutput, TrainStep};
use burn_experiment::checkpoint::{Policy, Resume};
use burn_experiment::inference::evaluate::load_checkpoint;
use burn_experiment::prelude::*;

/// One parameter `w` whose loss is `w` itself: every SGD step at rate `lr` subtracts `lr`.
#[derive(Module, Debug)]
struct Scalar {
    w: Param<Tensor<1>>,
}

impl Scalar {
    fn new(w: f32, device: &Device) -> Self {
        Self {
            w: Param::from_tensor(Tensor::from_floats([w], device)),
        }
    }

    fn value(&self) -> f32 {
        self.w.val().into_scalar::<f32>()
    }

    fn output(&self, items: Tensor<1>) -> RegressionOutput {
        let [n] = items.dims();
        let w = self.w.val();
        RegressionOutput {
            loss: w.clone(),
            output: w.clone().reshape([1, 1]).repeat_dim(0, n),
            targets: items.reshape([n, 1]),
        }
    }
}

impl TrainStep for Scalar {
    type Input = Tensor<1>;
    type Output = RegressionOutput;

    fn step(&self, items: Tensor<1>) -> TrainOutput<RegressionOutput> {
        let out = self.output(items);
        TrainOutput::new(self, out.loss.backward(), out)
    }
}

impl InferenceStep for Scalar {
    type Input = Tensor<1>;
    type Output = RegressionOutput;

    fn step(&self, items: Tensor<1>) -> RegressionOutput {
        self.output(items)
    }
}

#[derive(Clone)]
struct Floats;

impl Batcher<f32, Tensor<1>> for Floats {
    fn batch(&self, items: Vec<f32>, device: &Device) -> Tensor<1> {
        Tensor::from_floats(items.as_slice(), device)
    }
}

#[test]
fn the_average_follows_its_closed_form_and_is_what_validation_measures() {
    let (lr, decay, steps) = (0.25, 0.5, 4);
    let report = Fit::new(Scalar::new(1.0, &device()), SgdConfig::new().init(), lr)
        .with_options(|o| {
            o.ema = Some(decay);
            o.write_files = false;
            o.quiet = true;
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(
            &device(),
            Data::new(
                InMemDataset::new(vec![0.0; steps]),
                InMemDataset::new(vec![0.0]),
                Floats,
            ),
        )
        .unwrap();
    // w_t = 1 − lr·t, e_0 = w_0, e_t = decay·e_{t−1} + (1 − decay)·w_t: every value here is a
    // multiple of 1/64, exact in f32, so the comparison is of bits.
    let mut expected = 1.0_f64;
    for t in 1..=steps {
        expected = decay * expected + (1.0 - decay) * (1.0 - lr * t as f64);
    }
    let averaged = report.averaged.as_ref().unwrap().value();
    assert_eq!(
        averaged.to_bits(),
        (expected as f32).to_bits(),
        "{averaged} vs {expected}"
    );
    assert_eq!(report.model.value(), 0.0, "the raw weight took every step");
    let valid = report.history.get(Split::Valid, "loss").unwrap().values();
    assert_eq!(
        valid,
        [f64::from(averaged)],
        "validation measured the average"
    );
}

fn options(dir: &Path, epochs: usize, resume: Option<Resume>) -> FitOptions {
    FitOptions {
        name: "averaged".into(),
        artifacts: dir.to_owned(),
        epochs,
        batch_size: 16,
        shuffle: Some(5),
        quiet: true,
        ema: Some(0.9),
        checkpoint: Some(vec![Policy::KeepLast { n: 1 }]),
        resume,
        ..FitOptions::default()
    }
}

fn run(options: FitOptions) -> FitReport<Classifier> {
    Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .options(options)
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap()
}

#[test]
fn checkpoints_keep_the_average_and_a_resume_continues_it_bit_for_bit() {
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = run(options(whole_dir.path(), 4, None));
    let averaged = whole.averaged.as_ref().unwrap().mlp.weights();
    assert_ne!(averaged, whole.model.mlp.weights());
    let loaded = load_checkpoint(&whole.run_dir, 4, classifier()).unwrap();
    assert_eq!(
        loaded.mlp.weights(),
        averaged,
        "the checkpoint loads as the average"
    );

    run(options(dir.path(), 2, None));
    let resumed = run(options(dir.path(), 4, Some(Resume::Latest)));
    assert_bit_identical(
        &resumed.history.train_losses(),
        &whole.history.train_losses(),
    );
    assert_eq!(resumed.model.mlp.weights(), whole.model.mlp.weights());
    assert_eq!(resumed.averaged.unwrap().mlp.weights(), averaged);
    assert_eq!(
        resumed.history.get(Split::Valid, "loss").unwrap().values(),
        whole.history.get(Split::Valid, "loss").unwrap().values()
    );
}
