//! The wine example's stated figures: validation accuracy clearly above the majority class,
//! the last lines of its run exactly as the book's getting-started page shows them, and its
//! figure.

use std::process::Command;

// In this test binary, not one of its own: each links Burn.
#[path = "figure/precision.rs"]
mod precision;

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
    let artifacts = dir.path().join("artifacts");
    let out = Command::new(env!("CARGO_BIN_EXE_wine"))
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The book shows the last epoch line and the summary, durations aside.
    let without_time = |line: &str| match line.rfind("  (") {
        Some(at) if line.ends_with(" s)") => line[..at].to_owned(),
        _ => line.to_owned(),
    };
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/getting-started.md"
    ))
    .unwrap();
    let from = book
        .find("Off a terminal")
        .expect("the wine run in the book");
    let block = &book[from..];
    let block = &block[block.find("```text\n").unwrap() + 8..];
    let shown: Vec<String> = block[..block.find("```").unwrap()]
        .lines()
        .map(without_time)
        .collect();
    let printed: Vec<String> = stderr
        .replace(&artifacts.display().to_string(), "artifacts")
        .lines()
        .map(without_time)
        .collect();
    assert_eq!(printed[printed.len() - shown.len()..], shown[..]);
    let dir_path = artifacts;
    let metrics = std::fs::read_to_string(dir_path.join("wine/run-1/metrics.csv")).unwrap();
    let accuracy: f64 = metrics
        .lines()
        .rfind(|l| l.starts_with(',') && l.contains(",valid,accuracy,"))
        .and_then(|l| l.rsplit(',').next())
        .and_then(|v| v.parse().ok())
        .expect("a final validation accuracy");
    println!("validation accuracy {accuracy:.2} % against a majority baseline of {baseline:.2} %");
    assert!(accuracy > 50.0, "validation accuracy {accuracy} %");
    // The book's figure (under `docs/src`, where mdbook copies it into the built book) is this
    // run's plot.
    let figure = std::fs::read(dir_path.join("wine/run-1/curves.svg")).unwrap();
    let shown = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/figures/wine-curves.svg"
    ))
    .unwrap();
    assert!(
        figure == shown,
        "the book's wine figure is not this run's curves.svg: copy it to docs/src/figures/wine-curves.svg"
    );
}
