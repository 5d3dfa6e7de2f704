//! What the docs show of this example's output is what it prints: the README's first run and
//! the book's flag reference (clap's `--help`).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_classification");

fn workspace(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The lines of the first fenced block (```` ```text ````) after `marker` in `text`.
fn block_after(text: &str, marker: &str) -> Vec<String> {
    let from = text
        .find(marker)
        .unwrap_or_else(|| panic!("`{marker}` not found"));
    let rest = &text[from..];
    let start = rest.find("```text\n").expect("a text block") + "```text\n".len();
    let end = start + rest[start..].find("```").expect("the block's end");
    rest[start..end].lines().map(str::to_owned).collect()
}

/// `(0.01 s)` and other durations vary from run to run.
fn without_times(line: &str) -> String {
    match line.rfind("  (") {
        Some(at) if line.ends_with(" s)") => line[..at].to_owned(),
        _ => line.to_owned(),
    }
}

#[test]
fn the_readme_and_the_book_show_what_the_first_run_prints() {
    let book = block_after(
        &workspace("docs/src/getting-started.md"),
        "`cargo run -p classification` prints",
    );
    let shown = block_after(
        &workspace("README.md"),
        "`cargo run -p classification` prints",
    );
    assert_eq!(
        book, shown,
        "the book's getting-started page and the README"
    );
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    let out = Command::new(BIN)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .replace(&artifacts.display().to_string(), "artifacts")
        .lines()
        .map(without_times)
        .collect();
    let shown: Vec<String> = shown.iter().map(|l| without_times(l)).collect();
    assert_eq!(printed, shown);
}

#[test]
fn the_flags_reference_is_the_help_of_the_command_line() {
    let page = workspace("docs/src/reference/flags.md");
    let shown = block_after(&page, "# Command-line flags");
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let help: Vec<String> = String::from_utf8_lossy(&help.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        shown, help,
        "docs/src/reference/flags.md: paste the example's `--help` into its block"
    );
}

#[test]
fn the_sweep_table_of_the_book_is_what_a_sweep_prints() {
    let page = workspace("docs/src/guide/sweeps.md");
    let shown = block_after(
        &page,
        "(`--rank-by valid.accuracy` names another recorded metric)",
    );
    let (command, table) = shown.split_first().unwrap();
    let args: Vec<&str> = command
        .strip_prefix("$ cargo run -p classification -- ")
        .expect("the command the block shows")
        .split(' ')
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    let out = Command::new(BIN)
        .arg("--artifacts")
        .arg(&artifacts)
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .replace(&artifacts.display().to_string(), "artifacts")
        .trim_end()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(printed, table);
}

#[test]
fn the_refused_resume_of_the_book_is_what_the_command_says() {
    let page = workspace("docs/src/guide/runs.md");
    let shown = block_after(&page, "naming each key with its saved and current value");
    let (command, said) = shown.split_first().unwrap();
    let args: Vec<&str> = command
        .strip_prefix("$ cargo run -p classification -- ")
        .expect("the command the block shows")
        .split(' ')
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    let first = Command::new(BIN)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert!(first.status.success());
    let out = Command::new(BIN)
        .arg("--artifacts")
        .arg(&artifacts)
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let printed: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .replace(&artifacts.display().to_string(), "artifacts")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(printed, said);
}

#[test]
fn a_device_built_without_its_backend_is_refused_as_the_book_says() {
    let shown = block_after(
        &workspace("docs/src/guide/backends.md"),
        "A name whose backend was not built in",
    );
    let out = Command::new(BIN)
        .args(["--device", "cuda:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let printed: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(printed, shown);
}
