//! The ring GAN's hand-written loop (`gan::hand`) on `RingGan`'s data, optimizers and epochs,
//! validating each epoch as the experiment does, for `bench.sh`: it prints the last epoch's
//! validation losses.

use burn::optim::AdamConfig;
use gan::{Gan, RingGan};

fn main() {
    let config = RingGan::config();
    let adam = || AdamConfig::new().with_beta_1(0.5).init();
    let lr = |name: &str| config.optimizers[name].lr;
    let run = gan::hand::hand_loop(
        (0..2048, Some(2048..2304), config.epochs, |_, _| true),
        (adam(), lr("discriminator")),
        (adam(), lr("generator")),
        Gan::discriminator_step,
        Gan::generator_step,
        |model| model,
    );
    let (discriminator, generator) = run.valid.last().expect("an epoch ran");
    println!("valid.discriminator.loss {discriminator:.4}  valid.generator.loss {generator:.4}");
}
