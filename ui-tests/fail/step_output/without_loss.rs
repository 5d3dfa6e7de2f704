use burn::tensor::{Int, Tensor};
use dsl_runtime::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[logits]
    logits: Tensor<2>,
    #[targets]
    targets: Tensor<1, Int>,
}

fn main() {}
