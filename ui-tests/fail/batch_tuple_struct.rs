// A rejected derive expands to errors only, leaving the imports unused.
#![allow(unused_imports)]

use burn::tensor::{Int, Tensor};
use dsl_runtime::prelude::*;

#[derive(Clone, Batch)]
struct Sample(f32, usize);

fn main() {}
