//! Turning datasets into batches: epoch order and deterministic prefetching.

mod augment;
mod loader;
mod order;

pub use augment::{Augment, AugmentFn, AugmentRng};
pub use loader::{DataError, EpochBatches, Loader};
pub use order::epoch_seed;
