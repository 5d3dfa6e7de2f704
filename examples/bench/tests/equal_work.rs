//! The benchmark compares equal work: on the seed task its three variants compute the same
//! losses, bit for bit.

use std::process::Command;

fn losses(variant: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["--child", "small", variant])
        .arg(dir.path())
        .arg("--losses")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .expect("a RESULT line");
    line.split_whitespace()
        .skip(6)
        .map(|bits| bits.parse().unwrap())
        .collect()
}

#[test]
fn hand_loop_training_macro_and_learner_compute_the_same_losses() {
    let hand = losses("hand");
    assert_eq!(hand.len(), 18);
    assert_eq!(losses("ours"), hand, "training! differs from the hand loop");
    assert_eq!(
        losses("learner"),
        hand,
        "SupervisedTraining differs from the hand loop"
    );
}
