//! The order in which an epoch visits a dataset.
//!
//! Burn's `BatchDataLoader` keeps one RNG for the loader's whole life and forks it on
//! `to_device`/`slice`, so its shuffle order depends on how the loader was moved around. Here the
//! order of an epoch is a pure function of `(seed, epoch)`: a run resumed at epoch 5 sees exactly the
//! batches an uninterrupted run saw, whatever the worker count or device.

use burn::data::dataset::transform::{RngSource, shuffled_indices};
use rand::rngs::StdRng;

/// The RNG seed Burn's shuffle uses for `epoch` (1-based) of a run shuffled with `seed`.
///
/// Exposed so a hand-written loop can reproduce our order with Burn's own
/// `ShuffledDataset::new(dataset, epoch_seed(seed, epoch))`.
pub fn epoch_seed(seed: u64, epoch: usize) -> u64 {
    splitmix64(seed ^ splitmix64(epoch as u64))
}

/// One step of SplitMix64: decorrelates neighbouring seeds, so epochs 1 and 2 of seed 7 do not
/// yield related permutations.
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The dataset indices of one epoch of a dataset of `len` items, in the order it visits them;
/// batches are consecutive runs of `batch_size` with the short one last, as in Burn's
/// `BatchDataLoader`.
///
/// Memory: one `usize` per item for the epoch (800 MB for 100 M items), built by Burn's own
/// shuffle so that a hand-written loop with `ShuffledDataset` reproduces the order exactly; a
/// permutation computed on the fly would need no memory but would differ from Burn's. Burn's
/// function of the length, not its `SelectionDataset`, which would ask the items to be `Clone`.
pub(crate) fn epoch_order(len: usize, shuffle: Option<u64>, epoch: usize) -> Vec<usize> {
    match shuffle {
        // What `SelectionDataset::new_shuffled` does, seeded per epoch.
        Some(seed) => {
            let mut rng: StdRng = RngSource::from(epoch_seed(seed, epoch)).into();
            shuffled_indices(len, &mut rng)
        }
        None => (0..len).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::data::dataset::transform::ShuffledDataset;
    use burn::data::dataset::{Dataset, InMemDataset};

    #[test]
    fn without_a_seed_the_order_is_the_datasets() {
        assert_eq!(epoch_order(5, None, 3), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn shuffle_is_a_function_of_seed_and_epoch() {
        let a1 = epoch_order(50, Some(3), 1);
        assert_eq!(a1, epoch_order(50, Some(3), 1));
        assert_ne!(a1, epoch_order(50, Some(3), 2));
        assert_ne!(a1, epoch_order(50, Some(4), 1));
        let mut seen = a1;
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn the_order_is_burns_shuffled_dataset_of_the_epoch_seed() {
        let items: Vec<usize> = (0..50).collect();
        let burn = ShuffledDataset::new(InMemDataset::new(items), epoch_seed(3, 2));
        let burn: Vec<usize> = (0..burn.len()).map(|i| burn.get(i).unwrap()).collect();
        assert_eq!(epoch_order(50, Some(3), 2), burn);
    }
}
