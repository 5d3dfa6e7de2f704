//! The order in which an epoch visits a dataset.
//!
//! Burn's `BatchDataLoader` keeps one RNG for the loader's whole life and forks it on
//! `to_device`/`slice`, so its shuffle order depends on how the loader was moved around. Here the
//! order of an epoch is a pure function of `(seed, epoch)`: a run resumed at epoch 5 sees exactly the
//! batches an uninterrupted run saw, whatever the worker count or device.

use std::sync::Arc;

use burn::data::dataset::Dataset;
use burn::data::dataset::transform::SelectionDataset;

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

/// Dataset indices for one epoch, cut into batches of `batch_size` with the short batch last,
/// as Burn's `BatchDataLoader` does.
pub(crate) fn epoch_batches<I>(
    dataset: &Arc<dyn Dataset<I>>,
    batch_size: usize,
    shuffle: Option<u64>,
    epoch: usize,
) -> Vec<Vec<usize>>
where
    I: Clone + Send + Sync + 'static,
{
    let indices = match shuffle {
        // Burn's shuffle (`SelectionDataset::new_shuffled`), seeded per epoch.
        Some(seed) => {
            SelectionDataset::<Arc<dyn Dataset<I>>, I>::new_shuffled(
                dataset.clone(),
                epoch_seed(seed, epoch),
            )
            .indices
        }
        None => (0..dataset.len()).collect(),
    };
    indices.chunks(batch_size).map(<[usize]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::data::dataset::InMemDataset;

    fn dataset(n: usize) -> Arc<dyn Dataset<usize>> {
        Arc::new(InMemDataset::new((0..n).collect()))
    }

    #[test]
    fn short_batch_comes_last() {
        let sizes: Vec<usize> = epoch_batches(&dataset(200), 32, None, 1)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, [32, 32, 32, 32, 32, 32, 8]);
    }

    #[test]
    fn shuffle_is_a_function_of_seed_and_epoch() {
        let ds = dataset(50);
        let a1 = epoch_batches(&ds, 7, Some(3), 1);
        assert_eq!(a1, epoch_batches(&ds, 7, Some(3), 1));
        assert_ne!(a1, epoch_batches(&ds, 7, Some(3), 2));
        assert_ne!(a1, epoch_batches(&ds, 7, Some(4), 1));
        let mut seen: Vec<usize> = a1.concat();
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
    }
}
