//! What the docs show of this example's output is what it prints: the README's and the book's
//! first run, the book's flag reference (clap's `--help`), a sweep's table, a refused resume and
//! a device built without its backend.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// A block that starts with the command it shows: its arguments, and the lines it shows.
fn command_and_lines(block: &[String]) -> (Vec<String>, Vec<String>) {
    let (command, lines) = block.split_first().expect("a command line");
    let args = command
        .strip_prefix("$ cargo run -p classification -- ")
        .expect("the command the block shows")
        .split(' ')
        .map(str::to_owned)
        .collect();
    (args, lines.to_vec())
}

/// `(0.01 s)` and other durations vary from run to run.
fn without_times(line: &str) -> String {
    match line.rfind("  (") {
        Some(at) if line.ends_with(" s)") => line[..at].to_owned(),
        _ => line.to_owned(),
    }
}

/// A fresh folder of runs, named `artifacts` in what the example prints.
struct Artifacts {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl Artifacts {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("artifacts");
        Self { dir, path }
    }

    /// The example with `args`, writing its runs here.
    fn run(&self, args: &[String]) -> Output {
        // From the folder holding `artifacts`, so that a path the docs write as
        // `artifacts/..` names it.
        Command::new(BIN)
            .current_dir(self.dir.path())
            .arg("--artifacts")
            .arg(&self.path)
            .args(args)
            .output()
            .unwrap()
    }

    /// `bytes` as lines, this folder spelt `artifacts` as the docs spell it.
    fn lines(&self, bytes: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(bytes)
            .replace(&self.path.display().to_string(), "artifacts")
            .trim_end()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The provenance the reproducibility page shows is a run's: the same keys, and the same data
/// fingerprints (commits and versions aside, which change with every commit).
#[test]
fn the_book_shows_the_provenance_a_run_records() {
    let page = workspace("docs/src/guide/reproducibility.md");
    let from = page.find("```json\n").expect("the provenance block") + "```json\n".len();
    let block = &page[from..from + page[from..].find("```").unwrap()];
    let shown: serde_json::Value = serde_json::from_str(&format!("{{{block}}}")).unwrap();
    let shown = &shown["provenance"];
    let artifacts = Artifacts::new();
    assert!(artifacts.run(&[]).status.success());
    let config = std::fs::read(artifacts.path.join("three_class/run-1/config.json")).unwrap();
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    let recorded = &config["provenance"];
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(shown), keys(recorded));
    assert_eq!(shown["data"], recorded["data"], "the data fingerprints");
    assert_eq!(shown["burn"], recorded["burn"]);
}

#[test]
fn the_readme_and_the_book_show_what_the_first_run_prints() {
    let marker = "`cargo run -p classification` prints";
    let book = block_after(&workspace("docs/src/getting-started.md"), marker);
    let shown = block_after(&workspace("README.md"), marker);
    assert_eq!(
        book, shown,
        "the book's getting-started page and the README"
    );
    let artifacts = Artifacts::new();
    let out = artifacts.run(&[]);
    assert!(out.status.success());
    let printed: Vec<String> = artifacts
        .lines(&out.stderr)
        .iter()
        .map(|l| without_times(l))
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
    let (args, table) = command_and_lines(&shown);
    let artifacts = Artifacts::new();
    let out = artifacts.run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = artifacts.lines(&out.stdout);
    assert_eq!(printed.len(), table.len(), "{printed:#?}");
    // The book's values were printed on an x86-64-v3 (AVX2) CPU. On AVX-512 (v4), flex sums
    // the validation split's short batch of 8 with wider vectors, in another order, and the
    // 2-epoch trials' losses differ in their last digits (the sessions page and
    // `provenance.cpu` say so). Every other cell is the same; the values agree to 1e-6.
    for (printed, shown) in printed.iter().zip(&table) {
        let cells = |row: &str| {
            row.split('|')
                .map(str::trim)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let (printed, shown) = (cells(printed), cells(shown));
        assert_eq!(printed.len(), shown.len());
        for (p, s) in printed.iter().zip(&shown) {
            match (p.parse::<f64>(), s.parse::<f64>()) {
                (Ok(p), Ok(s)) if p.fract() != 0.0 || s.fract() != 0.0 => {
                    assert!(
                        (p - s).abs() <= 1e-6 * s.abs(),
                        "{p} against the book's {s}"
                    )
                }
                _ => assert_eq!(p, s),
            }
        }
    }
}

#[test]
fn the_refused_resume_of_the_book_is_what_the_command_says() {
    let page = workspace("docs/src/guide/runs.md");
    let shown = block_after(&page, "naming each key with its saved and current value");
    let (args, said) = command_and_lines(&shown);
    let artifacts = Artifacts::new();
    assert!(artifacts.run(&[]).status.success());
    let out = artifacts.run(&args);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(artifacts.lines(&out.stderr), said);
}

#[test]
fn a_device_built_without_its_backend_is_refused_as_the_book_says() {
    let page = workspace("docs/src/guide/backends.md");
    let shown = block_after(&page, "A name whose backend was not built in");
    let artifacts = Artifacts::new();
    let out = artifacts.run(&["--device".to_owned(), "cuda:0".to_owned()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(artifacts.lines(&out.stderr), shown);
}

#[test]
fn the_verify_session_of_the_book_is_what_the_commands_print() {
    let page = workspace("docs/src/guide/reproducibility.md");
    let shown = block_after(&page, "In a folder with no run yet");
    let artifacts = Artifacts::new();
    let mut printed = Vec::new();
    for line in &shown {
        let Some(command) = line.strip_prefix("$ cargo run -p classification -- ") else {
            continue;
        };
        printed.push(line.clone());
        let args: Vec<String> = command.split(' ').map(str::to_owned).collect();
        let out = artifacts.run(&args);
        printed.extend(artifacts.lines(&out.stdout));
        printed.extend(artifacts.lines(&out.stderr));
    }
    assert_eq!(printed, shown);
}
