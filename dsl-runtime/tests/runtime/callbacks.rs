//! Callbacks: what the hooks see, that they change nothing, stopping, and resuming their state.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::checkpoint::{Policy, Resume};
use burn_experiment::prelude::*;

fn options(dir: &Path, epochs: usize, resume: Option<Resume>) -> FitOptions {
    FitOptions {
        name: "callbacks".into(),
        artifacts: dir.to_owned(),
        epochs,
        batch_size: 16,
        shuffle: Some(3),
        quiet: true,
        checkpoint: Some(vec![Policy::KeepLast { n: 1 }]),
        resume,
        ..FitOptions::default()
    }
}

fn fit(options: FitOptions) -> Fit<Classifier> {
    Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .options(options)
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
}

fn data() -> Data<Sample, SampleBatcher> {
    Data::new(samples(0..96), samples(96..120), SampleBatcher)
}

/// Writes down every hook call.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<String>>>,
    steps: Arc<Mutex<Vec<StepEnd>>>,
    valid_losses: Arc<Mutex<Vec<f64>>>,
}

impl Callback for Recorder {
    fn run_start(&mut self, run: &RunStart<'_>) -> Control {
        let event = format!("run_start {}..={}", run.first_epoch, run.last_epoch);
        self.events.lock().unwrap().push(event);
        Control::Continue
    }
    fn epoch_start(&mut self, epoch: usize) -> Control {
        self.events
            .lock()
            .unwrap()
            .push(format!("epoch_start {epoch}"));
        Control::Continue
    }
    fn step_end(&mut self, step: &StepEnd) -> Control {
        self.steps.lock().unwrap().push(*step);
        Control::Continue
    }
    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        self.events
            .lock()
            .unwrap()
            .push(format!("epoch_end {}", end.epoch));
        let loss = end.value(Split::Valid, "loss").unwrap();
        self.valid_losses.lock().unwrap().push(loss);
        Control::Continue
    }
    fn run_end(&mut self, end: &RunEnd<'_>) {
        let event = format!("run_end {} {:?}", end.last_epoch, end.stopped);
        self.events.lock().unwrap().push(event);
    }
}

#[test]
fn hooks_see_every_optimizer_step_and_epoch_and_change_no_bit() {
    let (plain_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let plain = fit(options(plain_dir.path(), 2, None))
        .run(&device(), data())
        .unwrap();
    let recorder = Recorder::default();
    let watched = fit(options(dir.path(), 2, None))
        .callback(recorder.clone())
        .run(&device(), data())
        .unwrap();
    assert_bit_identical(
        &watched.history.train_losses(),
        &plain.history.train_losses(),
    );
    assert_eq!(watched.model.mlp.weights(), plain.model.mlp.weights());

    assert_eq!(
        *recorder.events.lock().unwrap(),
        [
            "run_start 1..=2",
            "epoch_start 1",
            "epoch_end 1",
            "epoch_start 2",
            "epoch_end 2",
            "run_end 2 None"
        ]
    );
    let steps = recorder.steps.lock().unwrap();
    assert_eq!(
        steps.iter().map(|s| (s.epoch, s.step)).collect::<Vec<_>>(),
        (1..=12).map(|s| ((s - 1) / 6 + 1, s)).collect::<Vec<_>>()
    );
    let step_losses: Vec<f32> = steps.iter().map(|s| s.loss.unwrap() as f32).collect();
    assert_bit_identical(&step_losses, &plain.history.train_losses());
    assert!(steps.iter().all(|s| s.lr == 0.1));
    let valid = plain.history.get(Split::Valid, "loss").unwrap().values();
    assert_eq!(*recorder.valid_losses.lock().unwrap(), valid);
}

/// Stops once `epoch` is validated.
struct StopAt(usize);

impl Callback for StopAt {
    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        if end.epoch == self.0 {
            Control::Stop(format!("enough at epoch {}", end.epoch))
        } else {
            Control::Continue
        }
    }
}

#[test]
fn a_stop_ends_the_run_after_that_epoch_with_its_reason_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::default();
    let report = fit(options(dir.path(), 5, None))
        .callback(StopAt(2))
        .callback(recorder.clone())
        .run(&device(), data())
        .unwrap();
    assert_eq!(report.last_epoch, 2);
    assert_eq!(report.stopped.as_deref(), Some("enough at epoch 2"));
    assert_eq!(report.history.train_losses().len(), 12);
    // Later callbacks still see the epoch, and the end of the run with the reason.
    assert_eq!(
        recorder.events.lock().unwrap().last().unwrap(),
        "run_end 2 Some(\"enough at epoch 2\")"
    );
    let summary = std::fs::read_to_string(report.run_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("stopped by a callback: enough at epoch 2"),
        "{summary}"
    );
    assert!(report.run_dir.join("checkpoint/state-2.json").exists());
}

/// Counts optimizer steps and sums their losses: state a resumed run must continue.
#[derive(Clone, Default)]
struct Tally {
    seen: Arc<Mutex<(u64, f64)>>,
}

impl Callback for Tally {
    fn step_end(&mut self, step: &StepEnd) -> Control {
        let mut seen = self.seen.lock().unwrap();
        seen.0 += 1;
        seen.1 += step.loss.unwrap();
        Control::Continue
    }
    fn save(&self) -> Option<serde_json::Value> {
        let (count, sum) = *self.seen.lock().unwrap();
        Some(serde_json::json!({ "count": count, "sum_bits": sum.to_bits() }))
    }
    fn restore(&mut self, state: serde_json::Value) -> Result<(), String> {
        let count = state["count"].as_u64().ok_or("no count")?;
        let sum = state["sum_bits"].as_u64().ok_or("no sum")?;
        *self.seen.lock().unwrap() = (count, f64::from_bits(sum));
        Ok(())
    }
}

#[test]
fn a_stateful_callback_resumes_bit_identically() {
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = Tally::default();
    fit(options(whole_dir.path(), 4, None))
        .callback(whole.clone())
        .run(&device(), data())
        .unwrap();
    let first = Tally::default();
    fit(options(dir.path(), 2, None))
        .callback(first.clone())
        .run(&device(), data())
        .unwrap();
    assert_eq!(first.seen.lock().unwrap().0, 12);
    let resumed = Tally::default();
    let report = fit(options(dir.path(), 4, Some(Resume::Latest)))
        .callback(resumed.clone())
        .run(&device(), data())
        .unwrap();
    assert_eq!(report.history.train_losses().len(), 24);
    let (count, sum) = *resumed.seen.lock().unwrap();
    let (whole_count, whole_sum) = *whole.seen.lock().unwrap();
    assert_eq!(count, 24, "the count went on from the checkpoint's 12");
    assert_eq!(count, whole_count);
    assert_eq!(sum.to_bits(), whole_sum.to_bits());

    let Err(err) = fit(options(dir.path(), 5, Some(Resume::Latest)))
        .callback(Tally::default())
        .callback(Tally::default())
        .run(&device(), data())
    else {
        panic!("resumed with another number of callbacks");
    };
    assert!(
        err.to_string()
            .contains("holds the state of 1 callbacks, this run has 2"),
        "{err}"
    );
}

/// Reads `valid.<metric>` at each epoch's end.
struct Reads(&'static str);

impl Callback for Reads {
    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        let _ = end.value(Split::Valid, self.0);
        Control::Continue
    }
}

/// A callback reading a metric the run does not record (a typo) would get `None` forever: the
/// run ends after the first epoch, saved, with an error that names the recorded metrics and
/// the likely one; a metric that is recorded changes nothing.
#[test]
fn a_callback_asking_for_an_unrecorded_metric_ends_the_run_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let error = fit(options(dir.path(), 3, None))
        .valid_metric(metric::accuracy())
        .callback(Reads("acuracy"))
        .run(&device(), data())
        .err()
        .expect("a run whose callback reads an unrecorded metric fails");
    let message = error.to_string();
    for part in [
        "a callback asked `EpochEnd::value` for `valid.acuracy`, which this run does not record",
        "did you mean `valid.accuracy`?",
        "train.loss, valid.loss, valid.accuracy",
        "`metrics: [..]`",
    ] {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }
    let run = dir.path().join("callbacks/run-1");
    let csv = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    assert!(csv.contains(",1,valid,loss,"), "epoch 1 is recorded: {csv}");
    assert!(!csv.contains(",2,valid,"), "no epoch 2: {csv}");
    assert!(
        run.join("checkpoint/state-1.json").exists(),
        "epoch 1 is saved before the error"
    );

    let read = tempfile::tempdir().unwrap();
    let report = fit(options(read.path(), 2, None))
        .valid_metric(metric::accuracy())
        .callback(Reads("accuracy"))
        .run(&device(), data())
        .unwrap();
    assert_eq!(report.last_epoch, 2);
}
