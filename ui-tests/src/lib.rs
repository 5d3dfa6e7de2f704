//! Holds no code: the cases are `pass/<macro>/*.rs` (run by `tests/pass.rs`) and
//! `fail/<macro>/*.rs` (run by `tests/ui.rs`, their errors held to `tests/stderr_rules.rs`).
