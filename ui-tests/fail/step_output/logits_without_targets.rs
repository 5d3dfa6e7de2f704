use burn::tensor::Tensor;
use burn_experiment::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[loss]
    loss: Tensor<1>,
    #[logits]
    logits: Tensor<2>,
}

fn main() {}
