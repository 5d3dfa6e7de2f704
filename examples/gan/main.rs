//! Trains the ring GAN; `--help` lists the flags.
use gan::RingGan;

fn main() -> std::process::ExitCode {
    RingGan::cli()
}
