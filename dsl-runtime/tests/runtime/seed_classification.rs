//! `Fit` against a hand-written Burn loop on the seed classification task: 120 samples, 96 to
//! train, 24 to validate, batch 16, MLP 4→16→3, 3 epochs = 18 steps.

use crate::common::*;
use burn::optim::{AdamConfig, SgdConfig};
use burn_experiment::prelude::*;

fn setup(shuffle: Option<u64>, grad_accumulation: usize) -> HandSetup {
    HandSetup {
        train: 0..96,
        valid: 96..120,
        batch_size: 16,
        epochs: 3,
        shuffle,
        grad_accumulation,
        regression: false,
    }
}

fn fit(
    setup: &HandSetup,
    optimizer: burn::optim::ModuleOptimizer,
    lr: f64,
    workers: usize,
    artifacts: &std::path::Path,
) -> FitReport<Classifier> {
    Fit::new(classifier(), optimizer, lr)
        .with_options(|o| {
            o.name = "seed".into();
            o.artifacts = artifacts.to_owned();
            o.epochs = setup.epochs;
            o.batch_size = setup.batch_size;
            o.shuffle = setup.shuffle;
            o.workers = workers;
            o.grad_accumulation = (setup.grad_accumulation > 1).then_some(setup.grad_accumulation);
            o.quiet = true;
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .valid_metric(metric::accuracy())
        .run(
            &device(),
            Data::new(
                samples(setup.train.clone()),
                samples(setup.valid.clone()),
                SampleBatcher,
            ),
        )
        .expect("fit runs")
}

fn valid(report: &FitReport<Classifier>, metric: &str) -> Vec<f64> {
    report.history.get(Split::Valid, metric).unwrap().values()
}

#[test]
fn sgd_in_dataset_order_is_bit_identical_to_the_hand_loop() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(None, 1);
    let hand = hand_loop(&setup, mlp(3), SgdConfig::new().init(), 0.1.into());
    let report = fit(&setup, SgdConfig::new().init(), 0.1, 0, dir.path());

    let losses = report.history.train_losses();
    println!("step  fit         hand");
    for (i, (a, b)) in losses.iter().zip(&hand.losses).enumerate() {
        println!("{i:>4}  {a:.8}  {b:.8}");
    }
    assert_eq!(losses.len(), 18);
    assert_bit_identical(&losses, &hand.losses);
    assert_eq!(valid(&report, "accuracy"), hand.valid_accuracy);
    assert_eq!(valid(&report, "loss"), hand.valid_loss);
    assert_eq!(report.model.mlp.weights(), hand.weights);
    println!("valid accuracy {:?}", hand.valid_accuracy);
    println!("valid loss (sample-weighted) {:?}", hand.valid_loss);
}

#[test]
fn adam_shuffled_is_bit_identical_for_0_2_and_4_workers() {
    let setup = setup(Some(7), 1);
    let hand = hand_loop(&setup, mlp(3), AdamConfig::new().init(), 1e-2.into());
    let unshuffled = hand_loop(
        &HandSetup {
            shuffle: None,
            ..self::setup(None, 1)
        },
        mlp(3),
        AdamConfig::new().init(),
        1e-2.into(),
    );
    assert_ne!(
        hand.losses, unshuffled.losses,
        "shuffling changes the order"
    );
    for workers in [0, 2, 4] {
        let dir = tempfile::tempdir().unwrap();
        let report = fit(&setup, AdamConfig::new().init(), 1e-2, workers, dir.path());
        assert_bit_identical(&report.history.train_losses(), &hand.losses);
        assert_eq!(
            valid(&report, "accuracy"),
            hand.valid_accuracy,
            "{workers} workers"
        );
        assert_eq!(
            report.model.mlp.weights(),
            hand.weights,
            "{workers} workers"
        );
    }
}

#[test]
fn gradient_accumulation_matches_a_hand_loop_summing_two_batches() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(None, 2);
    let hand = hand_loop(&setup, mlp(3), SgdConfig::new().init(), 0.1.into());
    let plain = hand_loop(
        &self::setup(None, 1),
        mlp(3),
        SgdConfig::new().init(),
        0.1.into(),
    );
    assert_ne!(hand.weights, plain.weights, "accumulation changes training");
    let report = fit(&setup, SgdConfig::new().init(), 0.1, 0, dir.path());
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(report.model.mlp.weights(), hand.weights);
}

#[test]
fn a_resumed_run_equals_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let three = fit(
        &setup(Some(3), 1),
        AdamConfig::new().init(),
        1e-2,
        0,
        dir.path(),
    );

    let first = fit(
        &HandSetup {
            epochs: 2,
            ..setup(Some(3), 1)
        },
        AdamConfig::new().init(),
        1e-2,
        0,
        dir.path(),
    );
    let options = FitOptions {
        name: "seed".into(),
        artifacts: dir.path().to_owned(),
        epochs: 3,
        batch_size: 16,
        shuffle: Some(3),
        quiet: true,
        ..FitOptions::default()
    };
    let first_dir = first.run_dir.clone();
    let mut losses = first.history.train_losses();
    let rest = first
        .resume(options)
        .train_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap();
    assert_eq!(
        rest.history.get(Split::Train, "loss").unwrap().epochs[0].0,
        3
    );
    losses.extend(rest.history.train_losses());
    assert_bit_identical(&losses, &three.history.train_losses());
    assert_eq!(rest.model.mlp.weights(), three.model.mlp.weights());
    // The run directory's record holds both parts: the continued run appends to it.
    assert_eq!(rest.run_dir, first_dir);
    let csv = std::fs::read_to_string(rest.run_dir.join("metrics.csv")).unwrap();
    let recorded: Vec<f32> = csv
        .lines()
        .filter(|l| !l.starts_with(',') && l.contains(",train,loss,"))
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_bit_identical(&recorded, &losses);
}
