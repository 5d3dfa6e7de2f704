//! Batches built in a run's 16-bit precision: the batcher's float tensors cast as each batch is
//! built, so that with `workers` the cast runs ahead of the step, on the worker.

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::{Device, FloatDType};

/// How a batch's float tensors are cast to the run's 16-bit type (integer and boolean tensors
/// stay as they are): `CastFloats::cast_floats` for the batch type.
pub type CastFn<B> = fn(B, FloatDType) -> B;

/// `inner`, its batches cast to `dtype` by `cast`.
pub(crate) struct Casting<I, B> {
    pub inner: Arc<dyn Batcher<I, B>>,
    pub cast: CastFn<B>,
    pub dtype: FloatDType,
}

impl<I, B> Batcher<I, B> for Casting<I, B> {
    fn batch(&self, items: Vec<I>, device: &Device) -> B {
        (self.cast)(self.inner.batch(items, device), self.dtype)
    }
}

/// `batcher`, casting its batches where the run computes in 16 bits (`dtype`) and a `cast` is
/// given; as it is otherwise.
pub(crate) fn casting<I: 'static, B: 'static>(
    batcher: Arc<dyn Batcher<I, B>>,
    cast: Option<CastFn<B>>,
    dtype: Option<FloatDType>,
) -> Arc<dyn Batcher<I, B>> {
    match (cast, dtype) {
        (Some(cast), Some(dtype)) => Arc::new(Casting {
            inner: batcher,
            cast,
            dtype,
        }),
        _ => batcher,
    }
}
