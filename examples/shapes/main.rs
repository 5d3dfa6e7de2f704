//! `cargo run --release -p shapes`: the CNN of `lib.rs`.
fn main() -> std::process::ExitCode {
    shapes::Shapes::cli()
}
