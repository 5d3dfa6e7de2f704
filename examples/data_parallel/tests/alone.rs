//! The experiment without MPI: started alone it trains as without `data_parallel`, and under a
//! launcher a binary built without the `mpi` feature refuses to start, saying how to build it.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_data_parallel");

fn run(artifacts: &Path, env: &[(&str, &str)], flags: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--artifacts")
        .arg(artifacts)
        .args(["--quiet", "--set", "epochs=1"])
        .args(flags)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .envs(env.iter().copied())
        .output()
        .expect("the example starts")
}

#[test]
fn alone_the_run_is_an_ordinary_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &[], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("data parallel"), "{stderr}");
    let config =
        std::fs::read_to_string(dir.path().join("seed_parallel/run-1/config.json")).unwrap();
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(
        config["ranks"],
        serde_json::Value::Null,
        "no rank count alone"
    );
    assert_eq!(config["grad_accumulation"], serde_json::Value::Null);
}

#[cfg(not(feature = "mpi"))]
#[test]
fn under_a_launcher_without_the_feature_it_refuses_naming_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &[("OMPI_COMM_WORLD_SIZE", "2")], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("launched as one of 2 processes, but this binary was built without MPI")
            && stderr.contains("`mpi` feature of burn-experiment"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("seed_parallel").exists(),
        "nothing written"
    );
    // Another rank refuses as well, in silence: the launcher's output holds the line once.
    let other = run(
        dir.path(),
        &[("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "1")],
        &[],
    );
    assert_eq!(other.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&other.stderr), "");
}
