//! Random per-item transforms of the training split that a run can reproduce.
//!
//! A batcher gets no seed, epoch or position, so randomness drawn inside it (or from a shared
//! RNG) depends on which worker built which batch and on where a resumed run started. Here each
//! item gets its own RNG, seeded from `(seed, epoch, position of the item in the epoch)`: the
//! same item at the same place of the same epoch gets the same draws, with any number of
//! workers and after any resume. Validation and test batches are never augmented.

use std::sync::Arc;

use rand::SeedableRng;

use super::order::splitmix64;

/// The RNG an augmentation draws from (re-exported as `burn_experiment::rand`).
pub type AugmentRng = rand::rngs::StdRng;

/// A transform of one training item: `|item, rng| -> item`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot augment the training items",
    label = "`augment` takes a function `|item, rng| -> item`",
    note = "write `augment: |item: Item, rng: &mut burn_experiment::rand::rngs::StdRng| -> Item {{ .. }}`, taking and returning the items the batcher takes"
)]
pub trait AugmentFn<I>: Fn(I, &mut AugmentRng) -> I + Send + Sync + 'static {
    /// The transform as the loader takes it; called by `training!` at the user's expression,
    /// so a wrong function is reported there alone.
    fn into_augment(self) -> Augment<I>
    where
        Self: Sized,
    {
        Augment(Arc::new(self))
    }
}

// Not recommended in errors: the note says what to write.
#[diagnostic::do_not_recommend]
impl<I, F: Fn(I, &mut AugmentRng) -> I + Send + Sync + 'static> AugmentFn<I> for F {}

/// A transform of one item, shared by the loader's workers.
type Transform<I> = dyn Fn(I, &mut AugmentRng) -> I + Send + Sync;

/// A training-split augmentation, shared by the loader's workers.
pub struct Augment<I>(Arc<Transform<I>>);

impl<I> Clone for Augment<I> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<I> Augment<I> {
    /// Wraps `transform`.
    pub fn new(transform: impl AugmentFn<I>) -> Self {
        transform.into_augment()
    }

    /// `item` transformed with the RNG of `position` in `epoch` of a run seeded with `seed`.
    pub(crate) fn apply(&self, item: I, seed: u64, epoch: usize, position: usize) -> I {
        let key = splitmix64(seed ^ splitmix64(epoch as u64 ^ splitmix64(position as u64)));
        (self.0)(item, &mut AugmentRng::seed_from_u64(key))
    }
}

#[cfg(test)]
mod tests {
    use rand::RngExt;

    use super::*;

    #[test]
    fn an_items_draws_depend_on_seed_epoch_and_position_only() {
        let augment =
            Augment::new(|x: u64, rng: &mut AugmentRng| x + rng.random_range(0..1_000_000));
        let draw = |seed, epoch, position| augment.apply(0, seed, epoch, position);
        assert_eq!(draw(7, 1, 3), draw(7, 1, 3));
        let others = [draw(8, 1, 3), draw(7, 2, 3), draw(7, 1, 4)];
        assert!(others.iter().all(|&o| o != draw(7, 1, 3)), "{others:?}");
    }
}
