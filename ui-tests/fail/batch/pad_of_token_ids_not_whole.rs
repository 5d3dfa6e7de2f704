use burn_experiment::prelude::*;

#[derive(Clone, Batch)]
struct Sentence {
    #[pad(0.5)]
    tokens: Vec<usize>,
    label: usize,
}

fn main() {
    let _ = SentenceBatcher;
}
