//! The wine experiment in bf16: its F1, which Burn computes only in f32, is fed the outputs
//! cast back to f32 (a bf16 run used to end in Burn's dtype panic there).

use std::process::Command;

#[test]
fn bf16_trains_and_measures_f1() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wine"))
        .args(["--precision", "bf16", "--epochs", "1", "--artifacts"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let csv = std::fs::read_to_string(dir.path().join("wine/run-1/metrics.csv")).unwrap();
    let f1: f64 = csv
        .lines()
        .find(|l| l.contains(",valid,f1,"))
        .and_then(|l| l.rsplit(',').next()?.parse().ok())
        .expect("a validation F1");
    assert!((0.0..=100.0).contains(&f1), "{f1}");
}
