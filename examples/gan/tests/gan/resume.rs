//! The GAN as a child process, killed (SIGKILL) or stopped (SIGTERM) mid-run, then resumed:
//! with two optimizers' states in its checkpoints, every resumed run ends with the files and
//! weights of an uninterrupted one, bit for bit.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use burn::tensor::Device;
use gan::{RingGan, RingGanConfig};

const EPOCHS: &str = "3";

fn spawn(artifacts: &Path, resume: bool) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gan"));
    command
        .arg("--artifacts")
        .arg(artifacts)
        .args(["--epochs", EPOCHS]);
    if resume {
        command.args(["--resume", "latest"]);
    }
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts")
}

fn finish(child: Child) -> Output {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// What must be identical: every step's row of `metrics.csv`, and both players' final weights.
#[derive(Debug, PartialEq)]
struct Outcome {
    metrics_csv: String,
    generator: Vec<u32>,
    discriminator: Vec<u32>,
}

fn outcome(artifacts: &Path) -> Outcome {
    let config = RingGanConfig {
        artifacts: artifacts.to_string_lossy().into_owned(),
        ..RingGan::config()
    };
    let model = RingGan::load_with(&config, 3, &Device::flex())
        .unwrap()
        .model;
    Outcome {
        metrics_csv: std::fs::read_to_string(artifacts.join("ring_gan/run-1/metrics.csv")).unwrap(),
        generator: model.generator.weights(),
        discriminator: model.discriminator.weights(),
    }
}

/// Waits until the run in `artifacts` has saved epoch 1.
fn first_epoch_saved(artifacts: &Path, child: &mut Child) {
    let state = artifacts.join("ring_gan/run-1/checkpoint/state-1.json");
    let started = Instant::now();
    while !state.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoint"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn reference() -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    finish(spawn(dir.path(), false));
    outcome(dir.path())
}

#[test]
fn kill_9_during_epoch_two_resumes_both_optimizers_bit_for_bit() {
    let reference = reference();
    for delay_ms in [0, 250, 600] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn(dir.path(), false);
        first_epoch_saved(dir.path(), &mut child);
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let resumed = finish(spawn(dir.path(), true));
        let stderr = String::from_utf8_lossy(&resumed.stderr);
        assert!(stderr.contains("resuming after epoch"), "{stderr}");
        assert_eq!(
            outcome(dir.path()),
            reference,
            "killed {delay_ms} ms into epoch 2"
        );
    }
}

#[test]
fn sigterm_inside_an_epoch_saves_the_step_and_the_resume_is_exact() {
    let reference = reference();
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(dir.path(), false);
    first_epoch_saved(dir.path(), &mut child);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: `kill` with a child's pid and a signal number has no memory effects.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let stopped = child.wait_with_output().unwrap();
    assert_eq!(
        stopped.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    let resumed = finish(spawn(dir.path(), true));
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(stderr.contains("resuming inside epoch 2"), "{stderr}");
    assert_eq!(outcome(dir.path()), reference);
}
