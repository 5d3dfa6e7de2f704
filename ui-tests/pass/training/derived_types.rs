//! A sample and an output written with the derives, checked by `training!` like Burn's types.
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Int, Tensor};
use burn_experiment::prelude::*;
use seed::Mlp;

#[derive(Clone, Debug, Batch)]
struct Point {
    x: [f32; 4],
    class: usize,
}

#[derive(StepOutput)]
struct Scored {
    #[loss]
    loss: Tensor<1>,
    #[logits]
    scores: Tensor<2>,
    #[targets]
    classes: Tensor<1, Int>,
}

fn points(n: usize) -> burn::data::dataset::InMemDataset<Point> {
    burn::data::dataset::InMemDataset::new(
        (0..n).map(|k| Point { x: [k as f32 / n as f32; 4], class: k % 3 }).collect(),
    )
}

fn score(model: &Mlp, batch: PointBatch) -> Scored {
    let scores = model.forward(batch.x);
    let loss = CrossEntropyLossConfig::new()
        .init(&scores.device())
        .forward(scores.clone(), batch.class.clone());
    Scored { loss, scores, classes: batch.class }
}

training! {
    name: Derived,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: PointBatch| -> Scored { score(model, batch) },
    loader: { train: points(32), valid: points(16), batcher: PointBatcher, batch_size: 8 },
    optimizer: sgd(lr = 0.1),
    epochs: 1,
    metrics: [train.loss, valid.loss, valid.accuracy, valid.top_k(2), valid.f1, valid.auroc],
}

pub fn main() {
    let dir = std::env::temp_dir().join(format!("dsl-ui-derived-{}", std::process::id()));
    let config = DerivedConfig { artifacts: dir.to_string_lossy().into_owned(), ..Derived::config() };
    let report = Derived::with_options(config, &burn::tensor::Device::flex(), |o| o.quiet = true).unwrap();
    assert_eq!(report.history.series().len(), 6);
    std::fs::remove_dir_all(dir).unwrap();
}
