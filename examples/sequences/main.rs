//! `cargo run --release -p sequences`: the sequence classifier of `lib.rs`.
fn main() -> std::process::ExitCode {
    sequences::Sequences::cli()
}
