//! A book page's Slurm job script submitted with `sbatch` as the page writes it, from a submit
//! folder holding the binary where the script names it. Shared by the job-script tests of
//! `data_parallel` (`tests/slurm.rs`), and the job arrays of `classification` and `search`
//! (their `tests/slurm.rs`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The page's one `sh` block holding `#SBATCH` lines (`page` from the repository's root).
pub fn book_script(page: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(page);
    let text = std::fs::read_to_string(path).unwrap();
    let blocks: Vec<&str> = text
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.contains("#SBATCH"))
        .collect();
    assert_eq!(blocks.len(), 1, "{page} holds one job script");
    blocks[0].to_owned()
}

/// A submit folder: `script`, and `bin` at `./target/release/<its name>`, where the book's
/// scripts run the release build (here the test's own build stands there).
pub fn submit_dir(script: &str, bin: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.sbatch");
    std::fs::write(&path, script).unwrap();
    let release = dir.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    std::os::unix::fs::symlink(bin, release.join(name)).unwrap();
    (dir, path)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `sbatch` of `script` from `dir` with `args` for it; with `wait`, until every task ended.
pub fn sbatch(dir: &Path, script: &Path, args: &[&str], wait: bool) -> Output {
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

/// `sbatch --wait` of the job array `script` with `args`, its tasks `0..tasks`: asserts that
/// every task succeeded (else prints what each printed); the array's id and each task's output.
pub fn array_until_done(
    dir: &Path,
    script: &Path,
    args: &[&str],
    tasks: usize,
) -> (String, Vec<String>) {
    let output = sbatch(dir, script, args, true);
    let id = job_id(&output);
    let printed: Vec<String> = (0..tasks)
        .map(|task| job_output(dir, &format!("{id}_{task}")))
        .collect();
    assert!(
        output.status.success(),
        "job array {id}: {}\n{}",
        text(&output.stderr),
        printed.join("\n")
    );
    (id, printed)
}

/// The job's id as `sbatch --parsable` prints it.
pub fn job_id(output: &Output) -> String {
    text(&output.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// What a job (or an array's task, `<id>_<task>`) printed: `slurm-<id>.out` in `dir`.
pub fn job_output(dir: &Path, id: &str) -> String {
    std::fs::read_to_string(dir.join(format!("slurm-{id}.out"))).unwrap_or_default()
}

pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the job still has a task queued or running.
pub fn in_queue(id: &str) -> bool {
    let output = Command::new("squeue")
        .args(["-h", "-j", id])
        .output()
        .unwrap();
    !text(&output.stdout).trim().is_empty()
}
