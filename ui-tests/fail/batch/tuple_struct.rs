use burn_experiment::prelude::*;

#[derive(Clone, Batch)]
struct Sample(f32, usize);

fn main() {
    let _ = SampleBatcher;
}
