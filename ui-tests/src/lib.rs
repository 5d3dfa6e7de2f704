//! Holds no code: the cases are `pass/*.rs` and `fail/*.rs`, run by `tests/ui.rs`.
