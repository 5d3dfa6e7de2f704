//! A resumable experiment. Each epoch ends with a checkpoint in
//! `artifacts/resumable/checkpoint/`; kill the process at any moment (Ctrl-C finishes the step
//! first) and run it again: it continues after the newest intact checkpoint and reaches the
//! same weights as an uninterrupted run. At the end it loads the best epoch by validation loss
//! and evaluates it on a held-out test set.
//!
//! `cargo run -p checkpointing [-- --artifacts DIR]`

use std::process::ExitCode;

use burn::tensor::Device;
use burn::train::ClassificationOutput;
use dsl_runtime::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    /// The seed classification task, shuffled, on Adam, resumable.
    name: Resumable,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: samples(0..96),
        valid: samples(96..120),
        batcher: SampleBatcher,
        batch_size: 16,
        shuffle: 7,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 40,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
    resume: latest,
}

fn main() -> ExitCode {
    let mut config = Resumable::config();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag, dir] if flag == "--artifacts" => config.artifacts = dir.clone(),
        _ => {
            eprintln!("usage: checkpointing [--artifacts DIR]");
            return ExitCode::from(2);
        }
    }
    let device = Device::flex();
    match Resumable::with_config(config.clone(), &device) {
        Ok(report) => println!("trained through epoch {}", report.last_epoch),
        Err(err @ FitError::Interrupted { .. }) => {
            eprintln!("{err}");
            return ExitCode::from(130);
        }
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    }
    let (epoch, model) = match Resumable::load_best_with(&config, &device) {
        Ok(best) => best,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    match Resumable::evaluate(&model, samples(120..180), SampleBatcher) {
        Ok(test) => {
            println!(
                "best epoch {epoch}: test loss {:.4}, test accuracy {:.2}%",
                test.get("loss").unwrap_or(f64::NAN),
                test.get("accuracy").unwrap_or(f64::NAN)
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
