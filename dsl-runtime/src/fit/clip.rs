//! Gradient clipping by one global norm.
//!
//! Burn's `GradientClipping::Norm` rescales each parameter's gradient by that tensor's own norm,
//! which changes the direction of the update. The usual meaning of clip-by-norm (PyTorch's
//! `clip_grad_norm_`) takes the L2 norm over all parameters together and scales every gradient
//! by the same factor; Burn does not offer it, so it is written here.

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorReadError};

use crate::erased::ModelRef;

/// Scales `grads` so that their global L2 norm is at most `max_norm`; returns the norm before
/// clipping. Costs one host read per call.
pub(super) fn clip_global_norm(
    model: ModelRef<'_>,
    grads: &mut GradientsParams,
    max_norm: f64,
) -> Result<f64, TensorReadError> {
    let mut pass = GlobalNorm {
        grads,
        total: None,
        factor: None,
    };
    model.visit(&mut pass);
    let Some(total) = pass.total.take() else {
        return Ok(0.0);
    };
    let norm = f64::from(total.try_into_scalar::<f32>()?).sqrt();
    if norm > max_norm {
        pass.factor = Some(max_norm / norm);
        model.visit(&mut pass);
    }
    Ok(norm)
}

/// Both passes over the parameters, summing squares and then (with `factor` set) scaling.
struct GlobalNorm<'a> {
    grads: &'a mut GradientsParams,
    total: Option<Tensor<1>>,
    factor: Option<f64>,
}

impl ModuleVisitor for GlobalNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        match self.factor {
            None => {
                if let Some(grad) = self.grads.get::<D>(param.id) {
                    let square = grad.square().sum();
                    self.total = Some(match self.total.take() {
                        Some(total) => total + square,
                        None => square,
                    });
                }
            }
            Some(factor) => {
                if let Some(grad) = self.grads.remove::<D>(param.id) {
                    self.grads.register(param.id, grad.mul_scalar(factor));
                }
            }
        }
    }
}
