//! Mixed precision (`precision: bf16` or `f16`): each step's forward and backward passes in a
//! 16-bit float type, the weights the optimizer steps, its state and the checkpoints in f32.
//!
//! Burn has the 16-bit dtypes and a differentiable `cast`, but no autocast and no master
//! weights (Burn #5696), so the loop does it. Before each step the f32 weights are cast into a
//! copy whose parameters are leaves of their own, with the same ids; the batch's float tensors
//! were cast when it was built ([`CastFn`]); the step runs on the copy, and its gradients are
//! cast back to f32 for the optimizer. A 16-bit leaf receives exactly the gradient Burn's
//! differentiable cast would hand back to the f32 weight (its backward casts the gradient
//! to the input's type), so this is the textbook form; the copy's parameters are made leaves
//! because `TrainOutput::new` collects gradients from the module the step ran on, and Burn's
//! autodiff keeps none for the inner nodes a plain cast would make of them.
//!
//! With f16, whose smallest normal value is 6.1e-5, the loss is multiplied by a scale before
//! the backward pass and the gradients divided by it afterwards (PyTorch's `GradScaler`): a
//! step whose gradients overflowed is skipped and the scale halved; after
//! [`GROWTH_INTERVAL`](crate::checkpoint::loss_scale::GROWTH_INTERVAL) good steps it doubles. The scale is part of the checkpoint.

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{FloatDType, Tensor, TensorReadError};
use burn::train::{LearnerModel, TrainOutput, TrainStep};

use crate::checkpoint::loss_scale::LossScale;
use crate::config::precision::Precision;
use crate::erased::{AnyModule, ModelRef};
use crate::error::SettingError;
pub use crate::model::precision::{CastFn, backward};
use crate::model::precision::{cast_leaves, cast_weights, scaled};

/// A run's 16-bit precision: the type, and for f16 the loss scale.
#[derive(Debug)]
pub struct LowPrecision {
    precision: Precision,
    dtype: FloatDType,
    /// f16's loss scale; `None` for bf16, whose range is f32's.
    pub scale: Option<LossScale>,
}

impl LowPrecision {
    /// The low precision of `precision` (`None` for f32), continuing from `scale` on resume.
    pub fn new(precision: Precision, scale: Option<LossScale>) -> Option<Self> {
        let dtype = precision.low()?;
        Some(Self {
            precision,
            dtype,
            scale: (precision == Precision::F16).then(|| scale.unwrap_or_default()),
        })
    }

    /// One training step of `model` (f32) on `batch` (already cast) in the low precision: the
    /// step's output, and the gradients of the f32 weights, unscaled. An error for an f16 run
    /// whose `TrainStep` back-propagated without the loss scale.
    pub(super) fn step<M: LearnerModel>(
        &self,
        model: &M,
        batch: <M as TrainStep>::Input,
    ) -> Result<TrainOutput<<M as TrainStep>::Output>, SettingError> {
        let (grads, item) = self.run(model, |copy| {
            let output = TrainStep::step(copy, batch);
            (output.grads, output.item)
        })?;
        Ok(TrainOutput { grads, item })
    }

    /// `step` (a forward and backward pass giving the gradients of `model`'s parameters and
    /// an output) run on a 16-bit copy of `model` whose parameters keep their ids, the
    /// gradients handed back in f32 and unscaled: one step of a one-optimizer run, or one
    /// optimizer's step of a several-optimizer run.
    pub(super) fn run<M: LearnerModel, O>(
        &self,
        model: &M,
        step: impl FnOnce(&M) -> (GradientsParams, O),
    ) -> Result<(GradientsParams, O), SettingError> {
        let copy = cast_leaves(AnyModule::new(model.clone()), self.dtype).into_inner::<M>();
        let scale = self.scale.map(|s| s.scale);
        let (mut grads, item) = self
            .catching(|| scaled(scale, || step(&copy)))?
            .ok_or_else(|| SettingError {
                option: "precision",
                message:
                    "is f16, and the model's `TrainStep` back-propagated its loss without the \
                      run's loss scale, so small gradients would vanish: call \
                      `burn_experiment::fit::precision::backward(loss)` in it instead of \
                      `loss.backward()`"
                        .to_owned(),
            })?;
        ModelRef::new(model).visit(&mut ToF32 {
            grads: &mut grads,
            unscale: scale.map(|s| 1.0 / s),
        });
        Ok((grads, item))
    }

    /// `work` on this run's 16-bit model, with a mix of float types in it reported as the
    /// model's mistake rather than Burn's panic ([`super::mixed_types`]).
    pub(super) fn catching<T>(&self, work: impl FnOnce() -> T) -> Result<T, SettingError> {
        super::mixed_types::catching(self.precision.name(), work)
    }

    /// `model` (in inference mode) with its float weights in the low precision, for validation.
    pub(super) fn inference<M: LearnerModel>(&self, model: &M) -> M {
        cast_weights(AnyModule::new(model.clone()), self.dtype).into_inner::<M>()
    }

    /// For f16, whether `grads` of `model` are all finite (one host read), updating the scale:
    /// `false` means the optimizer step is skipped. bf16 steps always.
    pub(super) fn admits(
        &mut self,
        model: ModelRef<'_>,
        grads: &GradientsParams,
    ) -> Result<bool, TensorReadError> {
        let Some(scale) = &mut self.scale else {
            return Ok(true);
        };
        let finite = super::finite::non_finite_gradients(model, grads)? == 0;
        scale.update(finite);
        Ok(finite)
    }
}

/// Casts each parameter's gradient back to f32, unscaled by `unscale` (f16's 1 / scale).
struct ToF32<'a> {
    grads: &'a mut GradientsParams,
    unscale: Option<f32>,
}

impl ModuleVisitor for ToF32<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            let grad = grad.cast(FloatDType::F32);
            let grad = match self.unscale {
                Some(factor) => grad.mul_scalar(factor),
                None => grad,
            };
            self.grads.register(param.id, grad);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::loss_scale::{GROWTH_INTERVAL, INITIAL_SCALE};

    #[test]
    fn the_scale_halves_on_overflow_and_doubles_after_the_growth_interval() {
        let mut scale = LossScale::default();
        scale.update(false);
        assert_eq!(scale.scale, INITIAL_SCALE / 2.0);
        for _ in 0..GROWTH_INTERVAL - 1 {
            scale.update(true);
        }
        assert_eq!(scale.scale, INITIAL_SCALE / 2.0);
        assert_eq!(scale.good_steps, GROWTH_INTERVAL - 1);
        scale.update(true);
        assert_eq!(scale.scale, INITIAL_SCALE);
        assert_eq!(scale.good_steps, 0);
    }
}
