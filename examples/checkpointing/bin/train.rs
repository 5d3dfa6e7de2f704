//! Trains [`checkpointing::Resumable`], resuming after the newest checkpoint.
fn main() -> std::process::ExitCode {
    checkpointing::Resumable::cli()
}
