//! Tracking on a real MLflow server, read back through its REST API. `.ci/run` installs MLflow
//! (pinned, in a virtual environment), starts `mlflow server` on 127.0.0.1 with a SQLite store
//! and runs these with the feature `mlflow-tests`, `DSL_MLFLOW_SERVER` naming that server and
//! `DSL_MLFLOW_BIN` the `mlflow` command (for the test that stops and restarts a server of its
//! own). Without them the tests fail: they never skip.
#![cfg(feature = "mlflow-tests")]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_train");

fn server() -> String {
    std::env::var("DSL_MLFLOW_SERVER")
        .expect("DSL_MLFLOW_SERVER names the MLflow server these tests read back from")
}

/// An experiment name no other test (or earlier CI run) uses.
fn experiment(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

/// A GET of the server's `path`: its status and body.
fn get(server: &str, path: &str) -> (u16, Vec<u8>) {
    let authority = server.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut body = answer[end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap(), 16).unwrap();
            rest = &rest[line + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body = out;
    }
    (status, body)
}

fn api(server: &str, path: &str) -> Value {
    let (status, body) = get(server, &format!("/api/2.0/mlflow/{path}"));
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn train(artifacts: &Path, uri: &str, experiment: &str, flags: &[&str]) -> Child {
    Command::new(BIN)
        .arg("--artifacts")
        .arg(artifacts)
        .args(flags)
        .env("MLFLOW_TRACKING_URI", uri)
        .env("MLFLOW_EXPERIMENT_NAME", experiment)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finished(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// `stderr` without the line a loaded machine may print, the server not taking the run's end
/// within the stated wait; when it was printed, the sync command it names has sent the rest (as
/// a user would), so the server holds the end all the same.
fn settled(artifacts: &Path, server: &str, stderr: &str) -> String {
    const LATE: &str = "did not take the run's end";
    if stderr.contains(LATE) {
        let out = Command::new(BIN)
            .args(["--mlflow-sync", "--artifacts"])
            .arg(artifacts)
            .env("MLFLOW_TRACKING_URI", server)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{said}");
    }
    stderr
        .lines()
        .filter(|line| !line.contains(LATE))
        .map(|line| format!("{line}\n"))
        .collect()
}

fn run_dir(artifacts: &Path) -> PathBuf {
    artifacts.join("resumable/run-1")
}

fn ledger(run_dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("mlflow.json")).unwrap()).unwrap()
}

/// `metrics.csv` as MLflow should hold it: (key, step) → value, each key as TensorBoard's tag.
fn csv_metrics(run_dir: &Path) -> BTreeMap<(String, u64), f64> {
    let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    let mut values = BTreeMap::new();
    for line in csv.lines().skip(1) {
        let [step, epoch, split, metric, value] = line.split(',').collect::<Vec<_>>()[..] else {
            panic!("{line}");
        };
        let key = match step {
            "" => (format!("epoch/{split}/{metric}"), epoch.parse().unwrap()),
            step => (format!("{split}/{metric}"), step.parse().unwrap()),
        };
        assert!(
            values.insert(key, value.parse().unwrap()).is_none(),
            "{line} twice"
        );
    }
    values
}

/// Every value the server holds of the run's metrics: (key, step) → each value logged there.
fn server_metrics(server: &str, run_id: &str) -> BTreeMap<(String, u64), Vec<f64>> {
    let run = api(server, &format!("runs/get?run_id={run_id}"));
    let mut values: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    let metrics = run["run"]["data"]["metrics"].as_array().cloned();
    for metric in metrics.unwrap_or_default() {
        let key = metric["key"].as_str().unwrap();
        let history = api(
            server,
            &format!(
                "metrics/get-history?run_id={run_id}&metric_key={}",
                encode(key)
            ),
        );
        for point in history["metrics"].as_array().unwrap() {
            values
                .entry((key.to_owned(), point["step"].as_u64().unwrap()))
                .or_default()
                .push(number(&point["value"]));
        }
    }
    values
}

/// A value as the server gives it: a number, or (protobuf's JSON) `"NaN"`, `"Infinity"`.
fn number(value: &Value) -> f64 {
    match value {
        Value::String(text) => match text.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => panic!("{other}"),
        },
        other => other.as_f64().unwrap(),
    }
}

/// The server holds exactly `metrics.csv`: one value per (metric, step), equal to the file's.
fn assert_server_holds_the_csv(server: &str, run_dir: &Path) {
    let run_id = ledger(run_dir)["run_id"].as_str().unwrap().to_owned();
    let held = server_metrics(server, &run_id);
    let csv = csv_metrics(run_dir);
    let once: BTreeMap<(String, u64), f64> = held
        .iter()
        .map(|(key, values)| {
            assert_eq!(values.len(), 1, "{key:?} holds {values:?}");
            (key.clone(), values[0])
        })
        .collect();
    // Compared as bits, so that a NaN (a diverged run's loss) equals itself; the server keeps
    // no sign on a zero (a loss of -0.0 in the file is 0 there).
    let bits = |map: &BTreeMap<(String, u64), f64>| -> BTreeMap<(String, u64), u64> {
        map.iter()
            .map(|(k, v)| {
                let bits = match v {
                    v if v.is_nan() => u64::MAX,
                    v if *v == 0.0 => 0,
                    v => v.to_bits(),
                };
                (k.clone(), bits)
            })
            .collect()
    };
    assert_eq!(once.len(), csv.len());
    assert_eq!(bits(&once), bits(&csv));
}

fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&key, value, out);
            }
        }
        Value::String(text) => drop(out.insert(prefix.to_owned(), text.clone())),
        other => drop(out.insert(prefix.to_owned(), other.to_string())),
    }
}

#[test]
fn a_run_shows_its_params_every_value_its_files_and_its_status() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("whole");
    let stderr = finished(train(
        dir.path(),
        &server,
        &name,
        &["--epochs", "4", "--mlflow-log-model"],
    ));
    let stderr = settled(dir.path(), &server, &stderr);
    assert!(!stderr.contains("MLflow"), "nothing to say: {stderr}");
    let run_dir = run_dir(dir.path());
    let ledger = ledger(&run_dir);
    let run_id = ledger["run_id"].as_str().unwrap();
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    let info = &run["run"]["info"];
    assert_eq!(info["status"], "FINISHED");
    // The artifacts folder, the experiment and the run: first runs in other folders differ.
    let folder = dir.path().file_name().unwrap().to_string_lossy();
    assert_eq!(info["run_name"], format!("{folder}/resumable/run-1"));
    let found = api(
        &server,
        &format!("experiments/get-by-name?experiment_name={}", encode(&name)),
    );
    assert_eq!(info["experiment_id"], found["experiment"]["experiment_id"]);

    let config: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("config.json")).unwrap()).unwrap();
    let mut expected = BTreeMap::new();
    flatten("", &config, &mut expected);
    let params: BTreeMap<String, String> = run["run"]["data"]["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["key"].as_str().unwrap().to_owned(),
                p["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(params, expected);
    assert_eq!(params["epochs"], "4");

    let tags: BTreeMap<String, String> = run["run"]["data"]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["key"].as_str().unwrap().to_owned(),
                t["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // The runtime's version: the workspace's, which this example shares.
    assert_eq!(tags["dsl.runtime_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        tags.get("mlflow.source.git.commit").map(String::as_str),
        config["provenance"]["git"]["commit"].as_str()
    );

    assert_server_holds_the_csv(&server, &run_dir);

    let root = info["artifact_uri"]
        .as_str()
        .unwrap()
        .trim_start_matches("mlflow-artifacts:/");
    // `--mlflow-log-model`: the weights `load_best` picks, written and logged.
    for file in [
        "config.json",
        "summary.md",
        "curves.svg",
        "model.safetensors",
    ] {
        let (status, bytes) = get(
            &server,
            &format!("/api/2.0/mlflow-artifacts/artifacts/{root}/{file}"),
        );
        assert_eq!(status, 200, "{file}");
        assert_eq!(bytes, std::fs::read(run_dir.join(file)).unwrap(), "{file}");
    }
}

#[test]
fn kill_9_then_resume_continues_the_same_run_with_one_value_per_step() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("killed");
    let run_dir = run_dir(dir.path());
    let mut child = train(dir.path(), &server, &name, &["--epochs", "400"]);
    // Killed once the server holds some epochs.
    let started = Instant::now();
    while !run_dir.join("mlflow.json").exists()
        || ledger(&run_dir)["rows_sent"].as_u64().unwrap() < 100
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "nothing reached the server"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = ledger(&run_dir);
    let run_id = before["run_id"].as_str().unwrap().to_owned();
    let held = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(held["run"]["info"]["status"], "RUNNING");
    // The checkpoint's resume trains again the steps after it; the server keeps each once.
    let stderr = finished(train(dir.path(), &server, &name, &["--epochs", "400"]));
    settled(dir.path(), &server, &stderr);
    let after = ledger(&run_dir);
    assert_eq!(after["run_id"], before["run_id"], "the same MLflow run");
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "FINISHED");
    assert_eq!(csv_metrics(&run_dir).len(), 400 * 6 + 400 * 3);
    assert_server_holds_the_csv(&server, &run_dir);
}

/// A kill after the server took the params but before the ledger named them leaves a ledger
/// with no params; the resume (whose `epochs` differs) keeps tracking: the server's params are
/// read back, the differing values go as tags, and every value arrives once.
#[test]
fn a_resume_after_a_kill_before_the_ledger_named_the_params_keeps_tracking() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("unnamed-params");
    let run_dir = run_dir(dir.path());
    finished(train(dir.path(), &server, &name, &["--epochs", "2"]));
    let mut left = ledger(&run_dir);
    left["params"] = serde_json::json!({});
    left["changed"] = serde_json::json!({});
    left["rows_sent"] = 0.into();
    std::fs::write(run_dir.join("mlflow.json"), left.to_string()).unwrap();
    let stderr = finished(train(
        dir.path(),
        &server,
        &name,
        &["--epochs", "3", "--resume", "latest"],
    ));
    let stderr = settled(dir.path(), &server, &stderr);
    assert!(!stderr.contains("MLflow"), "nothing to say: {stderr}");
    let run_id = left["run_id"].as_str().unwrap();
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "FINISHED");
    assert_server_holds_the_csv(&server, &run_dir);
    let (params, tags) = params_and_tags(&server, run_id);
    assert_eq!(params["epochs"], "2");
    assert_eq!(tags["dsl.changed.epochs"], "3");
    let after = ledger(&run_dir);
    assert_eq!(
        after["params"]["epochs"], "2",
        "the server's params, in the ledger"
    );
    assert_eq!(after["rows_sent"], csv_metrics(&run_dir).len());
}

/// A server of the test's own on a free port, with its store in `dir`.
fn own_server(dir: &Path, port: u16) -> Child {
    let bin = std::env::var("DSL_MLFLOW_BIN").expect("DSL_MLFLOW_BIN names the `mlflow` command");
    let mut child = Command::new(bin)
        .args(["server", "--host", "127.0.0.1", "--port", &port.to_string()])
        .arg("--backend-store-uri")
        .arg(format!("sqlite:///{}", dir.join("store.db").display()))
        .arg("--artifacts-destination")
        .arg(dir.join("artifacts"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err()
        || get(&format!("http://127.0.0.1:{port}"), "/health").0 != 200
    {
        assert!(child.try_wait().unwrap().is_none(), "mlflow server exited");
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "mlflow server did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    child
}

/// Stops the server and its workers.
fn stop(server: &mut Child) {
    // SIGKILL to the process group the server leads.
    unsafe { libc_kill(-(server.id() as i32), 9) };
    server.wait().unwrap();
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, signal: i32) -> i32;
}

use std::os::unix::process::CommandExt;

#[test]
fn a_server_stopped_mid_run_and_started_again_ends_up_with_everything() {
    let store = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let uri = format!("http://127.0.0.1:{port}");
    let mut server = own_server(store.path(), port);
    let dir = tempfile::tempdir().unwrap();
    let run_dir = run_dir(dir.path());
    let name = experiment("outage");
    let child = train(dir.path(), &uri, &name, &["--epochs", "600"]);
    let started = Instant::now();
    while !run_dir.join("mlflow.json").exists()
        || ledger(&run_dir)["rows_sent"].as_u64().unwrap() < 50
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "nothing reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop(&mut server);
    let stderr = finished(child);
    assert!(stderr.contains("epoch 600/600"), "{stderr}");
    let warnings = stderr
        .lines()
        .filter(|l| l.contains("MLflow tracking is behind"))
        .count();
    assert_eq!(warnings, 1, "{stderr}");
    let sent = ledger(&run_dir)["rows_sent"].as_u64().unwrap() as usize;
    assert!(
        sent < csv_metrics(&run_dir).len(),
        "the outage left rows behind"
    );

    let mut server = own_server(store.path(), port);
    let out = Command::new(BIN)
        .args(["--mlflow-sync", "--artifacts"])
        .arg(dir.path())
        .env("MLFLOW_TRACKING_URI", &uri)
        .env("MLFLOW_EXPERIMENT_NAME", &name)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("holds the 5400 values"), "{said}");
    let run_id = ledger(&run_dir)["run_id"].as_str().unwrap().to_owned();
    let run = api(&uri, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "FINISHED");
    assert_server_holds_the_csv(&uri, &run_dir);
    stop(&mut server);
}

#[test]
fn a_sweep_is_a_parent_run_with_one_child_per_trial() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("sweep");
    let stderr = finished(train(
        dir.path(),
        &server,
        &name,
        // Each trial a fresh run (the experiment resumes its newest run otherwise).
        &[
            "--epochs",
            "2",
            "--set",
            "resume=null",
            "--sweep",
            "lr=0.01,0.02",
        ],
    ));
    let mut children = Vec::new();
    for entry in std::fs::read_dir(dir.path().join("resumable")).unwrap() {
        let path = entry.unwrap().path();
        if path.join("mlflow.json").exists() {
            children.push(ledger(&path)["run_id"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(children.len(), 2, "a tracked run per trial: {stderr}");
    let mut parents = Vec::new();
    for child in &children {
        let run = api(&server, &format!("runs/get?run_id={child}"));
        assert_eq!(run["run"]["info"]["status"], "FINISHED");
        let parent = run["run"]["data"]["tags"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["key"] == "mlflow.parentRunId")
            .map(|t| t["value"].as_str().unwrap().to_owned())
            .expect("a trial names its parent");
        parents.push(parent);
    }
    assert_eq!(parents[0], parents[1], "one parent for the sweep");
    let parent = api(&server, &format!("runs/get?run_id={}", parents[0]));
    assert_eq!(parent["run"]["info"]["status"], "FINISHED");
    assert!(
        parent["run"]["info"]["run_name"]
            .as_str()
            .unwrap()
            .starts_with("sweep-"),
        "{parent}"
    );
    let child = api(&server, &format!("runs/get?run_id={}", children[0]));
    assert_eq!(
        parent["run"]["info"]["experiment_id"],
        child["run"]["info"]["experiment_id"]
    );
}

/// A study is a parent run with one child per trial, each a run of its own (though the
/// experiment resumes its newest run by default) tagged with how its trial ended; extended by
/// a second command, it keeps its parent, which shows the space, the best trial's values and
/// the best value so far.
#[test]
fn a_study_is_a_parent_run_with_one_child_per_trial_tagged_with_its_state() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("study");
    let study_of = |trials: &str| {
        finished(train(
            dir.path(),
            &server,
            &name,
            &[
                "--epochs",
                "3",
                "--search",
                "lr=log_uniform(0.01,0.5)",
                "--sampler",
                "random",
                "--trials",
                trials,
                "--prune",
                "asha",
            ],
        ))
    };
    study_of("6");
    let stderr = study_of("8");
    let study = std::fs::read_dir(dir.path().join("resumable"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("study-")
        })
        .expect("a study folder");
    let mut runs = std::collections::BTreeSet::new();
    let mut parents = std::collections::BTreeSet::new();
    let mut pruned = 0;
    for k in 0..8 {
        let record: Value =
            serde_json::from_slice(&std::fs::read(study.join(format!("trial-{k}.json"))).unwrap())
                .unwrap();
        let run = PathBuf::from(record["run"].as_str().unwrap());
        runs.insert(run.clone());
        let tags = tags(&server, ledger(&run)["run_id"].as_str().unwrap());
        assert_eq!(
            tags.get("dsl.trial.state").map(String::as_str),
            record["state"].as_str(),
            "{stderr}"
        );
        parents.insert(tags["mlflow.parentRunId"].clone());
        pruned += usize::from(record["state"] == "pruned");
    }
    assert_eq!(runs.len(), 8, "each trial a new run: {runs:?}");
    assert_eq!(
        parents.len(),
        1,
        "one parent for the study, extended or not"
    );
    assert!(
        pruned > 0,
        "successive halving prunes some of 6 trials: {stderr}"
    );
    let parent = api(
        &server,
        &format!("runs/get?run_id={}", parents.first().unwrap()),
    );
    assert_eq!(parent["run"]["info"]["status"], "FINISHED");
    assert!(
        parent["run"]["info"]["run_name"]
            .as_str()
            .unwrap()
            .starts_with("study-"),
        "{parent}"
    );
    // The parent shows the study: its space and settings, its best trial, its best value.
    let (params, tags) = params_and_tags(&server, parents.first().unwrap());
    assert_eq!(params["space.lr"], "log_uniform(0.01, 0.5)");
    assert_eq!(params["objective"], "min(valid.loss)");
    assert_eq!(params["pruner"], "asha");
    let md = std::fs::read_to_string(study.join("study.md")).unwrap();
    let best = md
        .split("Best: trial ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("study.md names the best trial");
    assert_eq!(tags["dsl.best.trial"], best, "{md}");
    let record: Value =
        serde_json::from_slice(&std::fs::read(study.join(format!("trial-{best}.json"))).unwrap())
            .unwrap();
    assert_eq!(tags["dsl.best.lr"], record["params"][0][1].to_string());
    let history = api(
        &server,
        &format!(
            "metrics/get-history?run_id={}&metric_key=best/valid/loss",
            parents.first().unwrap()
        ),
    );
    let points = history["metrics"].as_array().unwrap();
    let last = points.iter().max_by_key(|p| p["step"].as_u64()).unwrap();
    assert_eq!(last["step"], 8, "the best value after the 8 trials ended");
    let best_loss = record["curve"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p[1].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(number(&last["value"]), best_loss);
}

/// A sweep killed with `kill -9` in its second trial, then run again: one parent, every
/// trial's run `FINISHED` on the server with each value of its `metrics.csv` once.
#[test]
fn a_sweep_killed_with_9_and_resumed_is_tracked_whole() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("sweep-killed");
    let flags = [
        "--epochs",
        "60",
        "--set",
        "resume=null",
        "--sweep",
        "lr=0.01,0.02",
    ];
    let runs = |dir: &Path| -> Vec<PathBuf> {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(dir.join("resumable"))
            .map(|entries| entries.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        runs.retain(|p| p.file_name().unwrap().to_string_lossy().starts_with("run-"));
        runs.sort();
        runs
    };
    let mut child = train(dir.path(), &server, &name, &flags);
    let started = Instant::now();
    // Killed once the second trial's run has epochs on the server.
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no second trial"
        );
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended first");
        let second = runs(dir.path()).get(1).cloned();
        if second.is_some_and(|run| {
            run.join("mlflow.json").exists() && ledger(&run)["rows_sent"].as_u64() > Some(30)
        }) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Run again: the first trial is not trained again, the second goes on in its own run.
    let again = finished(train(dir.path(), &server, &name, &flags));
    assert!(
        again.contains("sweep: trial 0 of 2 finished earlier"),
        "{again}"
    );
    assert!(again.contains("sweep: trial 1 of 2 started"), "{again}");
    let runs = runs(dir.path());
    assert_eq!(runs.len(), 2, "a run per trial: {runs:?}");
    assert_tracked_whole(&server, &runs, 60);
}

/// Each of `runs` (the trials of one sweep or study, `epochs` each) is `FINISHED` on the server
/// with each value of its `metrics.csv` once, and all have one parent; its id.
fn assert_tracked_whole(server: &str, runs: &[PathBuf], epochs: usize) -> String {
    let mut parents = std::collections::BTreeSet::new();
    for run in runs {
        let run_id = ledger(run)["run_id"].as_str().unwrap().to_owned();
        let held = api(server, &format!("runs/get?run_id={run_id}"));
        let at = run.display();
        assert_eq!(held["run"]["info"]["status"], "FINISHED", "{at}");
        assert_server_holds_the_csv(server, run);
        assert_eq!(csv_metrics(run).len(), epochs * 6 + epochs * 3, "{at}");
        parents.insert(tags(server, &run_id)["mlflow.parentRunId"].clone());
    }
    assert_eq!(parents.len(), 1, "one parent across the kill: {parents:?}");
    parents.pop_first().unwrap()
}

/// A study killed with `kill -9` mid-trial, then run again: one parent, every trial's run
/// `FINISHED` on the server with each value of its `metrics.csv` once, the killed trial's
/// included.
#[test]
fn a_study_killed_with_9_and_resumed_is_tracked_whole() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("study-killed");
    let flags = [
        "--epochs",
        "60",
        "--search",
        "lr=log_uniform(0.01,0.5)",
        "--sampler",
        "random",
        "--trials",
        "3",
        "--prune",
        "none",
    ];
    let mut child = train(dir.path(), &server, &name, &flags);
    let started = Instant::now();
    let study = loop {
        assert!(started.elapsed() < Duration::from_secs(120), "no trial 1");
        assert!(child.try_wait().unwrap().is_none(), "the study ended first");
        let training = std::fs::read_dir(dir.path().join("resumable"))
            .ok()
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("study-")
            })
            .filter(|study| {
                std::fs::read(study.join("trial-1.json"))
                    .ok()
                    .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                    .is_some_and(|r| r["curve"].as_array().is_some_and(|c| c.len() >= 3))
            });
        if let Some(study) = training {
            break study;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    finished(train(dir.path(), &server, &name, &flags));
    let runs: Vec<PathBuf> = (0..3)
        .map(|k| {
            let record: Value = serde_json::from_slice(
                &std::fs::read(study.join(format!("trial-{k}.json"))).unwrap(),
            )
            .unwrap();
            assert_eq!(record["state"], "complete", "{record}");
            PathBuf::from(record["run"].as_str().unwrap())
        })
        .collect();
    let parent = assert_tracked_whole(&server, &runs, 60);
    let parent = api(&server, &format!("runs/get?run_id={parent}"));
    assert_eq!(parent["run"]["info"]["status"], "FINISHED");
}

fn tags(server: &str, run_id: &str) -> BTreeMap<String, String> {
    params_and_tags(server, run_id).1
}

#[test]
fn a_failed_run_is_failed_with_its_error_and_an_interrupted_one_killed_until_resumed() {
    let server = server();
    // A learning rate that diverges: the weights' check stops the run at the first epoch's end.
    let dir = tempfile::tempdir().unwrap();
    let out = train(
        dir.path(),
        &server,
        &experiment("failed"),
        &["--lr", "1e30", "--epochs", "3"],
    )
    .wait_with_output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    settled(dir.path(), &server, &stderr);
    let run_id = ledger(&run_dir(dir.path()))["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "FAILED");
    let error = tags(&server, &run_id)["dsl.error"].clone();
    let said = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert_eq!(format!("error: {error}"), said, "the error the run printed");
    assert_server_holds_the_csv(&server, &run_dir(dir.path()));

    // SIGTERM: the step finishes, is saved, and the run is KILLED; its resume finishes it.
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("interrupted");
    let run_dir = run_dir(dir.path());
    let child = train(dir.path(), &server, &name, &["--epochs", "400"]);
    let started = Instant::now();
    while !run_dir.join("mlflow.json").exists()
        || ledger(&run_dir)["rows_sent"].as_u64().unwrap() < 20
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "nothing reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc_kill(child.id() as i32, 15) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    settled(dir.path(), &server, &stderr);
    let run_id = ledger(&run_dir)["run_id"].as_str().unwrap().to_owned();
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "KILLED");
    assert_server_holds_the_csv(&server, &run_dir);
    let end = |run_dir: &Path| -> Option<Value> {
        let bytes = std::fs::read(run_dir.join("mlflow-end.json")).ok()?;
        Some(serde_json::from_slice(&bytes).unwrap())
    };
    assert_eq!(
        end(&run_dir).unwrap()["status"],
        "KILLED",
        "the end is kept"
    );
    // Resumed, the run has not ended: while it trains, no end is kept for it (a kill -9 now
    // must not make the sync say KILLED again).
    let sent = ledger(&run_dir)["rows_sent"].as_u64().unwrap();
    let child = train(dir.path(), &server, &name, &["--epochs", "400"]);
    let started = Instant::now();
    while ledger(&run_dir)["rows_sent"].as_u64().unwrap() == sent {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the resume sent nothing"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(kept) = end(&run_dir) {
        assert_eq!(
            kept["status"], "FINISHED",
            "the resume's end, not the kill's"
        );
    }
    let stderr = finished(child);
    settled(dir.path(), &server, &stderr);
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "FINISHED");
    assert_server_holds_the_csv(&server, &run_dir);
}

/// A run that failed while the server was out of reach: its end (the status and the error) is
/// kept in the run directory, and the sync sends it, so the server does not show the run as
/// `RUNNING` for ever.
#[test]
fn a_failed_run_whose_end_could_not_go_is_failed_by_the_sync() {
    let server = server();
    // A port nothing listens on: bound, then released.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("failed-offline");
    let out = train(
        dir.path(),
        &format!("http://127.0.0.1:{down}"),
        &name,
        &["--lr", "1e30", "--epochs", "3"],
    )
    .wait_with_output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let said = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    let run_dir = run_dir(dir.path());
    assert!(!run_dir.join("mlflow.json").exists(), "the server was down");

    let out = Command::new(BIN)
        .args(["--mlflow-sync", "--artifacts"])
        .arg(dir.path())
        .env("MLFLOW_TRACKING_URI", &server)
        .env("MLFLOW_EXPERIMENT_NAME", &name)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_id = ledger(&run_dir)["run_id"].as_str().unwrap().to_owned();
    let run = api(&server, &format!("runs/get?run_id={run_id}"));
    assert_eq!(run["run"]["info"]["status"], "FAILED");
    let error = tags(&server, &run_id)["dsl.error"].clone();
    assert_eq!(format!("error: {error}"), said, "the error the run printed");
    assert_server_holds_the_csv(&server, &run_dir);
}

/// The run's params, and its tags, as the server holds them.
fn params_and_tags(
    server: &str,
    run_id: &str,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let run = api(server, &format!("runs/get?run_id={run_id}"));
    let pairs = |list: &Value| -> BTreeMap<String, String> {
        list.as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["key"].as_str().unwrap().to_owned(),
                    p["value"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    (
        pairs(&run["run"]["data"]["params"]),
        pairs(&run["run"]["data"]["tags"]),
    )
}

#[test]
fn params_follow_config_json_across_a_resume_and_the_test_split() {
    const TESTED: &str = env!("CARGO_BIN_EXE_train_tested");
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let name = experiment("params");
    let tracked = |flags: &[&str]| {
        let out = Command::new(TESTED)
            .arg("--artifacts")
            .arg(dir.path())
            .args(flags)
            .env("MLFLOW_TRACKING_URI", &server)
            .env("MLFLOW_EXPERIMENT_NAME", &name)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("MLflow"), "nothing to say: {stderr}");
    };
    tracked(&["--epochs", "2"]);
    // Extended by a resume: `epochs` changes, and the test split is measured again.
    tracked(&["--epochs", "3", "--resume", "latest"]);
    let run_dir = dir.path().join("tested/run-1");
    let config: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("config.json")).unwrap()).unwrap();
    assert!(config["metrics"]["test"].is_array(), "{config}");
    let mut expected = BTreeMap::new();
    flatten("", &config, &mut expected);
    let ledger = ledger(&run_dir);
    let (params, tags) = params_and_tags(&server, ledger["run_id"].as_str().unwrap());
    // MLflow keeps a param's first value: a changed one is the tag `dsl.changed.<key>`.
    let mut now = params.clone();
    for (tag, value) in &tags {
        if let Some(key) = tag.strip_prefix("dsl.changed.") {
            now.insert(key.to_owned(), value.clone());
        }
    }
    assert_eq!(
        now, expected,
        "params and dsl.changed tags against config.json"
    );
    assert_eq!(params["epochs"], "2");
    assert_eq!(tags["dsl.changed.epochs"], "3");
    assert_eq!(
        params["metrics.test"],
        config["metrics"]["test"].to_string()
    );
    assert_eq!(tags["dsl.device"], "flex");
    assert_eq!(
        tags["dsl.run_dir"],
        std::path::absolute(&run_dir).unwrap().display().to_string()
    );
}
