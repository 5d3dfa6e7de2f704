use burn_experiment::prelude::*;

#[derive(Clone, Batch)]
struct Sample {
    features: [f32; 4],
    label: String,
}

fn main() {
    let _ = SampleBatcher;
}
