//! The search example's study, run as a user would: what the study folder holds, the same
//! trials with `--jobs 2`, a job array's `--trial K`, resuming after `kill -9`, and the
//! mistakes refused before any trial trains.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use folder::{find_study, outcome, records, study_dir, valid_losses};
use serde_json::Value;

mod folder;

const BIN: &str = env!("CARGO_BIN_EXE_search");

fn run(artifacts: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .expect("the example runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_study_records_each_trials_values_objective_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["--trials", "8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let study = study_dir(tmp.path());
    let records = records(&study);
    assert_eq!(records.len(), 8);
    let mut pruned = 0;
    for record in &records {
        let state = record["state"].as_str().unwrap();
        assert!(state == "complete" || state == "pruned", "{record}");
        let run = PathBuf::from(record["run"].as_str().unwrap());
        // The trial trained with its own value.
        let config: Value =
            serde_json::from_slice(&std::fs::read(run.join("config.json")).unwrap()).unwrap();
        assert_eq!(config["hyperparameters"]["lr"], record["params"][0][1]);
        // Its objective per epoch is the run's validation loss, every epoch it trained.
        let curve: Vec<(u64, f64)> = record["curve"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        assert_eq!(curve, valid_losses(&run), "{record}");
        if state == "pruned" {
            pruned += 1;
            // Stopped at a rung of successive halving (epochs 2 and 6 of 10), with that
            // epoch's checkpoint, so that it can be resumed.
            let last = curve.last().unwrap().0;
            assert!(last == 2 || last == 6, "{record}");
            assert!(run.join(format!("checkpoint/model-{last}.bpk")).exists());
            let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
            assert!(summary.contains("\npruned: at epoch"), "{summary}");
            assert!(!summary.contains("callback"), "{summary}");
        } else {
            assert_eq!(curve.len(), 10, "{record}");
        }
    }
    assert!(pruned > 0, "successive halving stops some of 8 trials");
    let md = std::fs::read_to_string(study.join("study.md")).unwrap();
    assert!(
        md.contains(&format!(
            "Trials: {} complete, {pruned} pruned, 0 failed, 0 running.",
            8 - pruned
        )),
        "{md}"
    );
    assert!(md.contains("Best: trial "), "{md}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("| trial | state | lr |"));
    let csv = std::fs::read_to_string(study.join("study.csv")).unwrap();
    assert!(
        csv.starts_with("trial,state,lr,valid.loss,best_so_far,epochs,run\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 9);
    let svg = std::fs::read_to_string(study.join("study.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("best so far"));
    // A pruned trial promoted: trained on from its checkpoint, in its run, to epoch 10.
    let k = records.iter().position(|r| r["state"] == "pruned").unwrap();
    let out = run(tmp.path(), &["--trials", "8", "--promote", &k.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let promoted = &self::records(&study)[k];
    assert_eq!(promoted["state"], "complete", "{promoted}");
    assert_eq!(promoted["run"], records[k]["run"]);
    let curve = promoted["curve"].as_array().unwrap();
    let before = records[k]["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 10);
    assert_eq!(curve[..before.len()], before[..]);
    let run_dir = PathBuf::from(promoted["run"].as_str().unwrap());
    let epochs: Vec<u64> = valid_losses(&run_dir).iter().map(|&(e, _)| e).collect();
    assert_eq!(epochs, (1..=10).collect::<Vec<u64>>());
    let again = run(tmp.path(), &["--trials", "8", "--promote", &k.to_string()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("was not pruned"),
        "{}",
        stderr(&again)
    );
    let mut records = records;
    records[k] = promoted.clone();
    // Run again, the study has nothing left to train.
    let again = run(tmp.path(), &["--trials", "8"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stderr(&again).contains("started"), "{}", stderr(&again));
    assert_eq!(
        records.iter().map(outcome).collect::<Vec<_>>(),
        self::records(&study)
            .iter()
            .map(outcome)
            .collect::<Vec<_>>()
    );
    // A record edited by hand into something else is refused by name, not trained again.
    let edited = study.join("trial-3.json");
    std::fs::write(&edited, b"{\"trial\": 3, \"state\": \"done\"}").unwrap();
    let refused = run(tmp.path(), &["--trials", "8"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("{} is not a trial record", edited.display())),
        "{}",
        stderr(&refused)
    );
    assert!(
        !stderr(&refused).contains("started"),
        "{}",
        stderr(&refused)
    );
}

/// Trial K is drawn from trials 0..=K-2 alone with two jobs, so two runs draw the same trials
/// whichever trial ends first; a job array's `--trial K` draws the same as the study process.
#[test]
fn two_jobs_draw_the_same_trials_every_time_and_so_does_a_job_array() {
    let (a, b, array) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let flags = ["--trials", "12", "--jobs", "2"];
    for dir in [&a, &b] {
        let out = run(dir.path(), &flags);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let outcomes =
        |dir: &Path| -> Vec<_> { records(&study_dir(dir)).iter().map(outcome).collect() };
    let first = outcomes(a.path());
    assert_eq!(first.len(), 12);
    assert_eq!(first, outcomes(b.path()));
    // TPE models the results after 10 trials: trial 11 is drawn from trials 0 to 9.
    let distinct: std::collections::BTreeSet<String> =
        first.iter().map(|o| o.0.to_string()).collect();
    assert_eq!(distinct.len(), 12);
    // A job array of 2 at a time: each task trains one trial, drawn from the same results.
    for k in 0..4 {
        let k = k.to_string();
        let out = run(
            array.path(),
            &["--trials", "12", "--jobs", "2", "--trial", &k],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(outcomes(array.path()), first[..4]);
    // With one job, trial K sees one more trial: another study, in another folder.
    let one = tempfile::tempdir().unwrap();
    let out = run(one.path(), &["--trials", "12"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(
        study_dir(one.path()).file_name(),
        study_dir(a.path()).file_name()
    );
}

/// `kill -9` of the study process kills the trial training (no orphan writes beside the
/// resumed one); the same command then trains what is left: the trial that was training goes
/// on from its checkpoint in its own run, no trial is lost or trained twice, and every value
/// equals an uninterrupted study's bit for bit.
#[test]
fn a_study_killed_with_9_resumes_each_trial_once_and_exactly() {
    let flags = ["--trials", "8", "--epochs", "40", "--prune", "none"];
    let expected = uninterrupted(&flags);

    let tmp = tempfile::tempdir().unwrap();
    // First a SIGTERM to the study process alone, once trial 1 trained 3 epochs: the trial
    // saves and stops, the study exits with 130; then, resumed, a kill -9 once a later trial
    // trained 3 epochs.
    let (termed, _) = stop_at(tmp.path(), &flags, "-TERM", |r| training(r, 1, 3));
    assert_eq!(termed, Some(130));
    let (killed, killed_in) = stop_at(tmp.path(), &flags, "-KILL", |r| training(r, 2, 3));
    assert_eq!(killed, None, "killed by a signal");
    let trial = killed_in["trial"].as_u64().unwrap() as usize;
    let run_dir = PathBuf::from(killed_in["run"].as_str().unwrap());
    // The trial's process died with the study's: its metrics stop growing.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let size = std::fs::metadata(run_dir.join("metrics.csv"))
        .unwrap()
        .len();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        std::fs::metadata(run_dir.join("metrics.csv"))
            .unwrap()
            .len(),
        size
    );
    let study = study_dir(tmp.path());
    let left = records(&study);
    assert_eq!(left[trial]["state"], "running", "{left:?}");
    assert!(left[..trial].iter().all(|r| r["state"] == "complete"));
    assert!(trial >= 2);

    let out = run(tmp.path(), &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("study: trial {trial} of 8 started (lr=")),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains(&format!("study: trial {} of 8", trial - 1)),
        "an ended trial ran again: {}",
        stderr(&out)
    );
    let resumed = records(&study);
    assert_eq!(resumed.iter().map(outcome).collect::<Vec<_>>(), expected);
    // Resumed in its own run, from its checkpoint: every epoch once in its metrics.
    assert_eq!(resumed[trial]["run"], killed_in["run"]);
    let epochs: Vec<u64> = valid_losses(&run_dir).iter().map(|&(e, _)| e).collect();
    assert_eq!(epochs, (1..=40).collect::<Vec<u64>>());
    // One run per trial: none started twice.
    let runs = run_folders(tmp.path());
    assert_eq!(runs, 8);
}

/// A trial past its first 512 epochs, whose record is rewritten every 8th epoch there, killed
/// with the study just after a checkpoint its record does not reach (epoch 8k+1 to 8k+7):
/// resumed from that checkpoint, its record is filled in from the run's history, and its run
/// and record hold every epoch once, equal to an uninterrupted study's bit for bit.
#[test]
fn a_long_trial_killed_with_9_ahead_of_its_record_resumes_with_every_epoch_once() {
    let flags = ["--trials", "1", "--epochs", "1000", "--prune", "none"];
    let reference = tempfile::tempdir().unwrap();
    let out = run(reference.path(), &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = outcome(&records(&study_dir(reference.path()))[0]);
    // The newest checkpoint's epoch: its `state-N.json`, written last, makes it exist.
    let checkpoint = |record: &Value| {
        let run = PathBuf::from(record["run"].as_str()?);
        std::fs::read_dir(run.join("checkpoint"))
            .ok()?
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                name.strip_prefix("state-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()
            })
            .max()
    };
    // The kill can land after the trial reached its next rewrite; tried again then.
    for _ in 0..10 {
        let tmp = tempfile::tempdir().unwrap();
        let (killed, killed_in) = stop_at(tmp.path(), &flags, "-KILL", |r| {
            // Any epoch between two rewrites: waiting for one of them (a window of one
            // epoch, about a millisecond) could miss every window on a loaded machine, where
            // checkpoints are also saved behind the record.
            training(r, 0, 512)
                && checkpoint(r).is_some_and(|e: usize| e > r["curve"].as_array().unwrap().len())
        });
        assert_eq!(killed, None, "killed by a signal");
        let left = &records(&study_dir(tmp.path()))[0];
        let recorded = left["curve"].as_array().unwrap().len();
        if checkpoint(left).is_none_or(|saved| saved <= recorded) {
            continue;
        }
        let out = run(tmp.path(), &flags);
        assert!(out.status.success(), "{}", stderr(&out));
        let resumed = &records(&study_dir(tmp.path()))[0];
        assert_eq!(resumed["run"], killed_in["run"]);
        assert_eq!(outcome(resumed), expected);
        let run_dir = PathBuf::from(killed_in["run"].as_str().unwrap());
        let epochs: Vec<u64> = valid_losses(&run_dir).iter().map(|&(e, _)| e).collect();
        assert_eq!(epochs, (1..=1000).collect::<Vec<u64>>());
        return;
    }
    panic!("in 10 tries, no kill landed between a checkpoint and the record's next rewrite");
}

/// A SIGTERM to the study process alone reaches the trial training after the grace period: it
/// stops where it is, saved, and the study exits with 130 and resumes from there. (4000 epochs,
/// about 5.5 s here: the trial outlives the 2 s grace.)
#[test]
fn a_sigterm_to_the_study_alone_is_passed_on_and_the_trial_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let flags = ["--trials", "1", "--epochs", "4000", "--prune", "none"];
    let (code, record) = stop_at(tmp.path(), &flags, "-TERM", |r| training(r, 0, 3));
    assert_eq!(code, Some(130));
    let study = study_dir(tmp.path());
    let left = &records(&study)[0];
    assert_eq!(left["state"], "running");
    let stopped_at = left["curve"].as_array().unwrap().len();
    assert!(stopped_at < 4000, "{stopped_at}");
    let run_dir = PathBuf::from(record["run"].as_str().unwrap());
    // Stopped after a step, it saved that step; stopped while validating, it keeps the last
    // epoch it recorded, whose checkpoint it resumes from (training the next epoch again).
    let checkpoint = run_dir.join("checkpoint");
    assert!(
        checkpoint.join("model-interrupted.bpk").exists()
            || checkpoint.join(format!("model-{stopped_at}.bpk")).exists(),
        "no checkpoint where trial 0 stopped, after epoch {stopped_at}"
    );
    let out = run(tmp.path(), &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    let done = &records(&study)[0];
    assert_eq!(done["state"], "complete");
    assert_eq!(done["run"], record["run"]);
    let epochs: Vec<u64> = valid_losses(&run_dir).iter().map(|&(e, _)| e).collect();
    assert_eq!(epochs, (1..=4000).collect::<Vec<u64>>());
}

/// A trial's process killed on its own (the OOM killer, a node's failure: `kill -9` of the
/// trial, not the study) is trained again at once from its checkpoint, in its own run: the
/// study goes on and ends with every record equal to an uninterrupted study's, every epoch of
/// that trial once, and no run folder more than trials.
#[test]
fn a_trial_killed_on_its_own_is_trained_again_and_the_study_equals_an_uninterrupted_one() {
    let flags = ["--trials", "3", "--epochs", "150", "--prune", "none"];
    let expected = uninterrupted(&flags);

    let tmp = tempfile::tempdir().unwrap();
    let mut study = Command::new(BIN)
        .args(flags)
        .arg("--artifacts")
        .arg(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let said = {
        let mut pipe = study.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut pipe, &mut text).unwrap();
            text
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let killed_in = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "trial 1 never trained"
        );
        assert!(study.try_wait().unwrap().is_none(), "the study ended first");
        let ready = find_study(tmp.path())
            .and_then(|dir| records(&dir).into_iter().find(|r| training(r, 1, 3)));
        if let Some(record) = ready {
            break record;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let trial = killed_in["trial"].as_u64().unwrap();
    let pids = trial_processes(study.id());
    assert_eq!(pids.len(), 1, "one trial process: {pids:?}");
    let sent = Command::new("kill")
        .args(["-9", &pids[0].to_string()])
        .status();
    assert!(sent.unwrap().success());
    assert!(study.wait().unwrap().success());
    let said = said.join().unwrap();
    assert!(
        said.contains(&format!(
            "study: trial {trial}'s process was killed (signal: 9 (SIGKILL)); trained again from its last checkpoint"
        )),
        "{said}"
    );
    let study = study_dir(tmp.path());
    let done = records(&study);
    assert_eq!(done.iter().map(outcome).collect::<Vec<_>>(), expected);
    assert_eq!(done[trial as usize]["run"], killed_in["run"]);
    let run_dir = PathBuf::from(killed_in["run"].as_str().unwrap());
    let epochs: Vec<u64> = valid_losses(&run_dir).iter().map(|&(e, _)| e).collect();
    assert_eq!(epochs, (1..=150).collect::<Vec<u64>>());
    let runs = run_folders(tmp.path());
    assert_eq!(runs, 3);
}

/// The processes whose parent is `pid` (a study's trials), from `/proc`.
fn trial_processes(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            // `pid (comm) state ppid ..`: the fields after the last `)`.
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// What each trial of an uninterrupted study with `flags` is.
fn uninterrupted(flags: &[&str]) -> Vec<(Value, Value, Value)> {
    let reference = tempfile::tempdir().unwrap();
    let out = run(reference.path(), flags);
    assert!(out.status.success(), "{}", stderr(&out));
    records(&study_dir(reference.path()))
        .iter()
        .map(outcome)
        .collect()
}

/// How many `run-N` folders the experiment has under `artifacts`.
fn run_folders(artifacts: &Path) -> usize {
    std::fs::read_dir(artifacts.join("plane_fit"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("run-")
        })
        .count()
}

/// Whether `record` is trial `from` or a later one, training, with `epochs` epochs recorded.
fn training(record: &Value, from: u64, epochs: usize) -> bool {
    record["state"] == "running"
        && record["trial"].as_u64() >= Some(from)
        && record["curve"]
            .as_array()
            .is_some_and(|c| c.len() >= epochs)
}

/// Starts the study and sends it `signal` once a trial's record is `ready`; its exit code,
/// and that record.
fn stop_at(
    artifacts: &Path,
    flags: &[&str],
    signal: &str,
    ready: impl Fn(&Value) -> bool,
) -> (Option<i32>, Value) {
    let mut child = Command::new(BIN)
        .args(flags)
        .arg("--artifacts")
        .arg(artifacts)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let found = loop {
        // A study that ended (or failed) before any trial was ready never will be.
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            break None;
        }
        let training =
            find_study(artifacts).and_then(|study| records(&study).into_iter().find(&ready));
        if training.is_some() {
            break training;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SIGKILL without starting `kill`, to land as soon after `ready` as can be.
    if found.is_none() || signal == "-KILL" {
        child.kill().unwrap();
    } else {
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        assert!(sent.unwrap().success());
    }
    let status = child.wait().unwrap();
    (
        status.code(),
        found.expect("a trial ready within 2 minutes, before the study ended"),
    )
}

#[test]
fn mistakes_are_refused_before_any_trial_trains() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--search", "lr=log_uniform(0,1)"][..],
            "--search lr: `log_uniform` needs low > 0",
        ),
        (
            &["--search", "lrr=uniform(0.1,0.2)"],
            "unknown config key `lrr`; did you mean `lr`?",
        ),
        (
            &["--search", "batch_size=uniform(8,64)"],
            "`batch_size` is a whole number: draw it with `int(low, high)`",
        ),
        (
            &["--search", "lr=log_unifrom(1e-3,1)"],
            "did you mean `log_uniform`?",
        ),
        (
            &["--objective", "min(valid.accuracy)"],
            "the objective `valid.accuracy` is not recorded",
        ),
        (
            &["--objective", "max(valid.loss)"],
            "it would rank the worst trial best, loss is better low; write `--objective min(valid.loss)`",
        ),
        (
            &["--objective", "valid.loss"],
            "write `min(split.metric)` or `max(split.metric)`",
        ),
        (&["--sweep", "lr=0.1,0.2"], "searches or sweeps, not both"),
        (
            &["--trial", "30"],
            "--trial 30: the study has trials 0 to 29",
        ),
        (
            &["--promote", "30"],
            "--promote 30: the study has trials 0 to 29",
        ),
        (&["--sampler", "grid"], "[possible values: tpe, random]"),
    ] {
        let out = run(tmp.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert!(!tmp.path().join("plane_fit").exists());
}

/// The plane fit's best rate is about 0.42 (the search page's optimum). The range test, run
/// as a user would before a study, suggests a rate below it by less than a factor of 8, and
/// its curve reaches past it before diverging. It writes its own folder and nothing else: no
/// study, no run among the experiment's runs.
#[test]
fn the_range_test_suggests_a_rate_below_the_known_optimum_and_writes_its_own_folder() {
    const OPTIMUM: f64 = 0.42;
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["--find-lr", "--quiet"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(out.status.success(), "{stdout}");
    let said: f64 = stdout
        .split("train with it: --lr ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|lr| lr.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        (OPTIMUM / 8.0..OPTIMUM).contains(&said),
        "suggested {said}: {stdout}"
    );
    let dir = tmp.path().join("plane_fit/lr-find/run-1");
    let csv = std::fs::read_to_string(dir.join("lr-find.csv")).unwrap();
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows[0][1], 1e-7, "the default start");
    // One factor per step (100 steps from 1e-7 to 10).
    let factor = (1e8f64).powf(1.0 / 99.0);
    for pair in rows.windows(2) {
        assert!(
            (pair[1][1] / pair[0][1] / factor - 1.0).abs() < 1e-9,
            "{pair:?}"
        );
    }
    let last = rows.last().unwrap();
    assert!(
        last[1] > OPTIMUM && rows.len() < 100,
        "cut where it diverged: {last:?}"
    );
    // The suggestion is a row of the curve, at its steepest smoothed fall.
    assert!(
        rows.iter()
            .any(|r| format!("{:.3e}", r[1]) == format!("{said:.3e}"))
    );
    let svg = std::fs::read_to_string(dir.join("lr-find.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("suggested"),
        "{svg}"
    );
    let experiment: Vec<String> = std::fs::read_dir(tmp.path().join("plane_fit"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        experiment,
        ["lr-find"],
        "no study, no run of the experiment"
    );
}

#[test]
fn a_range_test_that_cannot_rise_or_would_resume_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["--find-lr", "--find-lr-to", "1e-9"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("give a larger end"),
        "{}",
        stderr(&out)
    );
    let out = run(tmp.path(), &["--find-lr", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));
    let out = run(tmp.path(), &["--find-lr-steps", "50"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--find-lr"), "{}", stderr(&out));
    assert!(!tmp.path().join("plane_fit").exists(), "nothing trained");
}
