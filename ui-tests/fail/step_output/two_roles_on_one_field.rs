use burn::tensor::Tensor;
use burn_experiment::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[loss]
    #[targets]
    loss: Tensor<1>,
}

fn main() {}
