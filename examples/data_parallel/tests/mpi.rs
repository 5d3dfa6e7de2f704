//! The example under `mpirun`: N ranks equal one process accumulating N batches per step, bit
//! for bit, and the job survives the faults of a cluster. Needs Open MPI (`.ci/run` installs
//! it) and the `mpi` feature: `cargo test -p data_parallel --features mpi`.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod run;

use run::{BIN, alone, assert_same_run, device_flags, run_dir, text, weights};

const PANICKING: &str = env!("CARGO_BIN_EXE_panicking");
const MASKED: &str = env!("CARGO_BIN_EXE_masked");
const PLAIN: &str = env!("CARGO_BIN_EXE_plain");

fn mpirun(ranks: usize, bin: &str, artifacts: &Path, flags: &[&str]) -> Command {
    let mut command = Command::new("mpirun");
    command
        .args(["--allow-run-as-root", "--oversubscribe", "-n"])
        .arg(ranks.to_string())
        .arg(bin)
        .arg("--artifacts")
        .arg(artifacts)
        .args(flags)
        .args(device_flags())
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn wait_for(path: &Path, child: &mut Child) {
    let start = Instant::now();
    while !path.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the job ended early");
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The book's data-parallel page quotes the summary line of this run, up to the ranks' times,
/// which vary.
fn the_book_shows(stderr: &str) {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/guide/data-parallel.md");
    let page = std::fs::read_to_string(page).unwrap();
    let stable = |text: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with("data parallel over 2 ranks"));
        line.and_then(|l| l.split("; training time by rank").next())
            .map(str::to_owned)
    };
    assert_eq!(stable(&page), stable(stderr));
    assert!(stable(stderr).is_some(), "{stderr}");
}

#[test]
fn n_ranks_equal_one_process_accumulating_n_batches_bit_for_bit() {
    // At N = 2 the example as the book runs it: Adam's owners of ranges of the flattened
    // parameters. At N = 3 a schedule over the run's optimizer steps (one per group of N
    // batches in both), with the first layer's weight split between ranks 0 and 1. Then N = 2
    // with clipping by the global norm, which the owners compute together from whole tensors
    // (a bound below the gradients' norms, so that every step clips).
    let cases: [(usize, &[&str], &str); 3] = [
        (2, &[], "ranges of the flattened parameters"),
        (
            3,
            &["--set", r#"lr_schedule={"kind":"cosine","min_lr":0.0}"#],
            "rank 0 steps and keeps the optimizer state of 48 of 131 parameter values (ranges of the flattened parameters)",
        ),
        (
            2,
            &["--set", r#"grad_clip={"kind":"norm","max":0.05}"#],
            "rank 0 steps and keeps the optimizer state of 67 of 131 parameter values (whole tensors)",
        ),
    ];
    for (ranks, schedule, split) in cases {
        let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let accumulate = format!("grad_accumulation={ranks}");
        let reference = alone(
            one.path(),
            &[&["--set", &accumulate][..], schedule].concat(),
        );
        let output = mpirun(ranks, BIN, many.path(), schedule).output().unwrap();
        let stderr = text(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert_same_run(one.path(), many.path(), 3);
        // The test split, measured by rank 0 on the best checkpoint: the same line.
        let test_line = |stderr: &str| {
            let line = stderr
                .lines()
                .find(|l| l.starts_with("test ("))
                .map(str::to_owned);
            line.expect("a test line")
        };
        let line = test_line(&stderr);
        assert_eq!(line, test_line(&text(&reference.stderr)));
        assert!(
            line.contains("test.loss") && line.contains("test.accuracy"),
            "{line}"
        );
        assert!(
            stderr.contains(&format!(
                "data parallel over {ranks} ranks: weights equal on every rank at each epoch end"
            )),
            "{stderr}"
        );
        assert!(stderr.contains(split), "{stderr}");
        // The page quotes the run on flex: its line names a checksum of the weights, which on
        // another backend differ in their last bits.
        if schedule.is_empty() && device_flags().is_empty() {
            the_book_shows(&stderr);
        }
        // One writer: rank 0's run directory is the only one.
        let runs: Vec<_> = std::fs::read_dir(many.path().join("seed_parallel"))
            .unwrap()
            .collect();
        assert_eq!(runs.len(), 1);
        let config = std::fs::read_to_string(run_dir(many.path()).join("config.json")).unwrap();
        assert!(config.contains(&format!("\"ranks\": {ranks}")), "{config}");
        // The summary keeps the exchange's line. Validation was divided: of its 5 batches
        // per epoch, rank 0 measured batches 1, 3, 5 at N = 2 and 1, 4 at N = 3.
        let summary = std::fs::read_to_string(run_dir(many.path()).join("summary.md")).unwrap();
        assert!(
            summary.contains(&format!("data parallel over {ranks} ranks: weights equal")),
            "{summary}"
        );
        let measured = match ranks {
            2 => "validation divided: rank 0 measured 9 of 15 batches",
            _ => "validation divided: rank 0 measured 6 of 15 batches",
        };
        assert!(summary.contains(measured), "{summary}");
        // So was the test split, on the checkpoint rank 0 picked (sent to the other ranks
        // when it is not the last epoch's).
        assert!(
            summary.contains(&format!("measured by {ranks} ranks together")),
            "{summary}"
        );
    }
}

#[test]
fn kill_9_of_one_rank_ends_the_job_and_a_resume_continues_bit_for_bit() {
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    alone(
        one.path(),
        &["--set", "grad_accumulation=2", "--set", "epochs=40"],
    );
    let mut job = mpirun(2, BIN, many.path(), &["--set", "epochs=40"])
        .spawn()
        .unwrap();
    wait_for(
        &run_dir(many.path()).join("checkpoint/model-4.bpk"),
        &mut job,
    );
    let ranks = Command::new("pgrep")
        .args(["-P", &job.id().to_string()])
        .output()
        .unwrap();
    let victim = text(&ranks.stdout)
        .lines()
        .last()
        .expect("a rank")
        .to_owned();
    let killed = Instant::now();
    Command::new("kill").args(["-9", &victim]).status().unwrap();
    let status = job.wait().unwrap();
    assert!(!status.success());
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "the job outlived its rank"
    );
    let output = mpirun(
        2,
        BIN,
        many.path(),
        &["--set", "epochs=40", "--resume", "latest"],
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_same_run(one.path(), many.path(), 40);
    // The best checkpoint is not the last epoch's: rank 0 sent its weights to rank 1, and the
    // two measured the test split together (`metrics.csv`, compared above, has its rows).
    let summary = std::fs::read_to_string(run_dir(many.path()).join("summary.md")).unwrap();
    assert!(
        summary.contains("## Test (checkpoint of epoch 38, measured by 2 ranks together)"),
        "{summary}"
    );
}

#[test]
fn sigterm_stops_every_rank_at_one_step_saved_by_rank_0_and_the_resume_is_exact() {
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    alone(
        one.path(),
        &["--set", "grad_accumulation=2", "--set", "epochs=200"],
    );
    // Long enough for Open MPI, which passes the signal on after a second or two.
    let mut job = mpirun(2, BIN, many.path(), &["--set", "epochs=200"])
        .spawn()
        .unwrap();
    wait_for(
        &run_dir(many.path()).join("checkpoint/model-3.bpk"),
        &mut job,
    );
    // What Slurm does to a preempted job: SIGTERM to the launcher, which passes it on.
    Command::new("kill")
        .args(["-TERM", &job.id().to_string()])
        .status()
        .unwrap();
    let output = job.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert!(stderr.contains("saved at this step"), "{stderr}");
    // Rank 0 alone reports it.
    assert_eq!(
        stderr.matches("interrupted at epoch").count(),
        1,
        "{stderr}"
    );
    let output = mpirun(
        2,
        BIN,
        many.path(),
        &["--set", "epochs=200", "--resume", "latest"],
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_same_run(one.path(), many.path(), 200);
}

#[test]
fn a_panic_on_one_rank_ends_the_job_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = mpirun(2, PANICKING, dir.path(), &[]).output().unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("rank 1 cannot go on"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn resuming_with_another_number_of_ranks_is_a_changed_setting() {
    let dir = tempfile::tempdir().unwrap();
    // The ranks' private copies of the run go to this temporary folder: none may stay.
    let tmp = tempfile::tempdir().unwrap();
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    // A copy of a rank killed earlier (its process gone) is reclaimed by the next resume. The
    // refused job below leaves none of its own: every rank removes its copy before rank 0's
    // abort ends the job.
    std::fs::create_dir_all(tmp.path().join("dsl-rank1-99999999-5/checkpoint")).unwrap();
    let output = mpirun(2, BIN, dir.path(), &["--set", "epochs=2"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let resume = ["--set", "epochs=3", "--resume", "latest"];
    let output = mpirun(3, BIN, dir.path(), &resume)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("resuming would mix two experiments: `ranks`: saved 2, now 3; relaunch with `mpirun -n 2`, as the run was trained, or pass `--resume-changed`"),
        "{stderr}"
    );
    // Rank 0 alone says it.
    assert_eq!(stderr.matches("resuming would mix").count(), 1, "{stderr}");
    assert_eq!(leftovers(), Vec::<String>::new());
    // With `--resume-changed` the run continues, each step now summing three batches.
    let changed = [
        "--set",
        "epochs=3",
        "--resume",
        "latest",
        "--resume-changed",
    ];
    let output = mpirun(3, BIN, dir.path(), &changed)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(leftovers(), Vec::<String>::new());
    let config = std::fs::read_to_string(run_dir(dir.path()).join("config.json")).unwrap();
    assert!(
        config.contains("\"ranks\": 3") && config.contains("`ranks`: saved 2, now 3"),
        "{config}"
    );
}

#[test]
fn a_resume_needs_no_shared_filesystem_and_other_ranks_write_nothing() {
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The same two commands in one process.
    alone(
        one.path(),
        &["--set", "grad_accumulation=2", "--set", "epochs=2"],
    );
    let resume = [
        "--set",
        "grad_accumulation=2",
        "--set",
        "epochs=3",
        "--resume",
        "latest",
    ];
    alone(one.path(), &resume);
    // Each rank its own artifacts folder, as on nodes without a shared filesystem: rank 0's
    // is `0`, rank 1's is `1`.
    let own_folder = |flags: &[&str]| {
        let script = format!(
            "exec {BIN} --artifacts {}/$OMPI_COMM_WORLD_RANK {}",
            many.path().display(),
            flags.join(" ")
        );
        let mut command = Command::new("mpirun");
        command
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "-n",
                "2",
                "sh",
                "-c",
                &script,
            ])
            .output()
            .unwrap()
    };
    let output = own_folder(&["--set", "epochs=2"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = own_folder(&["--set", "epochs=3", "--resume", "latest"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_same_run(one.path(), &many.path().join("0"), 3);
    assert!(!many.path().join("1").exists(), "rank 1 wrote files");
}

#[test]
fn one_process_continues_an_n_rank_run_from_the_optimizer_state_rank_0_gathered() {
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    alone(
        one.path(),
        &["--set", "grad_accumulation=2", "--set", "epochs=3"],
    );
    let output = mpirun(2, BIN, many.path(), &["--set", "epochs=2"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    // Each rank kept the Adam moments of its own parameters; the checkpoint holds all of them,
    // so one process continues exactly (a missing moment would start again from zero).
    alone(
        many.path(),
        &[
            "--set",
            "grad_accumulation=2",
            "--set",
            "epochs=3",
            "--resume",
            "latest",
            "--resume-changed",
        ],
    );
    // The 2-epoch run measured its test split too: those rows are its own.
    let trained = |dir: &Path| {
        let metrics = std::fs::read_to_string(run_dir(dir).join("metrics.csv")).unwrap();
        let rows: Vec<String> = metrics
            .lines()
            .filter(|row| !row.contains(",test,"))
            .map(str::to_owned)
            .collect();
        rows
    };
    assert_eq!(trained(one.path()), trained(many.path()));
    let model = "checkpoint/model-3.bpk";
    assert_eq!(
        weights(&run_dir(one.path()).join(model)),
        weights(&run_dir(many.path()).join(model))
    );
}

#[test]
fn with_dropout_n_ranks_draw_what_one_process_draws() {
    for ranks in [2, 3] {
        let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let output = Command::new(MASKED)
            .arg("--artifacts")
            .arg(one.path())
            .args(["--set", &format!("grad_accumulation={ranks}")])
            .args(device_flags())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let output = mpirun(ranks, MASKED, many.path(), &[]).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let metrics = |dir: &Path| {
            std::fs::read_to_string(dir.join("masked_parallel/run-1/metrics.csv")).unwrap()
        };
        assert!(
            metrics(one.path()) == metrics(many.path()),
            "{ranks} ranks: metrics.csv differs"
        );
    }
}

#[test]
fn an_experiment_without_the_key_refuses_mpirun_once() {
    let dir = tempfile::tempdir().unwrap();
    let output = mpirun(2, PLAIN, dir.path(), &[]).output().unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(
        stderr
            .matches("this experiment has no `data_parallel` key")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("add `data_parallel: mpi`"), "{stderr}");
    assert!(!dir.path().join("plain").exists(), "nothing trained");
}

#[test]
fn verify_reruns_an_n_rank_run_as_the_one_process_run_it_equals() {
    let dir = tempfile::tempdir().unwrap();
    let output = mpirun(2, BIN, dir.path(), &["--set", "epochs=2"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = verified(BIN, &run_dir(dir.path()));
    assert!(
        stdout.contains(
            "bit-identical (the 2-rank run rerun in one process accumulating 2 batches per step"
        ),
        "{stdout}"
    );
    // With dropout and no seed: the ranks drew from seed 0's per-batch streams, as the rerun.
    let dir = tempfile::tempdir().unwrap();
    let output = mpirun(2, MASKED, dir.path(), &["--set", "seed=null"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = verified(MASKED, &dir.path().join("masked_parallel/run-1"));
    assert!(stdout.contains("bit-identical"), "{stdout}");
}

/// What `bin --verify run` printed, after it succeeded.
fn verified(bin: &str, run: &Path) -> String {
    let output = Command::new(bin)
        .arg("--verify")
        .arg(run)
        .args(device_flags())
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{}{}",
        stdout,
        text(&output.stderr)
    );
    stdout
}
