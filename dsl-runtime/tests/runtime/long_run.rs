//! A long run stays resumable: what a checkpoint's state holds grows with epochs, not steps (the
//! steps' values are in `metrics.csv`), and the process's memory grows by no more than the
//! 8 bytes a step the report's history keeps of its loss.
//!
//! Two runs of two epochs, one of a tenth of the steps of the other, each in a child process
//! (this test binary run again) so that its peak resident memory is its own. The long run has
//! `DSL_LONG_RUN_STEPS` steps (10 000 by default; `.ci/run` trains 1 000 000 in an optimised
//! build).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use crate::common::*;
use burn::data::dataset::Dataset;
use burn::optim::SgdConfig;
use burn::tensor::Device;
use burn_experiment::checkpoint::Policy;
use burn_experiment::prelude::*;

const CHILD: &str = "DSL_LONG_RUN_CHILD";

/// The seed's samples, made when asked: a dataset of a million items that holds none, so the
/// run's memory is the loop's.
struct Generated(usize);

impl Dataset<Sample> for Generated {
    fn get(&self, index: usize) -> Result<Sample, burn::data::dataset::DatasetError> {
        assert!(index < self.0, "index {index} of {}", self.0);
        Ok(sample(index))
    }

    fn len(&self) -> usize {
        self.0
    }
}

/// Two epochs of `steps / 2` batches of one sample, checkpointed after each, on flex whatever
/// `DSL_TEST_DEVICE` says: what is measured is the loop's state and memory, not a device's.
fn train(dir: &Path, steps: usize) {
    let device = Device::flex().autodiff();
    let model = Classifier {
        mlp: Mlp::new(3, &device),
    };
    Fit::new(model, SgdConfig::new().init(), 1e-3)
        .options(FitOptions {
            name: "long".into(),
            artifacts: dir.to_owned(),
            epochs: 2,
            batch_size: 1,
            quiet: true,
            checkpoint: Some(vec![Policy::KeepLast { n: 1 }]),
            ..FitOptions::default()
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(
            &device,
            Data::new(Generated(steps / 2), Generated(8), SampleBatcher),
        )
        .unwrap();
}

/// What a child run of `steps` steps left: its final state file's size and its peak resident
/// memory in bytes.
fn measured(steps: usize) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by `wait4` below, which also reports its peak memory"
    )]
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "long_run::state_and_memory_stay_flat_over_a_long_run",
        ])
        .env(CHILD, format!("{steps}"))
        .env("DSL_LONG_RUN_DIR", dir.path())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value; `wait4` fills it for this child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    assert!(
        std::process::ExitStatus::from_raw(status).success(),
        "the child run failed"
    );
    let run_dir = dir.path().join("long/run-1");
    let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + steps + 2 * 2,
        "every step's row is there"
    );
    let state = std::fs::metadata(run_dir.join("checkpoint/state-2.json")).unwrap();
    (state.len(), usage.ru_maxrss as u64 * 1024)
}

#[test]
fn state_and_memory_stay_flat_over_a_long_run() {
    if let Ok(steps) = std::env::var(CHILD) {
        let dir = std::env::var("DSL_LONG_RUN_DIR").unwrap();
        train(Path::new(&dir), steps.parse().unwrap());
        return;
    }
    let long: usize = std::env::var("DSL_LONG_RUN_STEPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let short = long / 10;
    let (short_state, short_rss) = measured(short);
    let (long_state, long_rss) = measured(long);
    println!(
        "{short} steps: state-2.json {short_state} B, peak RSS {} KiB; {long} steps: state-2.json {long_state} B, peak RSS {} KiB",
        short_rss / 1024,
        long_rss / 1024
    );
    // The same settings and epochs: the state files differ only in the digits of numbers.
    assert!(
        long_state.abs_diff(short_state) < 100,
        "{short_state} vs {long_state}"
    );
    // The history's losses (8 bytes a step, up to twice that while its vector grows), and
    // 8 MiB for the allocator's own variation.
    let allowed = 3 * 8 * (long - short) as u64 + (8 << 20);
    assert!(
        long_rss.saturating_sub(short_rss) <= allowed,
        "peak RSS {short_rss} -> {long_rss} bytes, more than {allowed} apart"
    );
}
