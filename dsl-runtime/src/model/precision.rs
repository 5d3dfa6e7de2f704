//! The parts of mixed precision the model layer needs (`fit::precision` has the loop's): the
//! batch casts, the loss scale a step back-propagates with, and the weights' cast.

use std::cell::Cell;

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{FloatDType, Gradients, Tensor};

pub use crate::data::CastFn;
use crate::erased::AnyModule;

thread_local! {
    /// The scale the loss of the step running on this thread is multiplied by before its
    /// backward pass, and whether the step took it. Burn's `TrainStep::step(&self, batch)`
    /// has no room for it, so the step's [`backward`] reads it here.
    static SCALE: Cell<(Option<f32>, bool)> = const { Cell::new((None, false)) };
}

/// The loss's gradients, `loss.backward()` in the run's loss scale: a `TrainStep` of your own
/// calls it in place of `loss.backward()` to train in f16 (in f32 and bf16 it is exactly
/// `loss.backward()`). `training!`'s steps call it.
pub fn backward(loss: Tensor<1>) -> Gradients {
    let (scale, _) = SCALE.with(Cell::get);
    match scale {
        Some(scale) => {
            SCALE.with(|s| s.set((Some(scale), true)));
            loss.cast(FloatDType::F32).mul_scalar(scale).backward()
        }
        None => loss.backward(),
    }
}

/// `step` with the loss scaled by `scale` in its backward pass; `None` when a scale was given
/// and the step back-propagated without it.
pub(crate) fn scaled<T>(scale: Option<f32>, step: impl FnOnce() -> T) -> Option<T> {
    SCALE.with(|s| s.set((scale, false)));
    let out = step();
    let (_, taken) = SCALE.with(|s| s.replace((None, false)));
    (scale.is_none() || taken).then_some(out)
}

/// `model` with every float weight cast to `dtype`.
pub(crate) fn cast_weights(model: AnyModule, dtype: FloatDType) -> AnyModule {
    model.map(&mut Cast {
        dtype,
        leaves: false,
    })
}

/// `model` with every float weight cast to `dtype` as a leaf of its own (same id) that requires
/// a gradient where the f32 weight did: the copy a 16-bit step runs on (`fit::precision` says
/// why leaves).
pub(crate) fn cast_leaves(model: AnyModule, dtype: FloatDType) -> AnyModule {
    model.map(&mut Cast {
        dtype,
        leaves: true,
    })
}

/// Casts every float parameter to `dtype`; with `leaves`, each cast is a leaf of its own.
struct Cast {
    dtype: FloatDType,
    leaves: bool,
}

impl ModuleMapper for Cast {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (dtype, leaves) = (self.dtype, self.leaves);
        param.map(|tensor| {
            if !leaves {
                return tensor.cast(dtype);
            }
            let grad = tensor.is_require_grad();
            tensor.cast(dtype).detach().set_require_grad(grad)
        })
    }
}
