// `#[los]` is rustc's one error, with its fix: the derive takes the field as the loss it
// meant, and adds no "needs its loss" of its own.
use burn::tensor::{Int, Tensor};
use burn_experiment::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[los]
    loss: Tensor<1>,
    #[logits]
    logits: Tensor<2>,
    #[targets]
    targets: Tensor<1, Int>,
}

fn main() {}
