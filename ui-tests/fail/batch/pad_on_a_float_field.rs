use burn_experiment::prelude::*;

#[derive(Clone, Batch)]
struct Sample {
    #[pad(0)]
    features: [f32; 4],
    tokens: Vec<usize>,
}

fn main() {
    let _ = SampleBatcher;
}
