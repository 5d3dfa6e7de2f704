use burn_experiment::prelude::*;

#[derive(Clone, Batch)]
enum Sample {
    A(f32),
}

fn main() {
    let _ = SampleBatcher;
}
