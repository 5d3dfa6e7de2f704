//! The example's command line (`ThreeClass::cli()`), run as a user would.

mod sweep;

use std::path::Path;
use std::process::{Command, Output};

use sweep::sweep_dir;

const BIN: &str = env!("CARGO_BIN_EXE_classification");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the example runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// ExperimentRuns with `args`, which must be refused with exit code 2 and a message containing `says`.
fn assert_refused(args: &[&str], says: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(says), "{}", stderr(&out));
}

#[test]
fn other_trainers_words_are_answered_with_ours() {
    assert_refused(
        &["--set", "num_workers=2"],
        "`num_workers` is PyTorch's word; ours is `workers`",
    );
    assert_refused(
        &["--sweep", "learning_rate=0.1,0.2"],
        "`learning_rate` is Keras's word; ours is `lr`",
    );
    // This experiment's SGD has no `epsilon` to offer: its own keys, then.
    assert_refused(
        &["--set", "optimizer.eps=1e-8"],
        "unknown config key `optimizer.eps` (no `eps` there); the keys are: kind, momentum, weight_decay",
    );
}

#[test]
fn mistakes_name_the_key_and_exit_2() {
    assert_refused(
        &["--set", "epoch=5"],
        "unknown config key `epoch`; did you mean `epochs`?",
    );
    assert_refused(&["--epochs", "abc"], "invalid value 'abc' for '--epochs");
    assert_refused(&["--set", "lr=fast"], "invalid value for config key `lr`");
    assert_refused(
        &["--resume", "latest", "--set", "checkpoint=null"],
        "`resume`",
    );
}

#[test]
fn print_config_shows_the_resolved_values_and_a_saved_config_replays_them() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = run(&[
        "--print-config",
        "--epochs",
        "2",
        "--lr",
        "0.05",
        "--artifacts",
        artifacts,
    ]);
    assert!(out.status.success());
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(config["epochs"], 2);
    assert_eq!(config["lr"], 0.05);
    assert_eq!(config["batch_size"], 16);

    let out = run(&[
        "--epochs",
        "2",
        "--lr",
        "0.05",
        "--artifacts",
        artifacts,
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let saved = dir.path().join("three_class/run-1/config.json");
    let out = run(&["--config", saved.to_str().unwrap(), "--print-config"]);
    let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replayed, config);
}

#[test]
fn a_run_leaves_a_plot_naming_every_metric_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["--epochs", "2", "--artifacts", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run_dir = dir.path().join("three_class/run-1");
    let svg = std::fs::read_to_string(run_dir.join("curves.svg")).unwrap();
    for label in ["loss", "accuracy", "train", "valid", "epoch"] {
        assert!(
            svg.contains(&format!("\n{label}\n</text>")),
            "no {label} in the plot"
        );
    }
    let summary = std::fs::read_to_string(run_dir.join("summary.md")).unwrap();
    assert!(summary.contains("| valid | accuracy |"), "{summary}");
    // Off a terminal: one plain line per epoch with every metric, no bar.
    let lines: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.starts_with("epoch "))
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 2, "{}", stderr(&out));
    assert!(lines[1].contains("train.loss") && lines[1].contains("valid.accuracy"));
}

#[test]
fn fast_dev_run_trains_one_batch_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "--fast-dev-run",
        "--artifacts",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("fast dev run passed"));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "files were written"
    );
    assert!(!Path::new(&dir.path().join("three_class")).exists());
}

#[test]
fn limit_flags_cut_epochs_short() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--epochs",
        "1",
        "--limit-train-batches",
        "2",
        "--limit-valid-batches",
        "1",
    ];
    let out = Command::new(BIN)
        .args(args)
        .args(["--artifacts", dir.path().to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = std::fs::read_to_string(dir.path().join("three_class/run-1/metrics.csv")).unwrap();
    let steps = csv
        .lines()
        .filter(|l| l.contains(",train,loss,") && !l.starts_with(','))
        .count();
    assert_eq!(steps, 2, "{csv}");
}

#[test]
fn on_a_terminal_a_progress_bar_shows_rate_eta_and_running_loss() {
    let dir = tempfile::tempdir().unwrap();
    // `script` gives the example a pseudo-terminal, as an interactive shell would.
    let command = format!(
        "{BIN} --epochs 2 --artifacts {}",
        dir.path().to_str().unwrap()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("`script` (util-linux) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for part in [
        "epoch 1/2 [",
        " it/s",
        " eta ",
        " loss ",
        "epoch 2/2  train.loss",
    ] {
        assert!(text.contains(part), "no `{part}` in:\n{text}");
    }
}

/// Every file under `dir` with its bytes, to compare a run directory before and after.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

#[test]
fn a_second_fresh_run_leaves_the_first_intact_and_resume_picks_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let runs = dir.path().join("three_class");
    let out = run(&["--epochs", "2", "--artifacts", artifacts, "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = snapshot(&runs.join("run-1"));
    assert!(
        first
            .iter()
            .any(|(p, _)| p.ends_with("checkpoint/state-2.json")),
        "{first:?}"
    );

    // Forgetting `--resume` starts run-2; run-1 keeps every byte.
    let out = run(&["--epochs", "2", "--artifacts", artifacts]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("three_class/run-2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&runs.join("run-1")), first, "run-1 was changed");

    // `--resume latest` continues the newest run, `--run 1` the first.
    let out = run(&[
        "--epochs",
        "3",
        "--resume",
        "latest",
        "--artifacts",
        artifacts,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("resuming after epoch 2 from") && stderr(&out).contains("run-2"),
        "{}",
        stderr(&out)
    );
    let out = run(&[
        "--epochs",
        "3",
        "--resume",
        "latest",
        "--run",
        "1",
        "--artifacts",
        artifacts,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("run-1"), "{}", stderr(&out));
    let names: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "resuming made no new run: {names:?}");

    // A fresh run may not take an existing run's name.
    assert_refused(
        &["--run", "1", "--artifacts", artifacts],
        "already exists and a fresh run never overwrites one",
    );
}

#[test]
fn resuming_with_other_settings_is_refused_unless_asked_for_and_then_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = run(&["--epochs", "2", "--artifacts", artifacts, "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let changed = [
        "--epochs",
        "3",
        "--resume",
        "latest",
        "--batch-size",
        "32",
        "--set",
        "optimizer.momentum=0.5",
        "--artifacts",
        artifacts,
    ];
    assert_refused(&changed, "`batch_size`: saved 16, now 32");
    assert_refused(
        &changed,
        "`hyperparameters.optimizer.momentum`: saved null, now 0.5",
    );
    let csv = dir.path().join("three_class/run-1/metrics.csv");
    assert!(
        !std::fs::read_to_string(&csv).unwrap().contains(",3,"),
        "a refused resume trained"
    );
    // Only more epochs: the same experiment, resumed without a word.
    let out = run(&[
        "--epochs",
        "3",
        "--resume",
        "latest",
        "--artifacts",
        artifacts,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    let mut accepted = changed.to_vec();
    accepted[1] = "4";
    accepted.push("--resume-changed");
    let out = run(&accepted);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("resuming after epoch 3"),
        "{}",
        stderr(&out)
    );
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("three_class/run-1/config.json")).unwrap(),
    )
    .unwrap();
    let recorded = config["resumed_with_changes"].to_string();
    assert!(
        recorded.contains("batch_size") && recorded.contains("momentum"),
        "{config}"
    );
    assert_eq!(config["resume_changed"], true);
    // A later resume with the same settings keeps that history in the record.
    let mut unchanged = changed.to_vec();
    unchanged[1] = "5";
    let out = run(&unchanged);
    assert!(out.status.success(), "{}", stderr(&out));
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("three_class/run-1/config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["epochs"], 5);
    assert_eq!(config["resumed_with_changes"].to_string(), recorded);
}

/// ExperimentRuns with `args` under a file-size limit of `bytes` (a full disk as the process sees it:
/// writes past the limit fail with EFBIG; SIGXFSZ is ignored so they fail instead of killing).
fn run_with_file_limit(bytes: u64, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(BIN);
    command.args(args);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.output().expect("the example runs")
}

#[test]
fn a_full_disk_fails_cleanly_and_loses_no_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    // Epoch 3's state file (2.9 kB) no longer fits; everything before it (epoch 2's state
    // file and the event file: 2.7 kB each) does.
    let out = run_with_file_limit(2800, &["--artifacts", artifacts]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("File too large") && stderr(&out).contains("state-3.json"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    // Nothing half-written is visible: every checkpoint there loads, and epoch 2 is the newest.
    let checkpoints =
        burn_experiment::checkpoint::CheckpointDir::new(&dir.path().join("three_class/run-1"));
    assert_eq!(checkpoints.epochs().unwrap(), [1, 2]);
    for epoch in [1, 2] {
        checkpoints.load(epoch).expect("an intact checkpoint");
    }
    // With space again, the run resumes after epoch 2.
    let out = run(&["--resume", "latest", "--artifacts", artifacts]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("resuming after epoch 2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unwritable_artifacts_folder_is_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-folder");
    std::fs::write(&blocker, b"a file").unwrap();
    let out = run(&["--artifacts", blocker.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot write the run directory"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("epoch 1/"),
        "it trained: {}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&blocker).unwrap(), b"a file");
}

#[test]
fn a_sweep_runs_each_trial_as_its_own_run_and_ranks_them() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let grid = ["--sweep", "lr=0.05,0.1,0.2", "--sweep", "batch_size=16,32"];
    let out = run(&[&grid[..], &["--jobs", "2", "--artifacts", artifacts]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let sweep = &sweep_dir(dir.path());
    let csv = std::fs::read_to_string(sweep.join("sweep.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(
        csv.lines().next(),
        Some("rank,trial,lr,batch_size,valid.loss,epoch,run")
    );
    assert_eq!(rows.len(), 6, "{csv}");
    let mut trials: Vec<&str> = rows.iter().map(|r| r[1]).collect();
    trials.sort_unstable();
    assert_eq!(trials, ["0", "1", "2", "3", "4", "5"]);
    // Ranked by the best validation loss, lowest first.
    let best: Vec<f64> = rows.iter().map(|r| r[4].parse().unwrap()).collect();
    assert!(best.windows(2).all(|w| w[0] <= w[1]), "{csv}");
    // Each trial is its own run, trained with its own values.
    let mut runs: Vec<&str> = rows.iter().map(|r| r[6]).collect();
    runs.sort_unstable();
    runs.dedup();
    assert_eq!(runs.len(), 6);
    for row in &rows {
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(Path::new(row[6]).join("config.json")).unwrap())
                .unwrap();
        assert_eq!(
            config["hyperparameters"]["lr"].to_string(),
            row[2],
            "{row:?}"
        );
        assert_eq!(config["batch_size"].to_string(), row[3], "{row:?}");
        let csv = std::fs::read_to_string(Path::new(row[6]).join("metrics.csv")).unwrap();
        let losses: Vec<f64> = csv
            .lines()
            .filter(|l| l.starts_with(',') && l.contains(",valid,loss,"))
            .map(|l| csv_value(l.rsplit(',').next().unwrap()))
            .collect();
        let lowest = losses.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(lowest, row[4].parse::<f64>().unwrap(), "{row:?}");
    }
    assert!(
        std::fs::read_to_string(sweep.join("sweep.md"))
            .unwrap()
            .contains("| best valid.loss |")
    );
    assert!(
        std::fs::read_to_string(sweep.join("sweep.svg"))
            .unwrap()
            .starts_with("<svg")
    );
    // The ranked table is also printed.
    assert!(String::from_utf8_lossy(&out.stdout).contains("| rank | trial | lr | batch_size |"));
    // Each child's output is in its log: a line per epoch.
    for trial in 0..6 {
        let log = std::fs::read_to_string(sweep.join(format!("trial-{trial}.log"))).unwrap();
        assert!(log.contains("epoch 3/3"), "trial {trial}: {log:?}");
    }

    // A job array's task: one trial, recorded into the same sweep folder.
    let other = tempfile::tempdir().unwrap();
    let other_artifacts = other.path().to_str().unwrap();
    let out = run(&[
        &grid[..],
        &["--trial", "4", "--quiet", "--artifacts", other_artifacts],
    ]
    .concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let same = other
        .path()
        .join("three_class")
        .join(sweep.file_name().unwrap());
    let csv = std::fs::read_to_string(same.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.lines().nth(1).unwrap().starts_with("1,4,0.2,16,"),
        "{csv}"
    );

    assert_refused(
        &[&grid[..], &["--trial", "6", "--artifacts", artifacts]].concat(),
        "the sweep has trials 0 to 5",
    );
    assert_refused(&["--trial", "0"], "--trial and --jobs need a sweep");
    // Ranked by another recorded metric, highest accuracy first.
    let third = tempfile::tempdir().unwrap();
    let args = [
        "--sweep",
        "lr=0.01,0.2",
        "--rank-by",
        "valid.accuracy",
        "--jobs",
        "2",
    ];
    let out = run(&[&args[..], &["--artifacts", third.path().to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let accuracy: Vec<f64> = table
        .lines()
        .skip(2)
        .filter(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(4).unwrap().trim().parse().unwrap())
        .collect();
    assert!(table.contains("| best valid.accuracy |"), "{table}");
    assert_eq!(accuracy.len(), 2, "{table}");
    assert!(accuracy[0] >= accuracy[1], "{table}");
    assert_refused(
        &["--sweep", "bogus=1,2", "--artifacts", artifacts],
        "unknown config key `bogus`",
    );
    assert_refused(
        &["--sweep", "batch_size=a,b", "--artifacts", artifacts],
        "invalid value \"a\" for config key `batch_size`",
    );
    // A metric the experiment does not record is refused before any trial trains.
    let fourth = tempfile::tempdir().unwrap();
    let f1 = ["--sweep", "lr=0.01,0.2", "--rank-by", "valid.f1"];
    assert_refused(
        &[&f1[..], &["--artifacts", fourth.path().to_str().unwrap()]].concat(),
        "--rank-by `valid.f1`: the experiment does not record it",
    );
    assert!(
        !fourth.path().join("three_class").exists(),
        "a trial trained"
    );
}

#[test]
fn verify_reruns_a_run_and_reports_bit_identity_or_the_first_difference() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = run(&["--quiet", "--seed", "5", "--artifacts", artifacts]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run_dir = dir.path().join("three_class/run-1");
    let out = run(&["--verify", run_dir.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("18 steps and 9 epoch values, bit-identical"),
        "{said}"
    );
    // Nothing was written: still one run.
    assert_eq!(
        std::fs::read_dir(dir.path().join("three_class"))
            .unwrap()
            .count(),
        1
    );

    // As if recorded on another CPU: its vector instructions are named among the causes.
    let config_path = run_dir.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config_path).unwrap()).unwrap();
    let ours = config["provenance"]["cpu"].as_str().unwrap().to_owned();
    config["provenance"]["cpu"] = "aarch64".into();
    std::fs::write(&config_path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let out = run(&[
        "--verify",
        run_dir.to_str().unwrap(),
        "--quiet",
        "--lr",
        "0.2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.contains("not reproduced") && said.contains("train.loss at step 2 (epoch 1)"),
        "{said}"
    );
    assert!(
        said.contains("setting `hyperparameters.lr`: saved 0.1, now 0.2"),
        "{said}"
    );
    assert!(
        said.contains(&format!("CPU vector instructions: aarch64 → {ours}")),
        "{said}"
    );
}

/// A `metrics.csv` value: one format, the shortest text that reads back as the same `f64`.
fn csv_value(text: &str) -> f64 {
    text.parse().unwrap()
}

#[test]
fn a_quiet_sweep_with_one_job_trains_every_trial_and_logs_each() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = run(&[
        "--sweep",
        "lr=0.05,0.1",
        "--epochs",
        "1",
        "--jobs",
        "1",
        "--quiet",
        "--artifacts",
        artifacts,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sweep = sweep_dir(dir.path());
    for trial in 0..2 {
        let log = sweep.join(format!("trial-{trial}.log"));
        assert!(log.exists(), "{}", log.display());
        assert!(
            !std::fs::read_to_string(&log)
                .unwrap()
                .contains("cannot be used multiple times")
        );
    }
    // Every line of the table has as many columns as its header.
    let md = std::fs::read_to_string(sweep.join("sweep.md")).unwrap();
    let columns: Vec<usize> = md.lines().map(|l| l.matches('|').count()).collect();
    assert_eq!(md.lines().count(), 4, "{md}");
    assert!(columns.iter().all(|&c| c == columns[0]), "{md}");
}

/// The write end of a pipe whose read end is already closed: every write fails with EPIPE,
/// as when the reader of `train | head -2` has exited.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe { libc::close(fds[0]) };
    // SAFETY: `fds[1]` is an open descriptor that nothing else owns.
    std::process::Stdio::from(unsafe { std::os::fd::OwnedFd::from_raw_fd(fds[1]) })
}

#[test]
fn a_closed_stdout_or_stderr_never_stops_the_training() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(BIN)
        .args(["--artifacts", dir.path().to_str().unwrap()])
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let run_dir = dir.path().join("three_class/run-1");
    let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l == ",3,valid,accuracy,70.83333333333333"),
        "{csv}"
    );
    let summary = std::fs::read_to_string(run_dir.join("summary.md")).unwrap();
    assert_eq!(
        summary
            .matches("output to the terminal was dropped")
            .count(),
        1,
        "{summary}"
    );
    // What a pipe into `head -1` gives `--print-config`.
    let status = Command::new(BIN)
        .arg("--print-config")
        .stdout(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn identical_runs_write_the_same_bytes_where_the_book_says() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    let artifacts = artifacts.to_str().unwrap();
    let first = dir.path().join("first");
    assert!(run(&["--artifacts", artifacts]).status.success());
    std::fs::rename(artifacts, &first).unwrap();
    assert!(run(&["--artifacts", artifacts]).status.success());
    let run_dir = |root: &Path| root.join("three_class/run-1");
    for file in [
        "config.json",
        "metrics.csv",
        "summary.md",
        "curves.svg",
        "checkpoint/scheduler-3.bpk",
    ] {
        assert_eq!(
            std::fs::read(run_dir(&first).join(file)).unwrap(),
            std::fs::read(run_dir(Path::new(artifacts)).join(file)).unwrap(),
            "{file}"
        );
    }
}

/// `--precision` on the main example, whose batch is the seed task's (`CastFloats` by hand):
/// bf16 and f16 train to the end, each validation loss near f32's.
#[test]
fn the_experiment_trains_in_bf16_and_f16() {
    let loss = |precision: &str| -> f64 {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&[
            "--precision",
            precision,
            "--artifacts",
            dir.path().to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{precision}: {}", stderr(&out));
        let csv =
            std::fs::read_to_string(dir.path().join("three_class/run-1/metrics.csv")).unwrap();
        csv.lines()
            .rfind(|l| l.contains(",valid,loss,"))
            .and_then(|l| l.rsplit(',').next()?.parse().ok())
            .expect("a validation loss")
    };
    let f32 = loss("f32");
    for precision in ["bf16", "f16"] {
        let low = loss(precision);
        assert!(
            (low - f32).abs() < 0.05 * f32,
            "{precision}: {low} against f32's {f32}"
        );
    }
}
