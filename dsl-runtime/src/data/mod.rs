//! Turning datasets into batches: epoch order and deterministic prefetching.

mod augment;
mod cast;
mod ints;
mod loader;
mod order;
mod splits;

pub use augment::{Augment, AugmentFn, AugmentRng};
pub use cast::CastFn;
pub(crate) use cast::casting;
pub use ints::checked_ints;
pub(crate) use loader::Shard;
pub use loader::{DataError, EpochBatches, Loader};
pub use order::epoch_seed;
pub(crate) use order::splitmix64;
pub use splits::Data;
