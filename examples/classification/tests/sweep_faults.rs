//! A sweep stopped as clusters and users stop it (`kill -9`, a SIGTERM to the sweep alone),
//! then run again with the same command: it goes on where it stopped, each trial's run holding
//! every epoch once. Several seconds of training each: run by `.ci/run` (feature
//! `sweep-faults`), not by the README's test command.

mod sweep;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use sweep::sweep_dir;

const BIN: &str = env!("CARGO_BIN_EXE_classification");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the example runs")
}

/// The sweep started with `args`, its output dropped, once `ready` holds (within 2 minutes).
fn started_until(args: &[&str], ready: impl Fn() -> bool) -> Child {
    let mut sweep = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready() {
        assert!(Instant::now() < deadline, "the sweep never got there");
        assert!(sweep.try_wait().unwrap().is_none(), "the sweep ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
    sweep
}

/// The epochs of `run`'s validation losses, in `metrics.csv`'s order.
fn valid_epochs(run: &Path) -> Vec<u64> {
    std::fs::read_to_string(run.join("metrics.csv"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(",valid,loss,"))
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect()
}

/// A sweep killed with `kill -9` in its second trial: the first trial is not trained again,
/// the second goes on from its checkpoint in its own run, and no run is left that no trial
/// names.
#[test]
fn a_sweep_killed_with_9_goes_on_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let args = [
        "--sweep",
        "lr=0.05,0.1",
        "--epochs",
        "150",
        "--artifacts",
        artifacts,
    ];
    let second = dir.path().join("three_class/run-2");
    // Killed once the second trial's run has a checkpoint (its `state-N.json` written last).
    let mut sweep = started_until(&args, || {
        std::fs::read_dir(second.join("checkpoint")).is_ok_and(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with("state-"))
        })
    });
    sweep.kill().unwrap();
    sweep.wait().unwrap();
    let out = run(&args);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("sweep: trial 0 of 2 finished earlier"),
        "{said}"
    );
    let log = std::fs::read_to_string(sweep_dir(dir.path()).join("trial-1.log")).unwrap();
    assert!(log.contains("resuming after epoch"), "{log}");
    let runs = std::fs::read_dir(dir.path().join("three_class"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("run-")
        })
        .count();
    assert_eq!(runs, 2, "a run per trial");
    assert_eq!(valid_epochs(&second), (1..=150).collect::<Vec<u64>>());
    let table = std::fs::read_to_string(sweep_dir(dir.path()).join("sweep.csv")).unwrap();
    assert_eq!(table.lines().count(), 3, "{table}");
}

/// A SIGTERM to the sweep process alone reaches the trial training after the 2 s grace: it
/// stops where it is, saved, and the sweep exits with 130; the same command then finishes it.
#[test]
fn a_sigterm_to_the_sweep_alone_is_passed_on_and_the_sweep_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    // One trial, long enough to outlive the grace (about 7 ms an epoch in a debug build).
    let args = [
        "--sweep",
        "lr=0.05",
        "--epochs",
        "800",
        "--quiet",
        "--artifacts",
        artifacts,
    ];
    let first = dir.path().join("three_class/run-1");
    let mut sweep = started_until(&args, || first.join("metrics.csv").exists());
    let sent = Command::new("kill")
        .args(["-TERM", &sweep.id().to_string()])
        .status();
    assert!(sent.unwrap().success());
    assert_eq!(sweep.wait().unwrap().code(), Some(130));
    assert!(
        !sweep_dir(dir.path()).join("trial-0.json").exists(),
        "the trial stopped before its end"
    );
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(valid_epochs(&first), (1..=800).collect::<Vec<u64>>());
}
