//! `cargo run --release -p finetune`: pretrain, export, fine-tune (see `lib.rs`).

use std::process::ExitCode;

fn main() -> ExitCode {
    match finetune::pretrain_then_fine_tune("artifacts", &burn::tensor::Device::flex()) {
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
