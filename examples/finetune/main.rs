//! `cargo run --release -p finetune [-- --artifacts DIR] [--precision bf16]`: pretrain,
//! export, fine-tune (see `lib.rs`). Two experiments in sequence, so not one experiment's
//! `cli()`: its flags are where both write their runs and the precision both train in.

use std::process::ExitCode;

use burn_experiment::Precision;

/// `--artifacts DIR` (else `artifacts`) and `--precision f32|bf16|f16` (else f32), each also
/// as `--flag=value`; anything else is refused.
fn flags(mut args: impl Iterator<Item = String>) -> Result<(String, Precision), String> {
    let usage = "usage: finetune [--artifacts DIR] [--precision f32|bf16|f16]";
    let (mut dir, mut precision) = (None, None);
    while let Some(arg) = args.next() {
        let (flag, value) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), None),
        };
        let value = match flag.as_str() {
            "--artifacts" | "--precision" => value.or_else(|| args.next()),
            _ => None,
        };
        match (flag.as_str(), value) {
            ("--artifacts", Some(value)) if !value.is_empty() && dir.is_none() => dir = Some(value),
            ("--precision", Some(value)) if precision.is_none() => {
                precision = Some(match value.as_str() {
                    "f32" => Precision::F32,
                    "bf16" => Precision::Bf16,
                    "f16" => Precision::F16,
                    _ => {
                        return Err(format!(
                            "--precision `{value}`: write f32, bf16 or f16\n{usage}"
                        ));
                    }
                });
            }
            _ => return Err(format!("unexpected argument `{arg}`\n{usage}")),
        }
    }
    Ok((
        dir.unwrap_or_else(|| "artifacts".to_owned()),
        precision.unwrap_or_default(),
    ))
}

fn main() -> ExitCode {
    let (artifacts, precision) = match flags(std::env::args().skip(1)) {
        Ok(flags) => flags,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    match finetune::pretrain_then_fine_tune(&artifacts, &burn::tensor::Device::flex(), precision) {
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
