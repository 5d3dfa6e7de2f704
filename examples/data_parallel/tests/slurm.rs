//! The book's Slurm job script (docs/src/guide/data-parallel.md), as written there, submitted
//! with `sbatch` to a real Slurm: its N = 2 run equals one process accumulating 2 batches per
//! step, bit for bit, and a job cancelled mid-run by `scancel` and submitted again continues
//! exactly. Needs Slurm with its PMIx plugin and Open MPI (`.ci/slurm start` installs and
//! starts a single-node cluster): `cargo test -p data_parallel --features slurm-tests --test
//! slurm`.
#![cfg(feature = "slurm-tests")]

mod run;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use run::{BIN, alone, assert_same_run, run_dir, text};

/// The cluster has the cores of one job: one test at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

/// The book's job script: its `sh` block holding `#SBATCH` lines.
fn book_script() -> String {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/guide/data-parallel.md");
    let page = std::fs::read_to_string(page).unwrap();
    let blocks: Vec<&str> = page
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.contains("#SBATCH"))
        .collect();
    assert_eq!(blocks.len(), 1, "the page holds one job script");
    blocks[0].to_owned()
}

/// A submit folder: the book's script, and the binary where the script names it (its
/// `./target/release/data_parallel`, here the test's build).
fn submit_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("train.sbatch");
    std::fs::write(&script, book_script()).unwrap();
    let bin = dir.path().join("target/release");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("data_parallel")).unwrap();
    (dir, script)
}

fn sbatch(dir: &Path, script: &Path, args: &[&str], wait: bool) -> Output {
    let mut command = Command::new("sbatch");
    command.current_dir(dir).arg("--parsable");
    if wait {
        command.arg("--wait");
    }
    let output = command
        .arg(script)
        .args(args)
        .output()
        .expect("sbatch runs");
    assert!(
        output.status.success() || wait,
        "sbatch: {}",
        text(&output.stderr)
    );
    output
}

/// The job's id as `sbatch --parsable` prints it.
fn job_id(output: &Output) -> String {
    text(&output.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// What the job printed (`slurm-<id>.out` in the submit folder).
fn job_output(dir: &Path, id: &str) -> String {
    std::fs::read_to_string(dir.join(format!("slurm-{id}.out"))).unwrap_or_default()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn in_queue(id: &str) -> bool {
    let output = Command::new("squeue")
        .args(["-h", "-j", id])
        .output()
        .unwrap();
    !text(&output.stdout).trim().is_empty()
}

#[test]
fn the_books_job_script_trains_what_one_process_accumulating_2_batches_trains() {
    let _cluster = CLUSTER.lock().unwrap();
    let one = tempfile::tempdir().unwrap();
    alone(one.path(), &["--set", "grad_accumulation=2"]);
    let (dir, script) = submit_dir();
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
    let (dir, script) = submit_dir();
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
