//! The example on the test device (`DSL_TEST_DEVICE`; `.ci/run` sets `wgpu`, on lavapipe) as a
//! user starts it on a machine without a display: only the run's own lines.

use std::process::Command;

#[test]
fn a_headless_run_prints_only_its_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_train"));
    command
        .arg("--artifacts")
        .arg(dir.path())
        .args(["--epochs", "1"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("NODEVICE_SELECT");
    if let Ok(name) = std::env::var("DSL_TEST_DEVICE") {
        command.args(["--device", &name]);
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // Mesa's device-selection layer, asking for a display that is not there (`headless.rs`).
    assert!(!stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
    let foreign: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            !["epoch ", "| ", "|-", "run directory: ", "no checkpoint in "]
                .iter()
                .any(|own| line.starts_with(own))
        })
        .collect();
    assert!(foreign.is_empty(), "lines not of the run: {foreign:?}");
}
