//! The random numbers a training step draws (dropout, noise layers): before each batch's step
//! the device's generator is seeded from the run's seed, the epoch and the batch's position in
//! the epoch, the way augmentation seeds each item.
//!
//! Burn's backends draw from one generator per backend, whose state no checkpoint holds and
//! which every rank of a data-parallel run keeps apart: without this, a resumed run drew other
//! masks than an uninterrupted one, and `mpirun -n 2` other masks than one process
//! accumulating two batches. With a stream per batch, batch `k` of epoch `e` draws the same
//! numbers wherever and whenever it is trained.
//!
//! Only for a run with a `seed` (or a data-parallel run, with seed 0 when none is given): the
//! generator is the process's, and seeding it before every step would also reseed the draws
//! of anything else the process does meanwhile (another thread building a model), which a run
//! without a seed has no reason to touch.

use burn::tensor::Device;

use crate::data::splitmix64;

/// Where and from what a run's steps draw.
#[derive(Clone, Debug)]
pub(crate) struct Draws {
    /// The training device, whose generator the step draws from.
    device: Device,
    seed: u64,
}

impl Draws {
    /// The draws of a run with `seed` on `device`; `None` (the generator left alone) for a
    /// run without one, unless it is `data_parallel` (seed 0).
    pub fn new(device: &Device, seed: Option<u64>, data_parallel: bool) -> Option<Self> {
        let seed = seed.or(data_parallel.then_some(0))?;
        Some(Self {
            device: device.clone(),
            seed,
        })
    }

    /// Seeds the device for the step of batch `batch` (1-based) of `epoch`.
    pub fn before_step(&self, epoch: usize, batch: usize) {
        self.device.seed(step_seed(self.seed, epoch, batch));
    }
}

/// The seed of batch `batch` of `epoch`: SplitMix64 over the three, in another order than
/// augmentation's per-item seeds so that the two streams differ for the same numbers.
fn step_seed(seed: u64, epoch: usize, batch: usize) -> u64 {
    splitmix64(splitmix64(seed ^ splitmix64(batch as u64)) ^ epoch as u64)
}

#[cfg(test)]
mod tests {
    use super::step_seed;

    #[test]
    fn each_batch_of_each_epoch_has_its_own_seed() {
        let mut seen = std::collections::HashSet::new();
        for epoch in 1..=20 {
            for batch in 1..=50 {
                assert!(seen.insert(step_seed(7, epoch, batch)));
            }
        }
        assert_eq!(step_seed(7, 3, 4), step_seed(7, 3, 4));
        assert_ne!(step_seed(7, 3, 4), step_seed(8, 3, 4));
        assert_ne!(step_seed(7, 3, 4), step_seed(7, 4, 3));
    }
}
