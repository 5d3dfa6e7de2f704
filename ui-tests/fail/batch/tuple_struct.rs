use dsl_runtime::prelude::*;

#[derive(Clone, Batch)]
struct Sample(f32, usize);

fn main() {
    let _ = SampleBatcher;
}
