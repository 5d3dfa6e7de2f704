//! The sweeps page's Slurm job array (docs/src/guide/sweeps.md), as written there, submitted
//! with `sbatch` to a real Slurm: its tasks, one trial each and two at a time, fill one ranked
//! table equal to the one a local `--jobs 2` sweep of the same grid writes. Needs Slurm
//! (`.ci/slurm start` sets up a single-node cluster): `cargo test -p classification --features
//! slurm-tests --test slurm`.
#![cfg(feature = "slurm-tests")]

#[path = "../../data_parallel/tests/sbatch/mod.rs"]
mod sbatch;
mod sweep;

use std::path::Path;
use std::process::Command;

use sbatch::{array_until_done, book_script, submit_dir, text};
use sweep::sweep_dir;

const BIN: &str = env!("CARGO_BIN_EXE_classification");

/// The ranked table without its last column (each trial's run directory, which differs).
fn table(artifacts: &Path) -> Vec<String> {
    let csv = std::fs::read_to_string(sweep_dir(artifacts).join("sweep.csv")).unwrap();
    csv.lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_owned())
        .collect()
}

#[test]
fn the_books_job_array_fills_the_ranked_table_a_local_sweep_writes() {
    let (dir, script) = submit_dir(
        &book_script("docs/src/guide/sweeps.md"),
        BIN,
        "classification",
    );
    array_until_done(dir.path(), &script, &[], 6);
    let local = tempfile::tempdir().unwrap();
    let grid = ["--sweep", "lr=0.05,0.1,0.2", "--sweep", "epochs=2,3"];
    let out = Command::new(BIN)
        .args(grid)
        .args(["--jobs", "2", "--quiet", "--artifacts"])
        .arg(local.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (cluster, here) = (table(&dir.path().join("artifacts")), table(local.path()));
    assert_eq!(cluster.len(), 7, "a header and six trials: {cluster:#?}");
    assert_eq!(cluster, here);
}
