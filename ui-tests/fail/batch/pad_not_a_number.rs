use burn_experiment::prelude::*;

#[derive(Clone, Batch)]
struct Sample {
    #[pad("<pad>")]
    tokens: Vec<usize>,
    class: usize,
}

fn main() {
    let _ = SampleBatcher;
}
