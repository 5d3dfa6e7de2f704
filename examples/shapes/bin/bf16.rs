//! `cargo run --release -p shapes --bin shapes_bf16`: the CNN of `lib.rs` trained in bf16. Each
//! step's forward and backward passes run in bfloat16 on a copy of the weights, Adam steps the
//! f32 weights, and validation runs in bf16 too; `#[derive(Batch)]` casts the images.
//! `--precision f32` trains the same experiment in f32, `--precision f16` in half precision
//! with loss scaling; `--export FILE` writes bf16 weights (`--precision f32` the f32 ones).

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use shapes::{Cnn, ImageBatch, ImageBatcher, images};

training! {
    /// The shapes CNN in bf16.
    name: ShapesBf16,
    model: Cnn = Cnn::new(device),
    step: |model, batch: ImageBatch| -> ClassificationOutput { model.forward(batch) },
    loader: {
        train: images(0..300),
        valid: images(300..390),
        batcher: ImageBatcher,
        batch_size: 30,
        shuffle: 5,
    },
    optimizer: adam(lr = 1e-2),
    epochs: 6,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(1),
    precision: bf16,
    seed: 1,
}

fn main() -> std::process::ExitCode {
    ShapesBf16::cli()
}
