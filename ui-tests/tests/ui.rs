//! trybuild cases for `training!`: `pass/` must compile and run, each `fail/` file holds one
//! mistake and must fail with exactly its reviewed `.stderr`. Snapshots depend on the compiler,
//! pinned in `rust-toolchain.toml`; regenerate with `TRYBUILD=overwrite` and read every change.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("pass/*.rs");
    cases.compile_fail("fail/*.rs");
}
