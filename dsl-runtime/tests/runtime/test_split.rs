//! The test split: measured on the checkpoint `best(..)` chose, else on the last model, and
//! written next to the training figures; custom metrics in `best(..)` and the CSV.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::checkpoint::Policy;
use burn_experiment::fit::{TestPlan, TestSplit};
use burn_experiment::inference::evaluate::{evaluate, load_checkpoint};
use burn_experiment::prelude::*;

fn options(dir: &Path, best: Option<&str>) -> FitOptions {
    let mut checkpoint = vec![Policy::KeepLast { n: 1 }];
    if let Some(metric) = best {
        checkpoint.push(Policy::Best {
            split: Split::Valid,
            metric: metric.into(),
        });
    }
    FitOptions {
        name: "tested".into(),
        artifacts: dir.to_owned(),
        epochs: 3,
        batch_size: 16,
        quiet: true,
        checkpoint: Some(checkpoint),
        ..FitOptions::default()
    }
}

fn test_split() -> TestSplit<Sample, Classifier> {
    TestSplit {
        dataset: Arc::new(samples(120..160)),
        batcher: Arc::new(SampleBatcher),
        metrics: vec![Box::new(metric::loss()), Box::new(metric::accuracy())],
    }
}

fn trained(options: &FitOptions) -> FitReport<Classifier> {
    Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .options(options.clone())
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .valid_metric(metric::Tracked::new("batches", BatchCount::default()))
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap()
}

fn independently(model: &Classifier) -> Evaluation {
    evaluate(
        model,
        samples(120..160),
        SampleBatcher,
        16,
        vec![Box::new(metric::loss()), Box::new(metric::accuracy())],
    )
    .unwrap()
}

#[test]
fn the_best_checkpoint_is_measured_and_written_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // `batches` is 2 in every epoch, so `best` keeps epoch 1 while training goes on to 3.
    let options = options(dir.path(), Some("batches"));
    let report = trained(&options);
    assert_eq!(report.last_epoch, 3);
    let batches = report.history.get(Split::Valid, "batches").unwrap();
    assert_eq!(batches.values(), [2.0, 2.0, 2.0]);
    let last = independently(&report.model);
    let report = report.test(&TestPlan::new(&options), test_split()).unwrap();

    let test = report.test.clone().unwrap();
    assert_eq!(test.epoch, Some(1));
    let first = load_checkpoint(&report.run_dir, 1, classifier()).unwrap();
    assert_eq!(test.values, independently(&first).values);
    assert_ne!(test.values, last.values, "not the last epoch's model");

    let loss = report.history.get(Split::Test, "loss").unwrap();
    assert_eq!(loss.epochs, [(1, test.get("loss").unwrap())]);
    let csv = std::fs::read_to_string(report.run_dir.join("metrics.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| l.contains(",test,")).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(rows[0].starts_with(",1,test,loss,"), "{csv}");
    assert!(
        csv.contains(",3,valid,batches,2\n"),
        "the custom metric's rows: {csv}"
    );
    let summary = std::fs::read_to_string(report.run_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Test (checkpoint of epoch 1)"),
        "{summary}"
    );
    assert!(summary.contains("| accuracy |"), "{summary}");
    // The rest of the record names the split too: the event file holds its values exactly,
    // and config.json lists its metrics.
    let scalars = burn_experiment::output::tensorboard::read_scalars(
        &report
            .run_dir
            .join(burn_experiment::output::tensorboard::EVENTS_FILE),
    )
    .unwrap();
    for (key, value) in &test.values {
        let tag = format!("epoch/test/{key}");
        assert!(
            scalars
                .iter()
                .any(|s| s.tag == tag && s.step == 1 && s.value.to_bits() == value.to_bits()),
            "{tag} is not in the event file"
        );
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.run_dir.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(
        config["metrics"]["test"],
        serde_json::json!(["loss", "accuracy"])
    );
    assert_eq!(report.config["metrics"]["test"], config["metrics"]["test"]);
}

#[test]
fn without_best_the_last_model_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path(), None);
    let report = trained(&options);
    let last = independently(&report.model);
    let report = report.test(&TestPlan::new(&options), test_split()).unwrap();
    let test = report.test.unwrap();
    assert_eq!(test.epoch, Some(3));
    assert_eq!(test.values, last.values);
}

#[test]
fn an_empty_test_split_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path(), None);
    let split = TestSplit {
        dataset: Arc::new(samples(0..0)),
        ..test_split()
    };
    let Err(err) = trained(&options).test(&TestPlan::new(&options), split) else {
        panic!("an empty test split was measured");
    };
    assert_eq!(
        err.to_string(),
        "the test dataset is empty: give it at least one sample"
    );
}
