//! MLflow tracking that cannot go through never costs the run: a server that is down, and one
//! that refuses the credentials (a stand-in answering 401, so no MLflow is needed here). The
//! run trains to its end, `metrics.csv` holds every value, one line says what happened, and no
//! secret is printed. With a real server: `tests/mlflow.rs`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_train");

fn train(artifacts: &Path, uri: &str, env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .args(["--epochs", "5", "--artifacts"])
        .arg(artifacts)
        .env("MLFLOW_TRACKING_URI", uri)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// The rows of the run's `metrics.csv` after its header.
fn rows(artifacts: &Path) -> usize {
    let csv = std::fs::read_to_string(artifacts.join("resumable/run-1/metrics.csv")).unwrap();
    csv.lines().count() - 1
}

#[test]
fn a_server_that_is_down_costs_the_run_nothing_and_says_so_once() {
    // A port nothing listens on: bound, then released.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = train(dir.path(), &format!("http://127.0.0.1:{port}"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("epoch 5/5"), "{stderr}");
    let behind: Vec<&str> = stderr.lines().filter(|l| l.contains("MLflow")).collect();
    assert_eq!(behind.len(), 1, "one line about tracking: {stderr}");
    assert!(
        behind[0].contains("MLflow tracking is behind") && behind[0].contains("--mlflow-sync"),
        "{stderr}"
    );
    // 5 epochs of 6 steps: a loss per step, three values per epoch.
    assert_eq!(rows(dir.path()), 5 * 6 + 5 * 3);
    assert!(
        !dir.path().join("resumable/run-1/mlflow.json").exists(),
        "no run exists on a server that was never reached"
    );
}

#[test]
fn refused_credentials_stop_tracking_with_one_clear_line_and_no_secret() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::thread::spawn(move || {
        let mut requests = Vec::new();
        // Every request is answered 401, as MLflow's basic-auth app does.
        for stream in listener.incoming().take(1) {
            let mut stream = stream.unwrap();
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap();
            requests.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let body = r#"{"error_code":"UNAUTHENTICATED","message":"You are not authenticated."}"#;
            write!(
                stream,
                "HTTP/1.1 401 UNAUTHORIZED\r\nContent-Length: {}\r\nContent-Type: application/json\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
        requests
    });
    let dir = tempfile::tempdir().unwrap();
    let secret = "hunter2-very-secret";
    let out = train(
        dir.path(),
        &format!("http://127.0.0.1:{port}"),
        &[
            ("MLFLOW_TRACKING_USERNAME", "alice"),
            ("MLFLOW_TRACKING_PASSWORD", secret),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("epoch 5/5"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("MLflow")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("refused the credentials")
            && lines[0].contains("MLFLOW_TRACKING_USERNAME"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(secret) && !stderr.contains("alice"),
        "{stderr}"
    );
    let requests = seen.join().unwrap();
    // The credentials went as basic auth (`alice:hunter2-very-secret`), and only there.
    assert!(
        requests[0].contains("Authorization: Basic YWxpY2U6aHVudGVyMi12ZXJ5LXNlY3JldA=="),
        "{}",
        requests[0]
    );
    assert_eq!(rows(dir.path()), 5 * 6 + 5 * 3);
    let config = std::fs::read_to_string(dir.path().join("resumable/run-1/config.json")).unwrap();
    assert!(!config.contains(secret) && !config.contains("alice"));
    assert!(config.contains(&format!("\"uri\": \"http://127.0.0.1:{port}\"")));
}

#[test]
fn logging_the_model_without_a_server_is_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--epochs", "1", "--mlflow-log-model", "--artifacts"])
        .arg(dir.path())
        .env_remove("MLFLOW_TRACKING_URI")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--mlflow-log-model logs to the server MLFLOW_TRACKING_URI names"),
        "{stderr}"
    );
    assert!(!stderr.contains("epoch 1/1"), "nothing trained: {stderr}");
}

#[test]
fn a_server_this_runtime_cannot_speak_to_turns_tracking_off_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = train(dir.path(), "https://mlflow.example.com", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("MLflow")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("MLflow tracking is off for this run")
            && lines[0].contains("only `http://`"),
        "{stderr}"
    );
    assert_eq!(rows(dir.path()), 5 * 6 + 5 * 3);
}
