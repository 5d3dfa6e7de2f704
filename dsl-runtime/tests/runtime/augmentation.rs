//! Training-split augmentation: identical across reruns, worker counts and resumes; never
//! applied to validation.

use std::path::Path;

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::checkpoint::{Policy, Resume};
use burn_experiment::data::{Augment, AugmentRng};
use burn_experiment::inference::evaluate::evaluate;
use burn_experiment::prelude::*;
use burn_experiment::rand::RngExt;

/// Uniform noise on every feature.
fn jitter(mut sample: Sample, rng: &mut AugmentRng) -> Sample {
    for x in &mut sample.x {
        *x += rng.random_range(-0.2..0.2);
    }
    sample
}

fn run(
    dir: &Path,
    workers: usize,
    epochs: usize,
    resume: Option<Resume>,
    augment: bool,
) -> FitReport<Classifier> {
    let data = Data::new(samples(0..96), samples(96..120), SampleBatcher);
    let data = if augment {
        data.with_augment(Augment::new(jitter))
    } else {
        data
    };
    Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .with_options(|o| {
            o.artifacts = dir.to_owned();
            o.epochs = epochs;
            o.batch_size = 16;
            o.shuffle = Some(11);
            o.workers = workers;
            o.quiet = true;
            o.checkpoint = Some(vec![Policy::KeepLast { n: 1 }]);
            o.resume = resume;
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(&device(), data)
        .unwrap()
}

#[test]
fn augmented_runs_are_identical_across_reruns_and_worker_counts() {
    let dirs: Vec<_> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
    let reference = run(dirs[0].path(), 0, 3, None, true);
    for (dir, workers) in dirs[1..4].iter().zip([0, 2, 4]) {
        let again = run(dir.path(), workers, 3, None, true);
        assert_bit_identical(
            &again.history.train_losses(),
            &reference.history.train_losses(),
        );
        assert_eq!(
            again.model.mlp.weights(),
            reference.model.mlp.weights(),
            "{workers} workers"
        );
    }
    let plain = run(dirs[4].path(), 0, 3, None, false);
    assert_ne!(
        plain.history.train_losses(),
        reference.history.train_losses(),
        "the items were augmented"
    );
}

#[test]
fn an_augmented_run_resumes_bit_for_bit_and_validates_unaugmented_items() {
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = run(whole_dir.path(), 2, 4, None, true);
    run(dir.path(), 2, 2, None, true);
    let resumed = run(dir.path(), 2, 4, Some(Resume::Latest), true);
    assert_bit_identical(
        &resumed.history.train_losses(),
        &whole.history.train_losses(),
    );
    assert_eq!(resumed.model.mlp.weights(), whole.model.mlp.weights());

    let measured = evaluate(
        &whole.model,
        samples(96..120),
        SampleBatcher,
        16,
        vec![Box::new(metric::loss())],
    )
    .unwrap();
    let validated = whole.history.get(Split::Valid, "loss").unwrap().values();
    assert_eq!(
        validated.last().copied(),
        measured.get("loss"),
        "no noise in validation"
    );
}
