//! `--verify`: a recorded run rerun from its `config.json` is bit-identical, and a changed
//! dataset is named as the cause when it is not.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::run_device;
use burn::data::dataset::InMemDataset;
use burn::train::ClassificationOutput;
use burn_experiment::app::cli::Args;
use burn_experiment::app::verify::Recorded;
use burn_experiment::prelude::*;
use clap::Parser;
use seed::{Batch, Mlp, Sample, SampleBatcher};

/// Whether training sample 20 (in the second batch) is altered: the dataset "changed on disk"
/// between the recorded run and its verification.
static CHANGED: AtomicBool = AtomicBool::new(false);

fn training_samples() -> InMemDataset<Sample> {
    let mut items: Vec<Sample> = (0..96).map(seed::sample).collect();
    if CHANGED.load(Ordering::SeqCst) {
        items[20].x[0] += 0.25;
    }
    InMemDataset::new(items)
}

training! {
    name: Verified,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: training_samples(),
        valid: seed::samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 3,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(1),
}

training! {
    /// A test split measured on the checkpoint `best(..)` picks: epoch 1 (`batches` is the
    /// same every epoch, and the first best is kept), not the last.
    name: VerifiedWithTest,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: seed::samples(0..96),
        valid: seed::samples(96..120),
        test: seed::samples(120..144),
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 3,
    metrics: [
        train.loss,
        valid.loss,
        valid.metric(batches = crate::common::BatchCount::default()),
        test.loss,
        test.accuracy,
    ],
    checkpoint: keep_last(1) | best(valid.batches),
}

/// `--verify DIR`, as the generated `cli()` runs it: the config resolved from DIR's
/// `config.json`, the run prepared to rerun from its start, then compared.
fn verify(dir: &std::path::Path) -> Result<String, FitError> {
    let args =
        Args::try_parse_from(["verified", "--verify", &dir.to_string_lossy(), "--quiet"]).unwrap();
    let config = args.resolve(&Verified::config()).unwrap();
    let recorded = Recorded::read(dir)?;
    let report = Verified::with_options(config, &run_device(), |options| {
        args.adjust(options);
        recorded.prepare(options);
    })?;
    recorded.check(&report.run_dir, &report.config)
}

#[test]
fn a_rerun_reproduces_and_a_changed_dataset_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = VerifiedConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..Verified::config()
    };
    let report = Verified::with_options(config, &run_device(), |o| o.quiet = true).unwrap();
    let run = report.run_dir;
    let files = || {
        std::fs::read_dir(dir.path().join("verified"))
            .unwrap()
            .count()
    };
    assert_eq!(files(), 1);

    let summary = verify(&run).unwrap();
    assert_eq!(
        summary,
        format!(
            "reproduced {}: 12 steps and 6 epoch values, bit-identical",
            run.display()
        )
    );
    // The verification wrote nothing: no second run, no new checkpoint.
    assert_eq!(files(), 1);

    CHANGED.store(true, Ordering::SeqCst);
    let outcome = verify(&run);
    CHANGED.store(false, Ordering::SeqCst);
    let message = outcome.unwrap_err().to_string();
    // Shuffled with seed 3, sample 20 first lands in some batch of epoch 1; every step
    // before it matches.
    assert!(message.starts_with("not reproduced:"), "{message}");
    assert!(message.contains("train.loss at step "), "{message}");
    assert!(
        message.contains("data `train`: 96 items, hash "),
        "{message}"
    );
    // Only the data differs: not the settings, versions or commit.
    assert!(!message.contains("setting"), "{message}");
    assert!(!message.contains("valid`"), "{message}");
    assert!(!message.contains("git commit"), "{message}");

    // An edited record is never "reproduced": each edit is named by its line.
    let csv = run.join("metrics.csv");
    let original = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let rejoin = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    let last_step = lines.iter().rposition(|l| !l.starts_with(',')).unwrap();
    let mut without_last_step = lines.clone();
    without_last_step.remove(last_step);
    for (edit, text, expected) in [
        (
            "half the lines",
            rejoin(&lines[..lines.len() / 2]),
            "is missing from the record",
        ),
        ("two rows swapped", rejoin(&swapped), "is out of order"),
        (
            "the last step row deleted",
            rejoin(&without_last_step),
            "is missing from the record",
        ),
        (
            "a step renumbered",
            original.replacen("\n2,1,train,loss,", "\n1,1,train,loss,", 1),
            "line 3: train.loss at step 1 (epoch 1) appears again",
        ),
    ] {
        std::fs::write(&csv, text).unwrap();
        let message = verify(&run).expect_err(edit).to_string();
        assert!(message.contains(expected), "{edit}: {message}");
    }
    std::fs::write(&csv, &original).unwrap();
    assert!(verify(&run).is_ok());
}

#[test]
fn a_run_whose_test_split_used_the_best_checkpoint_is_reproduced() {
    let dir = tempfile::tempdir().unwrap();
    let config = VerifiedWithTestConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        ..VerifiedWithTest::config()
    };
    let report = VerifiedWithTest::with_options(config, &run_device(), |o| o.quiet = true).unwrap();
    let run = report.run_dir;
    let csv = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    assert!(
        csv.contains("\n,1,test,loss,"),
        "measured on epoch 1: {csv}"
    );
    assert!(
        csv.contains("\n,3,valid,loss,"),
        "trained to epoch 3: {csv}"
    );

    let args =
        Args::try_parse_from(["verified", "--verify", &run.to_string_lossy(), "--quiet"]).unwrap();
    let config = args.resolve(&VerifiedWithTest::config()).unwrap();
    let recorded = Recorded::read(&run).unwrap();
    let rerun = VerifiedWithTest::with_options(config, &run_device(), |options| {
        args.adjust(options);
        recorded.prepare(options);
    })
    .unwrap();
    let summary = recorded.check(&rerun.run_dir, &rerun.config).unwrap();
    assert!(summary.contains("bit-identical"), "{summary}");
    // The rerun's scratch folder goes with the record; the user's folder holds one run.
    let scratch = rerun.run_dir.clone();
    drop(recorded);
    assert!(!scratch.exists());
    assert_eq!(
        std::fs::read_dir(dir.path().join("verified_with_test"))
            .unwrap()
            .count(),
        1
    );
}
