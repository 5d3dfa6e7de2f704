//! The book's Slurm job script (docs/src/guide/data-parallel.md), as written there, submitted
//! with `sbatch` to a real Slurm: its N = 2 run equals one process accumulating 2 batches per
//! step, bit for bit, and a job cancelled mid-run by `scancel` and submitted again continues
//! exactly. Needs Slurm with its PMIx plugin and Open MPI (`.ci/slurm start` installs and
//! starts a single-node cluster): `cargo test -p data_parallel --features slurm-tests --test
//! slurm`.
#![cfg(feature = "slurm-tests")]

mod run;
mod sbatch;

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use run::{BIN, alone, assert_same_run, run_dir};
use sbatch::{book_script, in_queue, job_id, job_output, sbatch, submit_dir, wait_until};

/// The cluster has the cores of one job: one test at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

const PAGE: &str = "docs/src/guide/data-parallel.md";

#[test]
fn the_books_job_script_trains_what_one_process_accumulating_2_batches_trains() {
    let _cluster = CLUSTER.lock().unwrap();
    let one = tempfile::tempdir().unwrap();
    alone(one.path(), &["--set", "grad_accumulation=2"]);
    let (dir, script) = submit_dir(&book_script(PAGE), BIN, "data_parallel");
    let output = sbatch(dir.path(), &script, &[], true);
    let id = job_id(&output);
    let printed = job_output(dir.path(), &id);
    assert!(output.status.success(), "job {id}:\n{printed}");
    assert!(
        printed.contains("data parallel over 2 ranks: weights equal on every rank"),
        "{printed}"
    );
    assert_same_run(one.path(), &dir.path().join("artifacts"), 3);
}

#[test]
fn a_job_cancelled_mid_run_and_submitted_again_continues_bit_for_bit() {
    let _cluster = CLUSTER.lock().unwrap();
    let long = ["--set", "epochs=200"];
    let one = tempfile::tempdir().unwrap();
    alone(
        one.path(),
        &["--set", "grad_accumulation=2", "--set", "epochs=200"],
    );
    let (dir, script) = submit_dir(&book_script(PAGE), BIN, "data_parallel");
    let id = job_id(&sbatch(dir.path(), &script, &long, false));
    let artifacts = dir.path().join("artifacts");
    let third = run_dir(&artifacts).join("checkpoint/model-3.bpk");
    wait_until(
        "the third epoch's checkpoint",
        Duration::from_secs(120),
        || third.exists() || !in_queue(&id),
    );
    assert!(
        in_queue(&id),
        "the job ended early:\n{}",
        job_output(dir.path(), &id)
    );
    // What a preemption or a user's scancel does: SIGTERM to every task of the job.
    let cancel = Command::new("scancel").arg(&id).status().unwrap();
    assert!(cancel.success());
    wait_until("the cancelled job's end", Duration::from_secs(60), || {
        !in_queue(&id)
    });
    let printed = job_output(dir.path(), &id);
    assert!(printed.contains("saved at this step"), "{printed}");
    assert!(
        !run_dir(&artifacts)
            .join("checkpoint/model-200.bpk")
            .exists(),
        "the job finished before it was cancelled"
    );
    // Submitted again as it was: the script's `--resume latest` continues the run.
    let output = sbatch(dir.path(), &script, &long, true);
    let again = job_id(&output);
    let printed = job_output(dir.path(), &again);
    assert!(output.status.success(), "job {again}:\n{printed}");
    assert!(!printed.contains("no checkpoint in"), "{printed}");
    assert_same_run(one.path(), &artifacts, 200);
}
