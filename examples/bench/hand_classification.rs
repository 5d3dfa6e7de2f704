//! The seed classification experiment written by hand against Burn, without the DSL: the bare
//! baseline of the compile-time comparison in the README (`examples/bench/compile-cost.sh`).

use burn::data::dataloader::DataLoaderBuilder;
use burn::module::Module;
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::Device;
use seed::{Mlp, SampleBatcher, samples};

fn main() {
    let device = Device::flex().autodiff();
    let train = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(16)
        .set_device(device.clone())
        .build(samples(0..96));
    let valid = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(16)
        .set_device(device.clone().inner())
        .build(samples(96..120));
    let mut model = Mlp::new(3, &device);
    let mut optim = SgdConfig::new().init();
    for epoch in 1..=3 {
        let mut losses = Vec::new();
        for batch in train.iter() {
            let out = model.forward_classification(batch.expect("in-memory data"));
            losses.push(out.loss.clone().into_scalar::<f32>());
            let grads = GradientsParams::from_grads(out.loss.backward(), &model);
            model = optim.step(0.1, model, grads);
        }
        let eval = model.valid();
        let (mut correct, mut total) = (0i64, 0usize);
        for batch in valid.iter() {
            let batch = batch.expect("in-memory data");
            total += batch.x.dims()[0];
            let out = eval.forward_classification(batch);
            correct += out
                .output
                .argmax(1)
                .squeeze::<1>()
                .equal(out.targets)
                .int()
                .sum()
                .into_scalar::<i64>();
        }
        let mean = losses.iter().sum::<f32>() / losses.len() as f32;
        println!(
            "epoch {epoch}: train loss {mean:.4}, valid accuracy {:.2}%",
            100.0 * correct as f64 / total as f64
        );
    }
}
