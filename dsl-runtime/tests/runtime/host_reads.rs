//! Host reads: the loss read `read_every` steps at a time, every step's value still written
//! bit for bit, and the count per epoch bounded (on wgpu in `.ci/run`, as on flex here).

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::prelude::*;

/// 24 training steps and 6 validation batches an epoch.
const TRAIN_STEPS: u64 = 24;
const VALID_STEPS: u64 = 6;

fn fit(dir: &Path, read_every: usize, lr: f64) -> Fit<Classifier> {
    Fit::new(classifier(), SgdConfig::new().init(), lr)
        .with_options(|o| {
            o.name = "reads".into();
            o.artifacts = dir.to_owned();
            o.epochs = 2;
            o.batch_size = 4;
            o.shuffle = Some(5);
            o.quiet = true;
            o.read_every = read_every;
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
}

fn data() -> Data<Sample, SampleBatcher> {
    Data::new(samples(0..96), samples(96..120), SampleBatcher)
}

fn metrics_csv(run_dir: &Path) -> String {
    std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap()
}

/// The reads of one epoch of [`fit`]: the training losses `k` at a time, the validation
/// losses likewise, and the check of the weights at the epoch's end.
fn bound(k: u64) -> u64 {
    TRAIN_STEPS.div_ceil(k) + VALID_STEPS.div_ceil(k) + 1
}

#[test]
fn losses_read_k_steps_at_a_time_write_every_step_bit_for_bit() {
    let each = tempfile::tempdir().unwrap();
    let every_step = fit(each.path(), 1, 0.1).run(&device(), data()).unwrap();
    assert_eq!(every_step.host_reads, [bound(1), bound(1)]);
    let setup = HandSetup {
        train: 0..96,
        valid: 96..120,
        batch_size: 4,
        epochs: 2,
        shuffle: Some(5),
        grad_accumulation: 1,
        regression: false,
    };
    let hand = hand_loop(&setup, mlp(3), SgdConfig::new().init(), 0.1.into());
    assert_bit_identical(&every_step.history.train_losses(), &hand.losses);
    // 5 divides neither split's batch count; 32 is more than an epoch; the default is 32.
    for k in [5, 32] {
        let dir = tempfile::tempdir().unwrap();
        let report = fit(dir.path(), k, 0.1).run(&device(), data()).unwrap();
        assert_eq!(
            report.host_reads,
            [bound(k as u64), bound(k as u64)],
            "read every {k} steps"
        );
        assert_bit_identical(&report.history.train_losses(), &hand.losses);
        assert_eq!(
            metrics_csv(&report.run_dir),
            metrics_csv(&every_step.run_dir),
            "read every {k} steps, every row the same"
        );
        let summary = std::fs::read_to_string(report.run_dir.join("summary.md")).unwrap();
        assert!(
            summary.contains(&format!(
                "host reads: {} per epoch (losses read {k} steps at a time",
                bound(k as u64)
            )),
            "{summary}"
        );
    }
    assert_eq!(FitOptions::default().read_every, 32);
}

#[test]
fn a_non_finite_loss_read_later_names_its_own_step_and_keeps_the_rows_before_it() {
    let diverge = |k| {
        let dir = tempfile::tempdir().unwrap();
        let err = fit(dir.path(), k, 1e30)
            .run(&device(), data())
            .err()
            .expect("lr 1e30 diverges");
        let FitError::NonFiniteLoss { epoch, step, .. } = err else {
            panic!("unexpected error {err}");
        };
        (epoch, step, metrics_csv(&dir.path().join("reads/run-1")))
    };
    let (epoch, step, rows) = diverge(1);
    assert!(step > 1, "diverges after the first step: {step}");
    assert_eq!(diverge(32), (epoch, step, rows.clone()));
    assert_eq!(diverge(5), (epoch, step, rows.clone()));
    let last = rows.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("{step},")),
        "the bad step's row is the last: {last}"
    );
}

/// Writes down each step a callback hears of.
#[derive(Clone, Default)]
struct Steps(Arc<Mutex<Vec<StepEnd>>>);

impl Callback for Steps {
    fn step_end(&mut self, step: &StepEnd) -> Control {
        self.0.lock().unwrap().push(*step);
        Control::Continue
    }
}

#[test]
fn with_callbacks_every_step_is_read_before_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let steps = Steps::default();
    let report = fit(dir.path(), 32, 0.1)
        .callback(steps.clone())
        .run(&device(), data())
        .unwrap();
    assert_eq!(report.host_reads, [bound(1), bound(1)]);
    let heard: Vec<f32> = steps
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.loss.unwrap() as f32)
        .collect();
    assert_bit_identical(&heard, &report.history.train_losses());
    let summary = std::fs::read_to_string(report.run_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("losses read 1 step at a time"),
        "{summary}"
    );
}
