//! trybuild cases for the macros: each `fail/<macro>/*.rs` file holds one mistake and must fail
//! with exactly its reviewed `.stderr`. Snapshots depend on the compiler, pinned in
//! `rust-toolchain.toml`; regenerate with `TRYBUILD=overwrite` and read every change.
//!
//! `fail/corpus/` (cases copied from the corpus) is checked with the feature `corpus`, beside
//! the corpus itself (`.ci/run`); without it, the other groups: `cargo test --workspace` stays
//! under five minutes from a fresh clone.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    // `UI_CASES=fail/training/unknown_*.rs` runs a subset while working on them.
    match std::env::var("UI_CASES") {
        Ok(glob) => cases.compile_fail(glob),
        Err(_) if cfg!(feature = "corpus") => cases.compile_fail("fail/corpus/*.rs"),
        Err(_) => {
            for group in ["batch", "step_output", "training"] {
                cases.compile_fail(format!("fail/{group}/*.rs"));
            }
        }
    }
}
