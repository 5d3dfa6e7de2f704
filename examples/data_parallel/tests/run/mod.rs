//! What the launcher tests share: the example trained alone, and a run's result compared bit
//! for bit (`mpi.rs` under `mpirun`, `slurm.rs` under Slurm).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use burn::module::Module;
use burn::tensor::Device;
use seed::Mlp;

pub const BIN: &str = env!("CARGO_BIN_EXE_data_parallel");

/// `--device NAME` for every rank when `DSL_TEST_DEVICE` names a device: `.ci/run` runs the
/// bit-identity test again with one wgpu device (lavapipe) per rank.
pub fn device_flags() -> Vec<String> {
    match std::env::var("DSL_TEST_DEVICE") {
        Ok(name) => vec!["--device".to_owned(), name],
        Err(_) => Vec::new(),
    }
}

pub fn alone(artifacts: &Path, flags: &[&str]) -> Output {
    let output = Command::new(BIN)
        .arg("--artifacts")
        .arg(artifacts)
        .args(flags)
        .args(device_flags())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    output
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn run_dir(artifacts: &Path) -> PathBuf {
    artifacts.join("seed_parallel/run-1")
}

/// The experiment's model as its checkpoints store it (`model.fc1.weight`, ...).
#[derive(Module, Debug)]
struct Stored {
    model: Mlp,
}

/// The bits of the weights in a checkpoint. (The record files themselves differ between
/// processes: they carry each process's random parameter ids.)
pub fn weights(file: &Path) -> Vec<u32> {
    Stored {
        model: Mlp::with_hidden(16, 3, &Device::flex()),
    }
    .try_load_file(file)
    .expect("the checkpoint loads")
    .model
    .weights()
}

/// What a run's result is: every metric of every step and epoch (written with every bit of
/// the f32 value), and the last epoch's weights.
pub fn assert_same_run(one: &Path, many: &Path, epoch: usize) {
    let (one, many) = (run_dir(one), run_dir(many));
    let metrics = |dir: &Path| std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    assert!(metrics(&one) == metrics(&many), "metrics.csv differs");
    let model = format!("checkpoint/model-{epoch}.bpk");
    assert_eq!(
        weights(&one.join(&model)),
        weights(&many.join(&model)),
        "{model}"
    );
}
