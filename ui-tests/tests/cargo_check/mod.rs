//! What cargo reports for a project of many targets, each a user's program with one
//! mistake: shared by the corpus (`corpus.rs`) and the generated mutants (`mutants.rs`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Names of the runtime's plumbing and paths into sources the user did not write.
pub const INTERNAL: &[&str] = &[
    "Feeds",
    "ReadableBy",
    "DatasetOf",
    "MetricSource",
    "CustomSource",
    "Checked",
    "SharedBatcher",
    "__private",
    "__dsl_",
    "dsl-runtime/src",
    "burn_experiment::model::contract",
    ".cargo/registry",
    "Portable",
    "sent_between_ranks",
];

/// Line and column (both from 1, columns in characters) of byte `at`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap().chars().count() + 1;
    (line, col)
}

/// What cargo reported for one binary.
#[derive(Default)]
pub struct Report {
    /// Each error as cargo's JSON has it (what an editor lists), rendered.
    pub errors: Vec<serde_json::Value>,
    pub warnings: Vec<String>,
}

/// The host's target triple, which trybuild names with `--target` (its artifacts then live
/// under `<target dir>/<triple>/`, and the corpus shares them only by naming it too).
pub fn host() -> String {
    let rustc = Command::new("rustc").arg("-vV").output().unwrap();
    String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// `cargo check` of the project in `dir` (its `targets`: `--bins`, `--lib`, ..), each
/// target's errors and warnings keyed by the target's name.
pub fn check(dir: &Path, target: &Path, targets: &[&str]) -> BTreeMap<String, Report> {
    // trybuild's flags, set where trybuild sets them, so that its checked dependencies serve.
    let flags = r#"["--cfg","trybuild","--verbose","-A","dead_code","--diagnostic-width=140"]"#;
    let host = host();
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .arg("--offline")
        .arg(format!("--config=build.rustflags={flags}"))
        .arg(format!("--config=target.{host}.rustflags={flags}"))
        .args([
            "check",
            "--target",
            &host,
            "--keep-going",
            "--quiet",
            "--color=never",
            "--message-format=json",
        ])
        .args(targets)
        .output()
        .unwrap();
    let mut reports: BTreeMap<String, Report> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-message" {
            continue;
        }
        let bin = message["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let diagnostic = &message["message"];
        let text = diagnostic["message"].as_str().unwrap_or_default();
        let report = reports.entry(bin).or_default();
        match diagnostic["level"].as_str() {
            Some("error") if !text.starts_with("aborting due to") => {
                report.errors.push(diagnostic.clone())
            }
            Some("warning")
                if !text.contains("warning emitted") && !text.contains("warnings emitted") =>
            {
                report
                    .warnings
                    .push(diagnostic["rendered"].as_str().unwrap_or(text).to_owned())
            }
            _ => {}
        }
    }
    reports
}

/// Whether the error points into `range` of `text`: its primary span, or a labelled one (rustc
/// underlines a call and labels its extra argument).
pub fn points_into(error: &serde_json::Value, text: &str, (from, to): (usize, usize)) -> bool {
    let (first, last) = (line_col(text, from), line_col(text, to));
    let spans = error["spans"].as_array().cloned().unwrap_or_default();
    spans
        .iter()
        .filter(|s| s["is_primary"] == true || s["label"].is_string())
        .any(|span| {
            let at = |key: &str| span[key].as_u64().unwrap_or(0) as usize;
            let start = (at("line_start"), at("column_start"));
            let end = (at("line_end"), at("column_end"));
            // Inside the mistake's range, or overlapping it.
            start <= last && end >= first
        })
}
