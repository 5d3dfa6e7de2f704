//! Rules every reviewed error of `fail/` obeys, so a snapshot regenerated with
//! `TRYBUILD=overwrite` cannot quietly accept a regression: one error per mistake, and no name or
//! path the user never wrote and cannot act on.

use std::path::{Path, PathBuf};

/// Names of the runtime's plumbing and paths into its sources or the cargo registry.
const INTERNAL: &[&str] = &[
    "Feeds",
    "ReadableBy",
    "DatasetOf",
    "MetricSource",
    "CustomSource",
    "BatchesInto",
    "Checked",
    "SharedBatcher",
    "__private",
    "__dsl_",
    "dsl-runtime/src",
    "$CARGO",
    ".cargo/registry",
];

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fail");
    let mut cases = Vec::new();
    for group in std::fs::read_dir(&root).unwrap() {
        for case in std::fs::read_dir(group.unwrap().path()).unwrap() {
            let path = case.unwrap().path();
            if path.extension().is_some_and(|e| e == "stderr") {
                cases.push(path);
            }
        }
    }
    cases.sort();
    cases
}

/// The mistakes a case declares: one, unless its name says `<n>_mistakes`.
fn declared_mistakes(path: &Path) -> usize {
    let stem = path.file_stem().unwrap().to_str().unwrap();
    match stem.strip_suffix("_mistakes") {
        Some(rest) => {
            let count = rest.rsplit('_').next().unwrap();
            match count {
                "two" => 2,
                "three" => 3,
                "four" => 4,
                other => other.parse().unwrap_or_else(|_| {
                    panic!(
                        "{stem}: write the count as `two_mistakes`, `three_mistakes` or a number"
                    )
                }),
            }
        }
        None => 1,
    }
}

#[test]
fn one_error_per_mistake_and_no_internal_names() {
    let cases = cases();
    assert!(cases.len() >= 45, "only {} cases found", cases.len());
    let mut failures = Vec::new();
    for path in &cases {
        let text = std::fs::read_to_string(path).unwrap();
        let errors = text
            .lines()
            .filter(|l| l.starts_with("error:") || l.starts_with("error["))
            .count();
        let expected = declared_mistakes(path);
        if errors != expected {
            failures.push(format!(
                "{}: {errors} errors for {expected} mistake(s)",
                path.display()
            ));
        }
        if text.lines().any(|l| l.starts_with("warning")) {
            failures.push(format!("{}: has a warning", path.display()));
        }
        for name in INTERNAL {
            if text.contains(name) {
                failures.push(format!("{}: mentions `{name}`", path.display()));
            }
        }
        let source = std::fs::read_to_string(path.with_extension("rs")).unwrap();
        if source.contains("training!")
            && !source.contains("::cli()")
            && !source.contains("::cli_then(")
        {
            failures.push(format!(
                "{}: its `main` must use the experiment (`Name::cli()` or `Name::cli_then(..)`)",
                path.display()
            ));
        }
        if source.contains("allow(unused") {
            failures.push(format!("{}: silences unused warnings", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn counting_follows_the_file_name() {
    assert_eq!(declared_mistakes(Path::new("three_mistakes.stderr")), 3);
    assert_eq!(declared_mistakes(Path::new("unknown_key.stderr")), 1);
}
