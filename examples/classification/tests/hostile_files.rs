//! What a careless user, a script or a hostile file system puts where a run reads: special
//! files, huge and sparse files, repeated keys, numbers out of range. Each ends with a clear
//! error or a complete, resumable run, quickly: every process here runs with its address space
//! limited (`ulimit -v`) and is killed after a minute, so a regression fails the test instead
//! of eating the machine or hanging it.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_classification");

/// The example with `args`, its address space limited to 4 GiB and its time to a minute.
fn run_bounded(args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 4 << 30,
                rlim_max: 4 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("the example runs");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = (
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            out.read_to_end(&mut bytes).map(|_| bytes)
        }),
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            err.read_to_end(&mut bytes).map(|_| bytes)
        }),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{args:?} still runs after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: readers.0.join().unwrap().unwrap(),
        stderr: readers.1.join().unwrap().unwrap(),
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Refused with exit 2 and a message containing `says`, in at most 10 kB of stderr.
fn assert_refused(args: &[&str], says: &str) {
    let out = run_bounded(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(
        err.len() < 10_000,
        "{args:?}: {} bytes of stderr",
        err.len()
    );
}

#[test]
fn hostile_config_files_and_values_are_refused_quickly_and_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    assert_refused(
        &["--config", "/dev/zero"],
        "/dev/zero is not a regular file (it is a device)",
    );
    mkfifo(&dir.path().join("fifo.json"));
    assert_refused(
        &["--config", &path("fifo.json")],
        "fifo.json is not a regular file (it is a FIFO)",
    );
    let sparse = std::fs::File::create(path("sparse.json")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    assert_refused(
        &["--config", &path("sparse.json")],
        "holds 1073741824 bytes, more than the 4194304 a config file may hold",
    );
    std::fs::write(path("twice.json"), r#"{"epochs": 3, "epochs": 4}"#).unwrap();
    assert_refused(
        &["--config", &path("twice.json")],
        "the key `epochs` appears twice; keep one",
    );
    // A string of 3 MiB where a number goes: the message quotes 200 characters of it.
    let long = format!(r#"{{"epochs": "{}"}}"#, "7".repeat(3 << 20));
    std::fs::write(path("long.json"), long).unwrap();
    assert_refused(&["--config", &path("long.json")], "more characters)");
    assert_refused(
        &["--set", "epochs=9223372036854775808"],
        "is 9223372036854775808; it must be a whole number from 1 to 4294967295",
    );
    assert_refused(
        &["--epochs", "18446744073709551615"],
        "it must be a whole number from 1 to 4294967295",
    );
    assert_refused(
        &["--set", r#"optimizer={"kind": "sgd", "kind": "adam"}"#],
        "--set optimizer: the key `kind` appears twice; keep one",
    );
    assert_refused(
        &["--lr", "NaN"],
        "--lr NaN: the learning rate must be a number above 0, e.g. `--lr 1e-3`",
    );
    assert_refused(
        &["--batch-size", "4294967296"],
        "it must be a whole number from 1 to 4294967295",
    );
}

/// A finished three-epoch run (`keep_last(2)`: epochs 2 and 3 on disk) copied into `into`.
fn finished_run(template: &Path, into: &Path) -> std::path::PathBuf {
    let run_dir = into.join("three_class/run-1");
    std::fs::create_dir_all(run_dir.join("checkpoint")).unwrap();
    for entry in walk(template) {
        let relative = entry.strip_prefix(template).unwrap();
        std::fs::copy(&entry, run_dir.join(relative)).unwrap();
    }
    run_dir
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn special_files_in_a_run_directory_end_in_a_clear_error_or_a_resumed_run() {
    let template = tempfile::tempdir().unwrap();
    let out = run_bounded(&["--artifacts", template.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let template = template.path().join("three_class/run-1");
    let uninterrupted = std::fs::read_to_string(template.join("metrics.csv")).unwrap();
    // (file, replaced by a FIFO or a link to /dev/zero, what the resume says)
    let cases = [
        (
            "metrics.csv",
            true,
            "metrics.csv is not a regular file (it is a FIFO)",
        ),
        (
            "metrics.csv",
            false,
            "metrics.csv is not a regular file (it is a device)",
        ),
        ("checkpoint/state-3.json", true, "resuming after epoch 2"),
        ("checkpoint/state-3.json", false, "resuming after epoch 2"),
        ("checkpoint/model-3.bpk", true, "resuming after epoch 2"),
        ("checkpoint/optim-3.bpk", false, "resuming after epoch 2"),
        ("config.json", true, "resuming after epoch 3"),
    ];
    for (file, fifo, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = finished_run(&template, dir.path());
        let target = run_dir.join(file);
        std::fs::remove_file(&target).unwrap();
        if fifo {
            mkfifo(&target);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &target).unwrap();
        }
        let out = run_bounded(&[
            "--resume",
            "latest",
            "--artifacts",
            dir.path().to_str().unwrap(),
        ]);
        let err = stderr(&out);
        assert!(err.contains(says), "{file}: {err}");
        if file == "metrics.csv" {
            assert_eq!(out.status.code(), Some(1), "{file}: {err}");
            assert!(err.contains("help: restore the file"), "{err}");
        } else {
            // Resumed to the end, and the record is the uninterrupted run's.
            assert!(out.status.success(), "{file}: {err}");
            let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
            assert_eq!(csv, uninterrupted, "{file}");
            // Rotation went on as in the uninterrupted run, whatever stood in a file's place:
            // `keep_last(2) | best(valid.loss)` keeps epochs 2 and 3, each a regular file.
            let mut left: Vec<String> = std::fs::read_dir(run_dir.join("checkpoint"))
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|e| e.file_type().unwrap().is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            left.sort();
            let mut uninterrupted_files: Vec<String> =
                std::fs::read_dir(template.join("checkpoint"))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
            uninterrupted_files.sort();
            assert_eq!(left, uninterrupted_files, "{file}");
            let entries = std::fs::read_dir(run_dir.join("checkpoint"))
                .unwrap()
                .count();
            assert_eq!(entries, left.len(), "{file}: a link or FIFO left behind");
        }
    }
}

/// The file names in a run's checkpoint folder, sorted, and whether each is a regular file.
fn checkpoint_files(run_dir: &Path) -> Vec<(String, bool)> {
    let mut files: Vec<(String, bool)> = std::fs::read_dir(run_dir.join("checkpoint"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.file_type().unwrap().is_file())
        })
        .collect();
    files.sort();
    files
}

/// A run extended past an epoch whose file a link to `/dev/zero`, a FIFO or a sparse file
/// replaced: that epoch is skipped on resume, trained again, and rotated away like any other,
/// so the folder ends as an uninterrupted 8-epoch run's.
#[test]
fn a_run_extended_past_a_damaged_epoch_rotates_it_away() {
    let reference = tempfile::tempdir().unwrap();
    let artifacts = |dir: &Path| dir.to_str().unwrap().to_owned();
    let out = run_bounded(&["--epochs", "8", "--artifacts", &artifacts(reference.path())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = checkpoint_files(&reference.path().join("three_class/run-1"));
    for (file, damage) in [
        ("state-5.json", "link"),
        ("model-5.bpk", "link"),
        ("state-5.json", "fifo"),
        ("optim-5.bpk", "sparse"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run_bounded(&["--epochs", "5", "--artifacts", &artifacts(dir.path())]);
        assert!(out.status.success(), "{}", stderr(&out));
        let run_dir = dir.path().join("three_class/run-1");
        let target = run_dir.join("checkpoint").join(file);
        std::fs::remove_file(&target).unwrap();
        match damage {
            "link" => std::os::unix::fs::symlink("/dev/zero", &target).unwrap(),
            "fifo" => mkfifo(&target),
            _ => std::fs::File::create(&target)
                .unwrap()
                .set_len(1 << 30)
                .unwrap(),
        }
        let out = run_bounded(&[
            "--epochs",
            "8",
            "--resume",
            "latest",
            "--artifacts",
            &artifacts(dir.path()),
        ]);
        let err = stderr(&out);
        assert!(out.status.success(), "{file} {damage}: {err}");
        assert!(
            err.contains("resuming after epoch 4"),
            "{file} {damage}: {err}"
        );
        assert_eq!(checkpoint_files(&run_dir), expected, "{file} {damage}");
    }
}
