//! `cargo run --release -p finetune [-- --artifacts DIR]`: pretrain, export, fine-tune (see
//! `lib.rs`). Two experiments in sequence, so not one experiment's `cli()`: its only flag is
//! where both write their runs.

use std::process::ExitCode;

/// `--artifacts DIR` (or `--artifacts=DIR`), else `artifacts`; anything else is refused.
fn artifacts(mut args: impl Iterator<Item = String>) -> Result<String, String> {
    let usage = "usage: finetune [--artifacts DIR]";
    let mut dir = None;
    while let Some(arg) = args.next() {
        let value = match arg.strip_prefix("--artifacts") {
            Some("") => args.next(),
            Some(rest) => rest.strip_prefix('=').map(str::to_owned),
            None => None,
        };
        match value {
            Some(value) if !value.is_empty() && dir.is_none() => dir = Some(value),
            _ => return Err(format!("unexpected argument `{arg}`\n{usage}")),
        }
    }
    Ok(dir.unwrap_or_else(|| "artifacts".to_owned()))
}

fn main() -> ExitCode {
    let artifacts = match artifacts(std::env::args().skip(1)) {
        Ok(dir) => dir,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    match finetune::pretrain_then_fine_tune(&artifacts, &burn::tensor::Device::flex()) {
        Ok((_, tuned)) => {
            eprintln!("fine-tuned run: {}", tuned.run_dir.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
