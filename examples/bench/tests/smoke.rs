//! One iteration of the harness on the fastest task (debug build): it runs every variant and
//! prints a row for each, with our ratios against the hand loop and the Learner (whole process
//! and training call).

use std::process::Command;

#[test]
fn one_iteration_of_the_small_task_prints_every_variant() {
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["--iterations", "1", "--tasks", "small"])
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{table}");
    for variant in ["hand", "ours", "learner", "ours-nockpt"] {
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(variant)),
            "no row for {variant}:\n{table}"
        );
    }
    let ours = table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("ours"))
        .unwrap();
    assert_eq!(
        ours.split_whitespace().count(),
        10,
        "whole-process and training-call times, each with its ratios to the hand loop and the Learner, on our row: {ours}"
    );
}
