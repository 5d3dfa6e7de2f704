//! The bf16 experiment (`bin/bf16.rs`, `precision: bf16`) as a user runs it: it learns the
//! shapes, its losses are bf16 values, `--precision` trains it in f32 or f16 instead, and
//! `--export` writes the weights in the run's precision.

use std::path::Path;
use std::process::Command;

/// Runs the experiment with `args` in `dir`; its last validation accuracy and every training
/// loss, from `metrics.csv`.
fn train(dir: &Path, args: &[&str]) -> (f64, Vec<f32>) {
    let status = Command::new(env!("CARGO_BIN_EXE_shapes_bf16"))
        .args(["--artifacts", dir.to_str().unwrap(), "--quiet"])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "{args:?}: {status}");
    let runs = dir.join("shapes_bf16");
    let newest = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
        .unwrap();
    let csv = std::fs::read_to_string(newest.join("metrics.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let accuracy = rows
        .iter()
        .rfind(|r| r[2] == "valid" && r[3] == "accuracy")
        .map(|r| r[4].parse().unwrap())
        .unwrap();
    let losses = rows
        .iter()
        .filter(|r| r[2] == "train" && r[3] == "loss" && !r[0].is_empty())
        .map(|r| r[4].parse().unwrap())
        .collect();
    (accuracy, losses)
}

/// The dtype safetensors records for `tensor` in the file at `path`.
fn exported_dtype(path: &Path, tensor: &str) -> String {
    let bytes = std::fs::read(path).unwrap();
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    header[tensor]["dtype"].as_str().unwrap().to_owned()
}

#[test]
fn the_bf16_cnn_learns_the_shapes_and_exports_in_its_precision() {
    let dir = tempfile::tempdir().unwrap();
    let (accuracy, losses) = train(dir.path(), &[]);
    assert!(accuracy >= 95.0, "bf16 valid accuracy {accuracy}");
    // bf16 values: the low 16 bits of each f32 are zero.
    assert!(
        losses.iter().all(|l| l.to_bits() & 0xffff == 0),
        "{losses:?}"
    );
    let (f32_accuracy, f32_losses) = train(dir.path(), &["--precision", "f32"]);
    assert!(f32_accuracy >= 95.0, "f32 valid accuracy {f32_accuracy}");
    assert!(f32_losses.iter().any(|l| l.to_bits() & 0xffff != 0));
    // One epoch of f16 (10 steps; flex's f16 kernels are the slowest here).
    let (_, f16_losses) = train(dir.path(), &["--precision", "f16", "--epochs", "1"]);
    assert_eq!(f16_losses.len(), 10);
    assert_ne!(f16_losses, losses[..10]);

    // The newest run is the f16 one: `--export` writes the experiment's precision unless
    // `--precision` says otherwise.
    let export = |file: &str, args: &[&str]| {
        let path = dir.path().join(file);
        let status = Command::new(env!("CARGO_BIN_EXE_shapes_bf16"))
            .args(["--artifacts", dir.path().to_str().unwrap(), "--export"])
            .arg(&path)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success());
        exported_dtype(&path, "model.conv1.weight")
    };
    assert_eq!(export("bf16.safetensors", &[]), "BF16");
    assert_eq!(export("f32.safetensors", &["--precision", "f32"]), "F32");
}
