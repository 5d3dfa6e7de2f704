//! Turning datasets into batches: epoch order and deterministic prefetching.

mod loader;
mod order;

pub use loader::{DataError, EpochBatches, Loader};
pub use order::epoch_seed;
