//! The loop a Burn user writes by hand for the ring GAN, with two optimizers: the baseline the
//! declared experiments are tested against, bit for bit, and timed against (`bench.sh`).

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::transform::ShuffledDataset;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Device;
use dsl_runtime::data::epoch_seed;

use crate::{Gan, GanLoss, SampleBatch, SampleBatcher, ring};

/// What a run gives: each step's losses in order, and the final weights.
#[derive(Debug, PartialEq)]
pub struct Run {
    /// The first step's loss at each batch, as bits.
    pub first: Vec<u32>,
    /// The second step's loss where it ran, as bits.
    pub second: Vec<u32>,
    /// The generator's final weights, as bits.
    pub generator: Vec<u32>,
    /// The discriminator's final weights, as bits.
    pub discriminator: Vec<u32>,
}

/// The hand loop: per batch, `first` steps the discriminator (its own gradients only), then on
/// every `every`-th batch `second` steps the generator, each with its own optimizer and rate.
pub fn hand_loop(
    items: std::ops::Range<usize>,
    epochs: usize,
    (mut d_optim, d_lr): (ModuleOptimizer, f64),
    (mut g_optim, g_lr): (ModuleOptimizer, f64),
    every: usize,
    first: fn(&Gan, SampleBatch) -> GanLoss,
    second: fn(&Gan, SampleBatch) -> GanLoss,
) -> Run {
    let device = Device::flex().autodiff();
    let mut model = Gan::new(&device);
    let mut run = Run {
        first: vec![],
        second: vec![],
        generator: vec![],
        discriminator: vec![],
    };
    let mut step = 0;
    for epoch in 1..=epochs {
        let loader = DataLoaderBuilder::new(SampleBatcher)
            .batch_size(64)
            .set_device(device.clone())
            .build(ShuffledDataset::new(
                ring(items.clone()),
                epoch_seed(3, epoch),
            ));
        for batch in loader.iter() {
            let batch = batch.expect("in-memory dataset");
            step += 1;
            let loss = first(&model, batch.clone()).loss;
            run.first.push(loss.clone().into_scalar::<f32>().to_bits());
            let mut grads = loss.backward();
            let grads = GradientsParams::from_module(&mut grads, &model.discriminator);
            model = d_optim.step(d_lr, model, grads);
            if step % every == 0 {
                let loss = second(&model, batch).loss;
                run.second.push(loss.clone().into_scalar::<f32>().to_bits());
                let mut grads = loss.backward();
                let grads = GradientsParams::from_module(&mut grads, &model.generator);
                model = g_optim.step(g_lr, model, grads);
            }
        }
    }
    run.generator = model.generator.weights();
    run.discriminator = model.discriminator.weights();
    run
}
