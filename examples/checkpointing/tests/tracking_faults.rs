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
    // The command the line gives, pasted: it names this run, and with the server still down
    // it fails as tracking does (exit 1), not as a mistake on the command line (exit 2).
    let hint = behind[0].rsplit("or with `").next().unwrap();
    let hint = &hint[..hint.find('`').unwrap()];
    let words: Vec<&str> = hint.split_whitespace().collect();
    assert_eq!(words[0], BIN, "{hint}");
    assert_eq!(
        words[1..],
        [
            "--mlflow-sync",
            "--artifacts",
            dir.path().to_str().unwrap(),
            "--run",
            "run-1"
        ],
        "{hint}"
    );
    let sync = Command::new(words[0])
        .args(&words[1..])
        .env("MLFLOW_TRACKING_URI", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&sync.stderr);
    assert_eq!(sync.status.code(), Some(1), "{said}");
    assert!(
        said.contains("error: MLflow sync:") && !said.contains("invalid fit option"),
        "{said}"
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

/// One HTTP request from `stream`: its head and body (by `Content-Length`).
fn read_request(stream: &mut std::net::TcpStream) -> (String, String) {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = stream.read(&mut buf).unwrap();
        bytes.extend_from_slice(&buf[..n]);
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            assert!(n > 0, "a request cut short");
            continue;
        };
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |n| n.trim().parse().unwrap());
        if bytes.len() >= end + 4 + length || n == 0 {
            let body = String::from_utf8_lossy(&bytes[end + 4..]).into_owned();
            return (head, body);
        }
    }
}

/// A server that refuses one request's content (MLflow's 400 for a param it will not change)
/// costs that request alone: one line says what it does not hold, and every metric still goes.
#[test]
fn a_refused_request_costs_that_request_and_not_the_rest_of_the_run() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let requests = seen.clone();
    // A stand-in for MLflow's answers: every params batch refused, everything else taken.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let (head, body) = read_request(&mut stream);
            let (status, answer) = if body.contains(r#""params":[{"#) {
                (
                    "400 BAD REQUEST",
                    r#"{"error_code":"INVALID_PARAMETER_VALUE","message":"Changing param values is not allowed"}"#,
                )
            } else {
                (
                    "200 OK",
                    r#"{"experiment":{"experiment_id":"1"},"run":{"info":{"run_id":"r1","artifact_uri":"mlflow-artifacts:/1/r1/artifacts"},"data":{}}}"#,
                )
            };
            write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
            requests.lock().unwrap().push((head, body));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = train(dir.path(), &format!("http://127.0.0.1:{port}"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("MLflow")).collect();
    assert!(!lines.is_empty(), "{stderr}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("Changing param values is not allowed")
                && l.contains("the server does not hold")
                && l.contains("params")
                && l.contains("tracking goes on")),
        "{stderr}"
    );
    // Every row went, and the run's end (its status and files) too.
    let ledger: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("resumable/run-1/mlflow.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(ledger["rows_sent"], rows(dir.path()));
    let requests = seen.lock().unwrap();
    let metrics: usize = requests
        .iter()
        .map(|(_, body)| body.matches(r#""step":"#).count())
        .sum();
    assert_eq!(metrics, rows(dir.path()), "each row sent once");
    assert!(
        requests
            .iter()
            .any(|(head, body)| head.contains("runs/update") && body.contains("FINISHED")),
        "the run's end was sent"
    );
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

/// Every file under `dir`, as bytes, with its path.
fn files_under(dir: &Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
}

#[test]
fn no_credential_reaches_a_file_or_the_terminal() {
    // A stand-in that answers every request 401 and keeps what it was sent.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = sent.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf).unwrap_or(0);
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let body = r#"{"error_code":"UNAUTHENTICATED"}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 UNAUTHORIZED\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let (in_uri, password, token) = ("uri-secret-1", "password-secret-2", "token-secret-3");
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("http://carol:{in_uri}@127.0.0.1:{port}");
    let env = [
        ("MLFLOW_TRACKING_USERNAME", "alice"),
        ("MLFLOW_TRACKING_PASSWORD", password),
        ("MLFLOW_TRACKING_TOKEN", token),
    ];
    let first = train(dir.path(), &uri, &env);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // A resume reads the saved settings back and writes them again.
    let resumed = Command::new(BIN)
        .args(["--epochs", "6", "--resume", "latest", "--artifacts"])
        .arg(dir.path())
        .env("MLFLOW_TRACKING_URI", &uri)
        .envs(env)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("resuming after epoch 5"), "{stderr}");
    let warning = String::from_utf8_lossy(&first.stderr);
    assert!(
        warning.contains("MLFLOW_TRACKING_URI holds credentials")
            && warning.contains(&format!("http://127.0.0.1:{port}")),
        "{warning}"
    );
    let mut files = Vec::new();
    files_under(dir.path(), &mut files);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.ends_with("checkpoint/state-6.json")),
        "{files:?}"
    );
    for secret in [in_uri, password, token] {
        for (path, bytes) in &files {
            assert!(
                !String::from_utf8_lossy(bytes).contains(secret),
                "{secret} in {}",
                path.display()
            );
        }
        for out in [&first, &resumed] {
            for stream in [&out.stdout, &out.stderr] {
                assert!(
                    !String::from_utf8_lossy(stream).contains(secret),
                    "{secret} printed"
                );
            }
        }
    }
    // The URI's credentials are not used either: the token went, as a bearer token.
    let sent = sent.lock().unwrap();
    assert!(!sent.is_empty());
    for request in sent.iter() {
        assert!(
            !request.contains(in_uri) && !request.contains("carol"),
            "{request}"
        );
        assert!(
            request.contains(&format!("Authorization: Bearer {token}")),
            "{request}"
        );
    }
}

#[test]
fn a_server_that_never_answers_delays_the_end_by_the_stated_wait_at_most() {
    use std::io::BufRead;
    use std::time::{Duration, Instant};
    // A stand-in that takes every connection and request, and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    // Eight epochs: more flushes than the tracker's queue holds while its thread waits.
    let mut child = Command::new(BIN)
        .args(["--epochs", "8", "--artifacts"])
        .arg(dir.path())
        .env("MLFLOW_TRACKING_URI", format!("http://127.0.0.1:{port}"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        lines.push((Instant::now(), line.unwrap()));
    }
    assert!(child.wait().unwrap().success(), "{lines:?}");
    let ended = Instant::now();
    let (last_epoch, _) = lines
        .iter()
        .find(|(_, line)| line.starts_with("epoch 8/8"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    // The book's bound (2 s, in total), over what the same run's end takes untracked: the
    // summary, the plot, the last checkpoint's sync and the exit.
    let waited = ended - *last_epoch;
    let untracked = tail_untracked();
    assert!(
        waited <= untracked + Duration::from_secs(2) + Duration::from_millis(500),
        "{waited:?} against {untracked:?} untracked: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|(_, line)| line.contains("did not take the run's end in 2 s")),
        "{lines:?}"
    );
    assert_eq!(rows(dir.path()), 8 * 6 + 8 * 3, "every value is on disk");
}

/// How long the 8-epoch run takes untracked from its last epoch's line to its exit.
fn tail_untracked() -> std::time::Duration {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["--epochs", "8", "--artifacts"])
        .arg(dir.path())
        .env_remove("MLFLOW_TRACKING_URI")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut last_epoch = None;
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        if line.unwrap().starts_with("epoch 8/8") {
            last_epoch = Some(std::time::Instant::now());
        }
    }
    assert!(child.wait().unwrap().success());
    last_epoch
        .expect("the untracked run's last epoch")
        .elapsed()
}
