//! The search page's Slurm job array (docs/src/guide/search.md), as written there, submitted
//! with `sbatch` to a real Slurm: its tasks, one trial each and two at a time, fill one study
//! whose trials equal, bit for bit, those of a local `--jobs 2` study. Needs Slurm (`.ci/slurm
//! start` sets up a single-node cluster): `cargo test -p search --features slurm-tests --test
//! slurm`. A submission cancelled with `scancel` mid-trial and submitted again fills the same
//! study.
#![cfg(feature = "slurm-tests")]

mod folder;
#[path = "../../data_parallel/tests/sbatch/mod.rs"]
mod sbatch;

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use folder::{find_study, outcome, records, study_dir, valid_losses};
use sbatch::{
    array_until_done, book_script, in_queue, job_id, job_output, sbatch, submit_dir, text,
    wait_until,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_search");

/// The cluster has the cores of one array: one test at a time (a failed one does not stop the
/// other).
static CLUSTER: Mutex<()> = Mutex::new(());

/// Trial `k`'s record, if written.
fn record(artifacts: &Path, k: usize) -> Option<Value> {
    let path = find_study(artifacts)?.join(format!("trial-{k}.json"));
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Each trial's values, state and objective per epoch, by trial: all six.
fn trials(artifacts: &Path) -> Vec<(Value, Value, Value)> {
    let records = records(&study_dir(artifacts));
    let numbers: Vec<u64> = records.iter().filter_map(|r| r["trial"].as_u64()).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5], "every trial recorded");
    records.iter().map(outcome).collect()
}

/// The study of the page's six trials, two at a time, trained here with `args`.
fn local_study(args: &[&str]) -> tempfile::TempDir {
    let local = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--trials", "6", "--jobs", "2", "--quiet", "--artifacts"])
        .arg(local.path())
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    local
}

#[test]
fn the_books_job_array_fills_the_study_a_local_run_writes() {
    let _cluster = CLUSTER.lock().unwrap_or_else(PoisonError::into_inner);
    let (dir, script) = submit_dir(&book_script("docs/src/guide/search.md"), BIN, "search");
    let (_, tasks) = array_until_done(dir.path(), &script, &[], 6);
    let local = local_study(&[]);
    let cluster = trials(&dir.path().join("artifacts"));
    assert!(
        cluster.iter().all(|(_, state, _)| state != "running"),
        "{cluster:?}\n{}",
        tasks.join("\n")
    );
    assert_eq!(cluster, trials(local.path()));
}

/// What a preemption or a user's `scancel` does to a job array: a SIGTERM to the tasks running
/// (here trials 0 and 1, which save where they are) and the pending tasks never started.
/// Submitted again as it was, the array finishes the study: trials 0 and 1 go on in their own
/// runs, each epoch trained once, and the study equals a local one bit for bit.
#[test]
fn a_cancelled_job_array_submitted_again_fills_the_study_a_local_run_writes() {
    let _cluster = CLUSTER.lock().unwrap_or_else(PoisonError::into_inner);
    // Long trials (a rate above 0.3 diverges within 2000 epochs: a failed trial, a failed task).
    let long = [
        "--epochs",
        "2000",
        "--prune",
        "none",
        "--search",
        "lr=log_uniform(1e-3, 0.3)",
    ];
    let (dir, script) = submit_dir(&book_script("docs/src/guide/search.md"), BIN, "search");
    let artifacts = dir.path().join("artifacts");
    let id = job_id(&sbatch(dir.path(), &script, &long, false));
    let training = |k| {
        record(&artifacts, k).is_some_and(|r| {
            r["state"] == "running" && r["curve"].as_array().is_some_and(|c| c.len() >= 3)
        })
    };
    wait_until("trials 0 and 1 training", Duration::from_secs(120), || {
        (training(0) && training(1)) || !in_queue(&id)
    });
    assert!(
        in_queue(&id),
        "the array ended early:\n{}",
        job_output(dir.path(), &format!("{id}_0"))
    );
    assert!(Command::new("scancel").arg(&id).status().unwrap().success());
    wait_until("the cancelled array's end", Duration::from_secs(60), || {
        !in_queue(&id)
    });
    let mut runs = Vec::new();
    for k in 0..2 {
        let left = record(&artifacts, k).unwrap();
        assert_eq!(left["state"], "running", "trial {k}: {left}");
        let trained = left["curve"].as_array().unwrap().len();
        assert!(trained < 2000, "trial {k} ended before the cancel");
        runs.push(left["run"].as_str().unwrap().to_owned());
    }
    assert!(record(&artifacts, 2).is_none(), "trial 2 never started");
    array_until_done(dir.path(), &script, &long, 6);
    for (k, run) in runs.iter().enumerate() {
        let ended = record(&artifacts, k).unwrap();
        assert_eq!(ended["run"], *run, "trial {k} in its own run");
        // The script's `--artifacts artifacts`: runs are named from the submit folder.
        let epochs: Vec<u64> = valid_losses(&dir.path().join(run))
            .iter()
            .map(|&(e, _)| e)
            .collect();
        assert_eq!(epochs, (1..=2000).collect::<Vec<u64>>(), "trial {k}");
    }
    assert_eq!(trials(&artifacts), trials(local_study(&long).path()));
}
