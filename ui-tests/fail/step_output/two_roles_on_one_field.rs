use burn::tensor::Tensor;
use dsl_runtime::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[loss]
    #[targets]
    loss: Tensor<1>,
}

fn main() {}
