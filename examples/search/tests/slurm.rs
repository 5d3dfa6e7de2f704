//! The search page's Slurm job array (docs/src/guide/search.md), as written there, submitted
//! with `sbatch` to a real Slurm: its tasks, one trial each and two at a time, fill one study
//! whose trials equal, bit for bit, those of a local `--jobs 2` study. Needs Slurm (`.ci/slurm
//! start` sets up a single-node cluster): `cargo test -p search --features slurm-tests --test
//! slurm`.
#![cfg(feature = "slurm-tests")]

#[path = "../../data_parallel/tests/sbatch/mod.rs"]
mod sbatch;

use std::path::Path;
use std::process::Command;

use sbatch::{book_script, job_id, job_output, sbatch, submit_dir, text};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_search");

/// Each trial's values, state and objective per epoch, by trial.
fn trials(artifacts: &Path) -> Vec<(Value, Value, Value)> {
    let study = std::fs::read_dir(artifacts.join("plane_fit"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("study-")
        })
        .expect("a study folder");
    (0..6)
        .map(|k| {
            let path = study.join(format!("trial-{k}.json"));
            let record: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            (
                record["params"].clone(),
                record["state"].clone(),
                record["curve"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_books_job_array_fills_the_study_a_local_run_writes() {
    let (dir, script) = submit_dir(&book_script("docs/src/guide/search.md"), BIN, "search");
    let output = sbatch(dir.path(), &script, &[], true);
    let id = job_id(&output);
    let tasks: Vec<String> = (0..6)
        .map(|task| job_output(dir.path(), &format!("{id}_{task}")))
        .collect();
    assert!(
        output.status.success(),
        "job array {id}: {}\n{}",
        text(&output.stderr),
        tasks.join("\n")
    );
    let local = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--trials", "6", "--jobs", "2", "--quiet", "--artifacts"])
        .arg(local.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cluster = trials(&dir.path().join("artifacts"));
    assert!(
        cluster.iter().all(|(_, state, _)| state != "running"),
        "{cluster:?}\n{}",
        tasks.join("\n")
    );
    assert_eq!(cluster, trials(local.path()));
}
