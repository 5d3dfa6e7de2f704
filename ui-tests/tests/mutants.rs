//! The generated mutants (`ui-tests/mutants`: every `training!` and derive of the workspace's
//! examples, mutated by rule), built by cargo as a user builds them: each must be exactly one
//! error in cargo's count, pointing into the mutated key (or item), with a `help:`, naming no
//! internals. Every mutant is built (about 4 minutes on 2 cores); `MUTANTS_EVERY=k`, for a
//! quicker look, builds those only rustc can judge (types, derives) and a fixed sample of one
//! in k of the macro's own (whose messages burn-experiment-macros' in-process test checks for every
//! mutant in seconds); `MUTANTS_ONLY=<text>` builds those whose name holds it.
//! `tests/mutants-allowed.md`
//! lists the reviewed exceptions, each with its reason, at most 2 % of those built;
//! `tests/mutants-pending.md` the failures found and not yet fixed (issue #40 stays open while
//! it holds a row): a failure on neither list fails the test, and so does a listed mutant that
//! no longer fails.
//! Needs the feature `corpus` (`.ci/run`).
#![cfg(feature = "corpus")]

mod cargo_check;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cargo_check::{INTERNAL, check, points_into};
use mutants::{Level, Mutant};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// The sample: every compiler-level mutant, and one macro-level mutant in `every`, chosen by a
/// fixed-seed hash of its name (`id`) so that adding a rule does not reshuffle the rest.
fn sampled(all: Vec<Mutant>, every: u64) -> Vec<Mutant> {
    all.into_iter()
        .filter(|m| {
            // FNV-1a, fixed: the sample is the same on every machine and run.
            let hash = id(m).bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            m.level == Level::Compiler || hash % every == 0
        })
        .collect()
}

/// One section (`[dependencies]`, `[features]`) of an example's manifest, its relative paths
/// made absolute.
fn section(manifest: &str, name: &str, dir: &Path) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            inside = line.trim() == format!("[{name}]");
            continue;
        }
        if inside {
            match line.split_once("path = \"") {
                Some((before, after)) => {
                    let (relative, rest) = after.split_once('"').unwrap();
                    let absolute = dir.join(relative).canonicalize().unwrap();
                    out.push_str(&format!("{before}path = {absolute:?}{rest}\n"));
                }
                None => out.push_str(&format!("{line}\n")),
            }
        }
    }
    out
}

/// The example's own crate, as a dependency of a mutant of one of its binaries: its package
/// name, where it has a library.
fn library(manifest: &str) -> Option<String> {
    let has_lib = manifest.contains("\n[lib]") || manifest.starts_with("[lib]");
    let name = manifest
        .lines()
        .find_map(|l| l.strip_prefix("name = \""))?
        .trim_end_matches('"')
        .to_owned();
    has_lib.then_some(name)
}

/// Copies the example's Rust sources (not its tests) into `to`.
fn copy_sources(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if path.is_dir() && name != "tests" {
            copy_sources(&path, &to.join(name));
        } else if path.extension().is_some_and(|e| e == "rs") {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
}

/// A mutant as the lists name it: `file: rule: mutation`.
fn id(mutant: &Mutant) -> String {
    let file = mutant.file.display();
    format!(
        "{}/{file}: {}: {}",
        mutant.example, mutant.rule, mutant.what
    )
}

/// The crate root a mutated file is built through.
enum Root {
    Lib,
    Bin(String),
}

/// `lib.rs` or a binary named in the example's manifest is its own root; another file is a
/// module (`mod data;`) of the library, if the example has one, else of `main.rs`.
fn root_file(example: &Path, manifest: &str, file: &Path) -> Root {
    let written = file.display().to_string();
    if written == "lib.rs" {
        return Root::Lib;
    }
    if manifest.contains(&format!("path = \"{written}\"")) || written == "main.rs" {
        return Root::Bin(written);
    }
    match example.join("lib.rs").exists() {
        true => Root::Lib,
        false => Root::Bin("main.rs".to_owned()),
    }
}

/// A workspace of one package per mutant, each a copy of its example's sources with the
/// mutated file, whose only target is the mutated file's (named after the mutant).
fn write_workspace(dir: &Path, mutants: &[(String, &Mutant)]) {
    let root = root();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let shared = &workspace[workspace.find("[workspace.package]").unwrap()..];
    let shared = &shared[..shared.find("\n[profile").unwrap_or(shared.len())];
    let members: Vec<String> = mutants
        .iter()
        .map(|(n, _)| format!("\"examples/{n}\""))
        .collect();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n\n{shared}\n",
            members.join(", ")
        ),
    )
    .unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    // The packages sit beside links to the examples, so that a `#[path = "../../bench/..."]`
    // of a copied file finds what it names.
    let packages = dir.join("examples");
    std::fs::create_dir_all(&packages).unwrap();
    for entry in std::fs::read_dir(root.join("examples")).unwrap() {
        let path = entry.unwrap().path();
        std::os::unix::fs::symlink(&path, packages.join(path.file_name().unwrap())).unwrap();
    }
    for (name, mutant) in mutants {
        let example = root.join("examples").join(&mutant.example);
        let manifest = std::fs::read_to_string(example.join("Cargo.toml")).unwrap();
        let package = packages.join(name);
        copy_sources(&example, &package);
        std::fs::write(package.join(&mutant.file), &mutant.text).unwrap();
        let (target, own) = match root_file(&example, &manifest, &mutant.file) {
            Root::Lib => (
                format!("[lib]\nname = \"{name}\"\npath = \"lib.rs\"\n"),
                String::new(),
            ),
            Root::Bin(file) => (
                format!("[[bin]]\nname = \"{name}\"\npath = \"{file}\"\n"),
                library(&manifest)
                    .map(|lib| format!("{lib} = {{ path = {example:?} }}\n"))
                    .unwrap_or_default(),
            ),
        };
        std::fs::write(
            package.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition.workspace = true\npublish = false\n\
                 autobins = false\nautoexamples = false\nautotests = false\nautobenches = false\n\n\
                 {target}\n[dependencies]\n{}{own}\n[features]\n{}",
                section(&manifest, "dependencies", &example),
                section(&manifest, "features", &example),
            ),
        )
        .unwrap();
    }
}

/// The rows of a list beside this file, `rule | example/file | mutation | .. | why`, as the ids
/// the test gives mutants (`file: rule: mutation`), each with its cells between the mutation
/// and the reason (the allow-list's "found": what the test finds wrong, exactly).
fn listed(list: &str) -> Vec<(String, Vec<String>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(list);
    let text = std::fs::read_to_string(&path).unwrap();
    let header = text
        .lines()
        .find(|l| l.starts_with("| rule "))
        .expect("a table");
    let columns = header.trim_end_matches('|').split(" | ").count();
    text.lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter(|l| !l.starts_with("rule ") && !l.starts_with("---"))
        .map(|l| {
            let cells: Vec<&str> = l
                .trim_end_matches('|')
                .split(" | ")
                .map(str::trim)
                .collect();
            assert!(
                cells.len() == columns && cells.iter().all(|c| !c.is_empty()),
                "{list}: a row needs its {columns} cells: {l}"
            );
            let id = format!("{}: {}: {}", cells[1], cells[0], cells[2]);
            let middle = cells[3..columns - 1]
                .iter()
                .map(|c| c.to_string())
                .collect();
            (id, middle)
        })
        .collect()
}

#[derive(Default)]
struct Count {
    built: usize,
    failed: usize,
    allowed: usize,
    pending: usize,
}

#[test]
fn every_mutant_is_one_error_at_its_key_with_its_fix() {
    let root = root();
    let every: u64 = std::env::var("MUTANTS_EVERY").ok().map_or(1, |v| {
        v.parse().expect("MUTANTS_EVERY is a whole number ≥ 1")
    });
    let mut all = Vec::new();
    for source in mutants::sources(&root.join("examples")) {
        all.extend(mutants::mutants(&source));
    }
    let generated = all.len();
    let only = std::env::var("MUTANTS_ONLY").ok();
    let mut sample = sampled(all, every);
    if let Some(only) = &only {
        sample.retain(|m| id(m).contains(only.as_str()));
    }
    let named: Vec<(String, &Mutant)> = sample
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("m{i:04}"), m))
        .collect();
    let dir = root.join("target/tests/mutants");
    write_workspace(&dir, &named);
    let reports = check(
        &dir,
        &root.join("target/tests/trybuild"),
        // cargo's default targets, a library and binaries: `--lib` would refuse a sample
        // (`MUTANTS_ONLY`) of binaries alone.
        &["--workspace"],
    );
    let allowed = listed("mutants-allowed.md");
    let pending = listed("mutants-pending.md");
    let mut still_failing = Vec::new();
    let mut rules: BTreeMap<String, Count> = BTreeMap::new();
    let mut examples: BTreeMap<String, Count> = BTreeMap::new();
    let mut failures = Vec::new();
    for (name, mutant) in &named {
        let id = id(mutant);
        let errors = reports
            .get(name)
            .map(|r| r.errors.clone())
            .unwrap_or_default();
        let rendered: Vec<&str> = errors
            .iter()
            .map(|e| e["rendered"].as_str().unwrap_or_default())
            .collect();
        let mut wrong = Vec::new();
        match errors.len() {
            0 => wrong.push("no error".to_owned()),
            1 => {}
            n => wrong.push(format!("{n} errors in cargo's count")),
        }
        if let Some(first) = errors.first() {
            if !points_into(first, &mutant.text, mutant.within) {
                wrong.push("the first error is not at the mutated key".to_owned());
            }
            if !rendered[0].contains("help:") {
                wrong.push("no `help:`".to_owned());
            }
        }
        // rustc's own notes may point into Burn's sources ("similarly named struct
        // `ClassificationOutput` defined here"): Burn is the user's dependency, not our
        // plumbing; a path into any other registry crate is still refused.
        let internal: Vec<&&str> = INTERNAL
            .iter()
            .filter(|n| {
                rendered.iter().any(|r| match **n {
                    ".cargo/registry" => r
                        .lines()
                        .any(|l| l.contains(".cargo/registry") && !l.contains("/burn-")),
                    _ => r.contains(*n),
                })
            })
            .collect();
        if !internal.is_empty() {
            wrong.push(format!("names {internal:?}"));
        }
        let rule = rules.entry(mutant.rule.to_owned()).or_default();
        let example = examples
            .entry(format!("{}/{}", mutant.example, mutant.file.display()))
            .or_default();
        rule.built += 1;
        example.built += 1;
        if wrong.is_empty() {
            continue;
        }
        if let Some((_, found)) = allowed.iter().find(|(a, _)| *a == id) {
            // Let through only as reviewed: a mutant that fails otherwise now is a failure.
            let now = wrong.join("; ");
            if found[0] != now {
                failures.push(format!(
                    "{id} ({name}): allowed for \"{}\", but now: {now}\n{}",
                    found[0],
                    rendered.join("")
                ));
                continue;
            }
            still_failing.push(id);
            rule.allowed += 1;
            example.allowed += 1;
            continue;
        }
        if pending.iter().any(|(p, _)| *p == id) {
            still_failing.push(id);
            rule.pending += 1;
            example.pending += 1;
            continue;
        }
        rule.failed += 1;
        example.failed += 1;
        failures.push(format!(
            "{id} ({name}): {}\n{}",
            wrong.join("; "),
            rendered.join("")
        ));
    }
    println!(
        "{generated} mutants generated, {} built (every compiler-level one, one macro-level in {every})",
        named.len()
    );
    for (what, counts) in [("rule", &rules), ("example", &examples)] {
        println!("| {what} | built | failed | allowed | pending |\n|---|---|---|---|---|");
        for (name, c) in counts {
            let (b, f, a, p) = (c.built, c.failed, c.allowed, c.pending);
            println!("| {name} | {b} | {f} | {a} | {p} |");
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\n{} failed",
        failures.join("\n\n"),
        failures.len()
    );
    // Only where every mutant was built can a listed one be known to pass now.
    if every == 1 && only.is_none() {
        let fixed: Vec<&String> = allowed
            .iter()
            .chain(&pending)
            .map(|(id, _)| id)
            .filter(|id| !still_failing.contains(id))
            .collect();
        assert!(
            fixed.is_empty(),
            "listed but one error with its fix now (remove them from the list): {fixed:#?}"
        );
    }
    let allowed_mutants: usize = rules.values().map(|c| c.allowed).sum();
    assert!(
        only.is_some() || allowed_mutants * 50 <= named.len(),
        "{allowed_mutants} allowed of {} built: more than 2 %",
        named.len()
    );
}
