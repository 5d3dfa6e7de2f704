//! The example's own command line: `--precision` trains both experiments in that type, and a
//! flag it does not know is refused with its usage.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_finetune");

#[test]
fn both_experiments_train_in_bf16() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--precision", "bf16", "--artifacts"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for run in ["pretrain/run-1", "fine_tune/run-1"] {
        let config: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(run).join("config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(config["precision"], "bf16", "{run}: {config}");
    }
}

#[test]
fn an_unknown_precision_is_refused_with_the_usage() {
    let out = Command::new(BIN)
        .args(["--precision", "fp8"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--precision `fp8`: write f32, bf16 or f16"),
        "{stderr}"
    );
}
