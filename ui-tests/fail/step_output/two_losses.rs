use burn::tensor::Tensor;
use burn_experiment::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[loss]
    loss: Tensor<1>,
    #[loss]
    other: Tensor<1>,
}

fn main() {}
