//! The data a run trains on: its two splits and the batcher.

use std::sync::Arc;

use burn::data::dataset::Dataset;

use super::Augment;

/// Train and valid datasets of items `I`, and the batcher turning items into the model's inputs.
pub struct Data<I, B> {
    pub(crate) train: Arc<dyn Dataset<I>>,
    pub(crate) valid: Arc<dyn Dataset<I>>,
    pub(crate) batcher: B,
    pub(crate) augment: Option<Augment<I>>,
}

impl<I, B> Data<I, B> {
    /// Any two Burn datasets and a Burn batcher.
    pub fn new(
        train: impl Dataset<I> + 'static,
        valid: impl Dataset<I> + 'static,
        batcher: B,
    ) -> Self {
        Self {
            train: Arc::new(train),
            valid: Arc::new(valid),
            batcher,
            augment: None,
        }
    }

    /// Transforms every training item with `transform(item, rng)` before batching; `rng` is
    /// seeded from the run's shuffle seed (0 without one), the epoch and the item's position
    /// in it, so the draws are the same with any worker count and after any resume. The
    /// validation split is never augmented.
    pub fn with_augment(self, augment: Augment<I>) -> Self {
        Self {
            augment: Some(augment),
            ..self
        }
    }

    /// Datasets already behind shared handles.
    pub fn from_shared(train: Arc<dyn Dataset<I>>, valid: Arc<dyn Dataset<I>>, batcher: B) -> Self {
        Self {
            train,
            valid,
            batcher,
            augment: None,
        }
    }
}
