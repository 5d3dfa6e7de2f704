use burn::tensor::{Int, Tensor};
use burn_experiment::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[logits]
    logits: Tensor<2>,
    #[targets]
    targets: Tensor<1, Int>,
}

fn main() {}
