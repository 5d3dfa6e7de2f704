//! What a run writes and how it fails: `metrics.csv`, `config.json`, every metric kind, and clear
//! errors for bad input.

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::output::tensorboard::{EVENTS_FILE, read_scalars};
use burn_experiment::prelude::*;

fn seed_fit(artifacts: &std::path::Path) -> Fit<Classifier> {
    Fit::new(classifier(), SgdConfig::new().init(), 0.1).with_options(|o| {
        o.name = "seed".into();
        o.artifacts = artifacts.to_owned();
        o.epochs = 3;
        o.batch_size = 16;
        o.quiet = true;
    })
}

fn seed_data() -> Data<Sample, SampleBatcher> {
    Data::new(samples(0..96), samples(96..120), SampleBatcher)
}

#[test]
fn metrics_csv_holds_every_step_loss_at_full_precision_and_epoch_rows() {
    let dir = tempfile::tempdir().unwrap();
    let report = seed_fit(dir.path())
        .train_metric(metric::loss())
        .valid_metric(metric::accuracy())
        .run(&device(), seed_data())
        .unwrap();
    assert_eq!(report.run_dir, dir.path().join("seed/run-1"));

    let csv = std::fs::read_to_string(report.run_dir.join("metrics.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("step,epoch,split,metric,value"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let step_losses: Vec<f32> = rows
        .iter()
        .filter(|r| !r[0].is_empty() && r[3] == "loss")
        .map(|r| r[4].parse().unwrap())
        .collect();
    assert_bit_identical(&step_losses, &report.history.train_losses());
    let steps: Vec<usize> = rows
        .iter()
        .filter(|r| !r[0].is_empty() && r[3] == "loss")
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(steps, (1..=18).collect::<Vec<_>>());
    let epoch_accuracy: Vec<f64> = rows
        .iter()
        .filter(|r| r[0].is_empty() && r[2] == "valid" && r[3] == "accuracy")
        .map(|r| r[4].parse().unwrap())
        .collect();
    assert_eq!(
        epoch_accuracy,
        report
            .history
            .get(Split::Valid, "accuracy")
            .unwrap()
            .values()
    );

    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.run_dir.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["epochs"], 3);
    assert_eq!(config["batch_size"], 16);
    assert_eq!(config["metrics"]["valid"][0], "accuracy");
    // The TensorBoard file holds every value of metrics.csv, exactly, at its step or epoch.
    let scalars = read_scalars(&report.run_dir.join(EVENTS_FILE)).unwrap();
    assert_eq!(scalars.len(), rows.len());
    for row in &rows {
        let (tag, step) = match row[0] {
            "" => (format!("epoch/{}/{}", row[2], row[3]), row[1]),
            step => (format!("{}/{}", row[2], row[3]), step),
        };
        let step: i64 = step.parse().unwrap();
        // One format: every value read as f64 is the event file's value, bit for bit.
        let value: f64 = row[4].parse().unwrap();
        assert!(
            scalars
                .iter()
                .any(|s| s.tag == tag && s.step == step && s.value.to_bits() == value.to_bits()),
            "{row:?} is not in the event file"
        );
    }
    // Five files per run, whatever the number of metrics and epochs.
    let mut files: Vec<String> = std::fs::read_dir(&report.run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "config.json",
            "curves.svg",
            "events.out.tfevents.run",
            "metrics.csv",
            "summary.md"
        ]
    );
}

#[test]
fn every_metric_kind_is_driven_and_lands_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let report = seed_fit(dir.path())
        .train_metric(metric::loss())
        .train_metric(metric::learning_rate())
        .valid_metric(metric::accuracy())
        .valid_metric(metric::top_k(2))
        .valid_metric(metric::precision())
        .valid_metric(metric::recall())
        .valid_metric(metric::f1())
        .valid_metric(metric::fbeta(0.5))
        .valid_metric(metric::auroc())
        .valid_metric(metric::perplexity())
        .run(&device(), seed_data())
        .unwrap();
    let last = |split, key| {
        let s = report.history.get(split, key).unwrap();
        assert_eq!(s.epochs.len(), 3, "{key}");
        s.values()[2]
    };
    // The epoch value is the f64 mean of six 0.1s, which rounds to 0.09999999999999999.
    assert!((last(Split::Train, "lr") - 0.1).abs() < 1e-15);
    let acc = last(Split::Valid, "accuracy");
    let top2 = last(Split::Valid, "top_k(2)");
    assert!(acc > 0.0 && top2 >= acc && top2 <= 100.0, "{acc} {top2}");
    for key in ["precision", "recall", "f1", "fbeta(0.5)", "auroc"] {
        let v = last(Split::Valid, key);
        assert!(
            (0.0..=1.0).contains(&v) || (0.0..=100.0).contains(&v),
            "{key} = {v}"
        );
        assert!(v > 0.0, "{key} = {v}");
    }
    assert!(last(Split::Valid, "perplexity") >= 1.0);
    let summary = burn_experiment::output::summary_table(&report.history);
    assert!(summary.contains("| valid | auroc "), "{summary}");
    assert_eq!(summary.lines().count(), 2 + 10);
}

#[test]
fn an_unwritable_run_directory_fails_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let err = seed_fit(&blocker)
        .train_metric(metric::loss())
        .run(&device(), seed_data())
        .err()
        .expect("a file cannot hold a run directory");
    assert!(matches!(err, FitError::RunDir { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("choose another folder: `--artifacts DIR`"),
        "{err}"
    );
}

#[test]
fn bad_options_and_empty_datasets_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = seed_fit(dir.path())
        .with_options(|o| o.batch_size = 0)
        .run(&device(), seed_data())
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "invalid fit option `batch_size`: is 0; it must be a whole number from 1 to 4294967295"
    );
    let err = seed_fit(dir.path())
        .run(
            &device(),
            Data::new(samples(0..96), samples(0..0), SampleBatcher),
        )
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            FitError::EmptyDataset {
                split: Split::Valid
            }
        ),
        "{err}"
    );
    assert!(
        !dir.path().join("seed").exists(),
        "nothing written for a run that cannot start"
    );
}

#[derive(Clone)]
struct PanickyBatcher;

impl burn::data::dataloader::batcher::Batcher<Sample, Batch> for PanickyBatcher {
    fn batch(&self, items: Vec<Sample>, device: &burn::tensor::Device) -> Batch {
        let poisoned = sample(50).x;
        assert!(items.iter().all(|s| s.x != poisoned), "sample out of range");
        SampleBatcher.batch(items, device)
    }
}

#[test]
fn a_panicking_batcher_on_a_worker_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let err = seed_fit(dir.path())
        .with_options(|o| o.workers = 2)
        .train_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), PanickyBatcher),
        )
        .err()
        .expect("the batch holding sample 50 fails");
    let text = err.to_string();
    assert!(
        text.contains("the batcher panicked: sample out of range"),
        "{text}"
    );
}

#[test]
fn a_diverging_run_stops_at_the_first_non_finite_loss() {
    let dir = tempfile::tempdir().unwrap();
    let err = Fit::new(classifier(), SgdConfig::new().init(), 1e30)
        .with_options(|o| {
            o.artifacts = dir.path().to_owned();
            o.epochs = 3;
            o.batch_size = 16;
            o.quiet = true;
        })
        .train_metric(metric::loss())
        .run(&device(), seed_data())
        .err()
        .expect("lr 1e30 diverges");
    let FitError::NonFiniteLoss { epoch, step, value } = err else {
        panic!("unexpected error {err}");
    };
    assert_eq!(epoch, 1);
    assert!(step > 1 && !value.is_finite(), "{step} {value}");
}
