//! A sweep over four trials, ranked by the checkpointed metric, with a device named.
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

training! {
    name: Swept,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..32), valid: samples(32..48), batcher: SampleBatcher, batch_size: 16 },
    optimizer: adam(lr = 1e-2),
    epochs: 1,
    metrics: [valid.loss, valid.accuracy],
    checkpoint: best(valid.accuracy),
    device: "flex",
    sweep: { lr: [1e-3, 1e-2], batch_size: [8, 16], ema: [0.9] },
}

pub fn main() {
    assert_eq!(Swept::config().device, "flex");
    assert_eq!(Swept::device(&Swept::config()).unwrap(), burn::tensor::Device::flex());
    let trials = Swept::sweep().trials();
    assert_eq!(trials.len(), 4);
    let values: Vec<Vec<String>> = trials
        .iter()
        .map(|t| t.iter().map(|(_, v)| v.to_string()).collect())
        .collect();
    assert_eq!(values[0], ["0.001", "8", "0.9"]);
    assert_eq!(values[3], ["0.01", "16", "0.9"]);
    let keys: Vec<&str> = trials[0].iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["lr", "batch_size", "ema"]);
}
