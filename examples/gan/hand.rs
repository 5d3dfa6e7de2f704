//! The loop a Burn user writes by hand for the ring GAN, with two optimizers: the baseline the
//! declared experiments are tested against, bit for bit, and timed against (`bench.sh`).

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::transform::ShuffledDataset;
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Device;
use burn_experiment::data::epoch_seed;
use std::ops::Range;

use crate::{Gan, GanLoss, SampleBatch, SampleBatcher, ring};

/// A step's loss on a batch (`Gan::discriminator_step`, ...).
pub type StepFn = fn(&Gan, SampleBatch) -> GanLoss;

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
    /// Each epoch's mean validation loss of both steps, with `valid` items.
    pub valid: Vec<(f64, f64)>,
}

/// Whether the generator steps on a batch: given the run's step (from 1) and the batch's
/// iteration in its epoch (from 0, as Burn's wgan counts `iteration % num_critic == 0`).
pub type Due = fn(usize, usize) -> bool;

/// The hand loop: per batch, `first` steps the discriminator (its own gradients only), then on
/// the batches `due` picks `second` steps the generator, each with its own optimizer and rate;
/// `after_first` runs on the model after each discriminator step (Burn's wgan clips it there).
/// With `valid` items, each epoch ends measuring both steps' mean loss on them, as the
/// declared experiment validates.
pub fn hand_loop(
    (items, valid, epochs, due): (Range<usize>, Option<Range<usize>>, usize, Due),
    (mut d_optim, d_lr): (ModuleOptimizer, f64),
    (mut g_optim, g_lr): (ModuleOptimizer, f64),
    first: StepFn,
    second: StepFn,
    after_first: fn(Gan) -> Gan,
) -> Run {
    let device = Device::flex().autodiff();
    let mut model = Gan::new(&device);
    let mut run = Run {
        first: vec![],
        second: vec![],
        generator: vec![],
        discriminator: vec![],
        valid: vec![],
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
        for (iteration, batch) in loader.iter().enumerate() {
            let batch = batch.expect("in-memory dataset");
            step += 1;
            let loss = first(&model, batch.clone()).loss;
            run.first.push(loss.clone().into_scalar::<f32>().to_bits());
            let mut grads = loss.backward();
            let grads = GradientsParams::from_module(&mut grads, &model.discriminator);
            model = d_optim.step(d_lr, model, grads);
            model = after_first(model);
            if due(step, iteration) {
                let loss = second(&model, batch).loss;
                run.second.push(loss.clone().into_scalar::<f32>().to_bits());
                let mut grads = loss.backward();
                let grads = GradientsParams::from_module(&mut grads, &model.generator);
                model = g_optim.step(g_lr, model, grads);
            }
        }
        if let Some(valid) = &valid {
            run.valid
                .push(validate(&model.valid(), valid.clone(), (first, second)));
        }
    }
    run.generator = model.generator.weights();
    run.discriminator = model.discriminator.weights();
    run
}

/// Both steps' mean loss over the batches of `items`, weighted by batch size.
fn validate(model: &Gan, items: Range<usize>, (first, second): (StepFn, StepFn)) -> (f64, f64) {
    let loader = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(64)
        .set_device(Device::flex())
        .build(ring(items));
    let (mut sums, mut n) = ((0.0, 0.0), 0);
    for batch in loader.iter() {
        let batch = batch.expect("in-memory dataset");
        let len = batch.point.dims()[0];
        let loss = |step: StepFn, batch| {
            f64::from(step(model, batch).loss.into_scalar::<f32>()) * len as f64
        };
        sums.0 += loss(first, batch.clone());
        sums.1 += loss(second, batch);
        n += len;
    }
    (sums.0 / n as f64, sums.1 / n as f64)
}
