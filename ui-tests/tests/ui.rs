//! trybuild cases for the macros: each `fail/<macro>/*.rs` file holds one mistake and must fail
//! with exactly its reviewed `.stderr`. Snapshots depend on the compiler, pinned in
//! `rust-toolchain.toml`; regenerate with `TRYBUILD=overwrite` and read every change.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    // `UI_CASES=fail/training/unknown_*.rs` runs a subset while working on them.
    let glob = std::env::var("UI_CASES").unwrap_or_else(|_| "fail/*/*.rs".to_owned());
    cases.compile_fail(glob);
}
