//! The runtime's layers depend on each other one way: no top-level module (a layer: `config`,
//! `data`, `metric`, `model`, `checkpoint`, `inference`, `fit`, `output`, `app`, and the base
//! modules) reaches, through its `crate::..` paths, one that reaches back. Read from the
//! sources (comments and test modules left out). The root's re-exports (`FitError`, `Fit`, ..)
//! are for users: inside the crate every path is the real one, so none may be imported there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Words after `crate::`, and the first word of each item in `crate::{a, b::c}`.
fn references(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let word: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !word.is_empty() {
                    found.insert(word);
                }
            }
        } else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(word);
        }
    }
    found
}

#[test]
fn the_runtime_modules_depend_on_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    // `pub use module::{Item, ..};` at the root: the module an item comes from.
    let mut root: BTreeMap<String, String> = BTreeMap::new();
    for line in lib
        .lines()
        .filter(|l| l.starts_with("pub use ") || l.starts_with("use "))
    {
        let path = line
            .trim_start_matches("pub ")
            .trim_start_matches("use ")
            .trim_end_matches(';');
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        for item in items.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !item.is_empty() {
                root.entry(item.to_owned())
                    .or_insert_with(|| module.to_owned());
            }
        }
    }
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(
        root.contains_key("FitError"),
        "the scan found the root's re-exports"
    );
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut aliased = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative == "lib.rs" {
            continue;
        }
        let module = relative.split(['/', '.']).next().unwrap().to_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text[..text.find("#[cfg(test)]").unwrap_or(text.len())]
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for word in references(&code) {
            if root.contains_key(&word) {
                aliased.push(format!("{relative}: crate::{word}"));
            }
            let target = root.get(&word).cloned().unwrap_or(word);
            let is_module = src.join(format!("{target}.rs")).exists() || src.join(&target).is_dir();
            if target != module && is_module {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    assert!(
        aliased.is_empty(),
        "root re-exports imported inside the crate (name the real path): {aliased:?}"
    );
    assert!(edges.len() >= 8, "the scan found the modules: {edges:?}");
    // Depth-first search for a path back to where it started.
    fn cycle(
        at: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|m| m == at) {
            let mut found = path[i..].to_vec();
            found.push(at.to_owned());
            return Some(found);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_owned());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(found) = cycle(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for module in edges.keys() {
        if let Some(found) = cycle(module, &edges, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}", found.join(" -> "));
        }
    }
}
