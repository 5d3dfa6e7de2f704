//! Trains [`checkpointing::Jittered`]: [`checkpointing::Resumable`] with its training items
//! augmented, resuming after the newest checkpoint.
fn main() -> std::process::ExitCode {
    checkpointing::Jittered::cli()
}
