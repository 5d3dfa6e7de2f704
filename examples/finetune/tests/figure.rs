//! The figures the README states: the pretrained model fails the relabelled task, the
//! fine-tuned one passes it.

use burn_experiment::prelude::*;
use finetune::{Pretrain, pretrain_then_fine_tune, relabelled};
use seed::SampleBatcher;

// In this test binary, not one of its own: each links Burn.
#[path = "figure/cli.rs"]
mod cli;

#[test]
fn fine_tuning_from_the_exported_weights_learns_the_second_task() {
    let dir = tempfile::tempdir().unwrap();
    let device = burn::tensor::Device::flex();
    let (pretrained, tuned) = pretrain_then_fine_tune(
        &dir.path().to_string_lossy(),
        &device,
        burn_experiment::Precision::F32,
    )
    .unwrap();
    let accuracy = |report: &FitReport<_>| -> Vec<f64> {
        report
            .history
            .get(Split::Valid, "accuracy")
            .unwrap()
            .values()
    };
    assert_eq!(accuracy(&pretrained).last(), Some(&100.0));
    let before = Pretrain::evaluate(&pretrained.model, relabelled(240..300), SampleBatcher)
        .unwrap()
        .get("accuracy")
        .unwrap();
    let after = tuned.test.as_ref().unwrap().get("accuracy").unwrap();
    assert!(
        before < 10.0,
        "the relabelled task is new to the pretrained model: {before}"
    );
    assert!(after >= 90.0, "fine-tuned test accuracy {after}");
    assert!(tuned.averaged.is_some(), "validated on the moving average");
    println!("test accuracy on the second task: pretrained {before:.1} %, fine-tuned {after:.1} %");
}

/// The binary writes where `--artifacts` says (both runs and the exported weights), and
/// refuses an argument it does not know.
#[test]
fn the_binary_writes_under_its_artifacts_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_finetune"))
        .current_dir(dir.path())
        .args(["--artifacts", "elsewhere"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let elsewhere = dir.path().join("elsewhere");
    assert!(elsewhere.join("pretrained.safetensors").exists());
    assert!(elsewhere.join("pretrain/run-1/config.json").exists());
    assert!(elsewhere.join("fine_tune/run-1/config.json").exists());
    assert!(
        !dir.path().join("artifacts").exists(),
        "nothing in the default folder"
    );
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_finetune"))
        .current_dir(dir.path())
        .arg("--epochs=3")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unexpected argument `--epochs=3`"));
}
