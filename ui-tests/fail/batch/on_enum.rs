use dsl_runtime::prelude::*;

#[derive(Clone, Batch)]
enum Sample {
    A(f32),
}

fn main() {
    let _ = SampleBatcher;
}
