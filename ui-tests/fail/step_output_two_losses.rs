// A rejected derive expands to errors only, leaving the imports unused.
#![allow(unused_imports)]

use burn::tensor::{Int, Tensor};
use dsl_runtime::prelude::*;

#[derive(StepOutput)]
struct Output {
    #[loss]
    loss: Tensor<1>,
    #[loss]
    other: Tensor<1>,
}

fn main() {}
