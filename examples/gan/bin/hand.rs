//! The ring GAN's hand-written loop (`gan::hand`) on `RingGan`'s data, optimizers and epochs,
//! for `bench.sh`: it prints the final discriminator and generator losses.

use burn::optim::AdamConfig;
use gan::{Gan, RingGan};

fn main() {
    let config = RingGan::config();
    let adam = || AdamConfig::new().with_beta_1(0.5).init();
    let lr = |name: &str| config.optimizers[name].lr;
    let run = gan::hand::hand_loop(
        0..2048,
        config.epochs,
        (adam(), lr("discriminator")),
        (adam(), lr("generator")),
        1,
        Gan::discriminator_step,
        Gan::generator_step,
    );
    let last = |bits: &[u32]| f32::from_bits(*bits.last().expect("a step ran"));
    println!(
        "discriminator loss {:.4}, generator loss {:.4}",
        last(&run.first),
        last(&run.second)
    );
}
