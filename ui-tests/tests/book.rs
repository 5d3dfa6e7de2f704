//! The book (`docs/src`) and the README stay true to the code: every Rust snippet is a run of
//! lines of a file CI compiles (an example, a test case, the runtime), every relative link
//! points at a file that exists, and the keys reference includes the table the vocabulary
//! generates.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() && name != "target" && !name.starts_with('.') {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// The book's pages and the README.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    files(&root().join("docs/src"), "md", &mut pages);
    assert!(pages.len() > 15, "{pages:?}");
    pages
}

/// Each ```` ```rust ```` block of `text`, as trimmed lines; an error for a fence mdbook would
/// not see (after text on its line, as in `}```` `) or one left open, which turns the rest of the
/// page into one code block and would hide its snippets from this check.
fn rust_blocks(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut blocks = Vec::new();
    // The open block: whether it is Rust, its lines, and the line it opened on.
    let mut open: Option<(bool, Vec<String>, usize)> = None;
    for (number, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if !fence && line.contains("```") && open.is_some() {
            return Err(format!(
                "line {}: a fence after text on its line does not close the block: put it on a line of its own",
                number + 1
            ));
        }
        match (&mut open, fence) {
            (None, true) => {
                let rust = line.trim_start().starts_with("```rust");
                open = Some((rust, Vec::new(), number + 1));
            }
            (Some(_), true) => {
                let (rust, lines, _) = open.take().expect("open");
                if rust {
                    blocks.push(lines);
                }
            }
            (Some((_, lines, _)), false) => lines.push(line.trim().to_owned()),
            (None, false) => {}
        }
    }
    match open {
        Some((_, _, at)) => Err(format!(
            "the code block opened on line {at} is never closed"
        )),
        None => Ok(blocks),
    }
}

#[test]
fn a_fence_out_of_place_or_left_open_is_an_error() {
    assert_eq!(
        rust_blocks("a\n```rust\nfn f() {}\n```\n```text\nx\n```\n").unwrap(),
        [["fn f() {}"]]
    );
    assert!(rust_blocks("```rust\nfn f() {\n}```\n\nmore text\n").is_err());
    assert!(rust_blocks("```rust\nfn f() {}\n").is_err());
}

#[test]
fn every_rust_snippet_is_code_ci_compiles() {
    let mut sources = Vec::new();
    for dir in [
        "examples",
        "ui-tests/pass",
        "ui-tests/corpus",
        "dsl-runtime/src",
        "dsl-runtime/tests",
    ] {
        files(&root().join(dir), "rs", &mut sources);
    }
    let compiled: Vec<Vec<String>> = sources
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| l.trim().to_owned())
                .collect()
        })
        .collect();
    let mut missing = Vec::new();
    let mut count = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let blocks = rust_blocks(&text).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        for block in blocks {
            count += 1;
            let lines: Vec<&String> = block.iter().filter(|l| !l.is_empty()).collect();
            // A block that includes a file is that file (its path is checked with the links).
            if lines.iter().all(|l| l.starts_with("{{#include ")) {
                continue;
            }
            let found = compiled.iter().any(|file| {
                let file: Vec<&String> = file.iter().filter(|l| !l.is_empty()).collect();
                file.windows(lines.len()).any(|w| w == lines.as_slice())
            });
            if !found {
                missing.push(format!(
                    "{}: a snippet not found in compiled code, starting `{}`",
                    page.display(),
                    lines.first().map_or("", |l| l.as_str())
                ));
            }
        }
    }
    assert!(count >= 5, "{count} snippets");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_relative_link_points_at_a_file() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("](") {
            let target = &text[at + 2..];
            let target = &target[..target.find(')').unwrap_or(0)];
            if target.starts_with("http") || target.starts_with('#') || target.is_empty() {
                continue;
            }
            let file = target.split('#').next().unwrap();
            if !page.parent().unwrap().join(file).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
            // mdbook copies only `docs/src` into the built book: an image outside it is missing
            // there, though the file exists.
            let image = text[..at]
                .rfind('[')
                .is_some_and(|open| text[..open].ends_with('!'));
            if image
                && page.starts_with(root().join("docs/src"))
                && !page
                    .parent()
                    .unwrap()
                    .join(file)
                    .canonicalize()
                    .is_ok_and(|f| f.starts_with(root().join("docs/src").canonicalize().unwrap()))
            {
                broken.push(format!(
                    "{}: the image {target} is outside docs/src, so not in the built book",
                    page.display()
                ));
            }
        }
        for (at, _) in text.match_indices("{{#include ") {
            let target = &text[at + "{{#include ".len()..];
            let target = &target[..target.find("}}").unwrap()];
            if !page.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: include {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_keys_reference_is_the_vocabularys_table() {
    let page = std::fs::read_to_string(root().join("docs/src/reference/keys.md")).unwrap();
    let table = std::fs::read_to_string(root().join("dsl-runtime/src/keys.md")).unwrap();
    assert!(
        page.contains(&table) && table.lines().count() > 20,
        "the keys page does not hold the vocabulary's table: run `DSL_WRITE_DOCS=1 cargo test -p burn-experiment-vocabulary`"
    );
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    for page in pages()
        .iter()
        .filter(|p| p.starts_with(root().join("docs/src")))
    {
        let name = page
            .strip_prefix(root().join("docs/src"))
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name == "SUMMARY.md" || summary.contains(&format!("({name})")),
            "{name} is not in SUMMARY.md"
        );
    }
}

/// The compile errors the book quotes are reviewed `.stderr` files of `fail/`, verbatim.
#[test]
fn the_errors_the_book_quotes_are_reviewed_ones() {
    let mut reviewed = Vec::new();
    files(&root().join("ui-tests/fail"), "stderr", &mut reviewed);
    let reviewed: Vec<String> = reviewed
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let page = std::fs::read_to_string(root().join("docs/src/errors.md")).unwrap();
    let mut quoted = 0;
    for block in page.split("```text\n").skip(1) {
        let block = &block[..block.find("```").unwrap()];
        if block.starts_with("error") {
            quoted += 1;
            assert!(
                reviewed.iter().any(|r| r.contains(block.trim_end())),
                "not a reviewed error:\n{block}"
            );
        }
    }
    assert!(quoted >= 1);
}

/// A path of the workspace written in the book or the README (`dsl-runtime/src/..`,
/// `examples/..`) names a file or folder that exists: files move, and the docs must follow.
#[test]
fn every_workspace_path_the_docs_name_exists() {
    let tops = [
        "dsl-runtime/",
        "dsl-macros/",
        "dsl-vocabulary/",
        "examples/",
        "ui-tests/",
        "docs/",
        "templates/",
    ];
    let mut missing = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for quoted in text.split('`').skip(1).step_by(2) {
            let path = quoted.split_whitespace().next().unwrap_or("");
            if tops.iter().any(|t| path.starts_with(t))
                && !path.contains(['<', '*', '{'])
                && !root().join(path).exists()
            {
                missing.push(format!("{}: {path}", page.display()));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The README's crate list names every example of the workspace (an example added without a
/// line there is one a newcomer never finds).
#[test]
fn the_readme_names_every_example() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let list = &readme[readme.find("- `examples/`").expect("the crate list")..];
    let list = &list[..list.find("\n- ").unwrap_or(list.len())];
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.join("Cargo.toml").exists() && !list.contains(&format!("`{name}`")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "examples the README's crate list omits: {missing:?}"
    );
}
