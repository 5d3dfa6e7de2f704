//! Records the compiler that builds the runtime (and so the experiment binary linking it), and
//! the runtime's own commit when it is built from a git work tree (a path or git dependency),
//! for the provenance a run saves in `config.json`.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |v| v.trim().to_owned());
    println!("cargo:rustc-env=DSL_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // Only when git tracks this crate: a copy from crates.io inside some other work tree is not
    // that tree's commit.
    if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_some()
        && let Some(commit) = git(&["rev-parse", "HEAD"])
    {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no", "."])
            .is_some_and(|status| !status.is_empty());
        let suffix = if dirty { "+dirty" } else { "" };
        println!("cargo:rustc-env=DSL_RUNTIME_COMMIT={commit}{suffix}");
        // Taken again when the runtime's sources change, not at every commit: a new commit
        // would otherwise rebuild the runtime and every experiment for the same sources.
        println!("cargo:rerun-if-changed=src");
    }
}
