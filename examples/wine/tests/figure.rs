//! The wine example's stated figure: validation accuracy clearly above the majority class.

use std::process::Command;

#[test]
fn validation_accuracy_beats_the_majority_class_baseline() {
    let csv = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/winequality-red.csv"))
        .unwrap();
    let qualities: Vec<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.rsplit(',').next())
        .collect();
    let majority = ["3", "4", "5", "6", "7", "8"]
        .iter()
        .map(|q| qualities.iter().filter(|x| *x == q).count())
        .max()
        .unwrap();
    let baseline = 100.0 * majority as f64 / qualities.len() as f64;
    assert_eq!(qualities.len(), 1599);
    assert!((baseline - 42.59).abs() < 0.01, "{baseline}");

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wine"))
        .args(["--quiet", "--artifacts", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics = std::fs::read_to_string(dir.path().join("wine/run-1/metrics.csv")).unwrap();
    let accuracy: f64 = metrics
        .lines()
        .rfind(|l| l.starts_with(',') && l.contains(",valid,accuracy,"))
        .and_then(|l| l.rsplit(',').next())
        .and_then(|v| v.parse().ok())
        .expect("a final validation accuracy");
    println!("validation accuracy {accuracy:.2} % against a majority baseline of {baseline:.2} %");
    assert!(accuracy > 50.0, "validation accuracy {accuracy} %");
}
