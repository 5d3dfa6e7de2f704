//! Gradient clipping by one global norm.
//!
//! Burn's `GradientClipping::Norm` rescales each parameter's gradient by that tensor's own norm,
//! which changes the direction of the update. The usual meaning of clip-by-norm (PyTorch's
//! `clip_grad_norm_`) takes the L2 norm over all parameters together and scales every gradient
//! by the same factor; Burn does not offer it, so it is written here.

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData, TensorReadError};

use crate::erased::ModelRef;
use crate::error::FitError;
use crate::history::Split;
use crate::parallel::step::Parallel;

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
    let norm = norm_of(total)?;
    if norm > max_norm {
        scale(model, grads, max_norm / norm);
    }
    Ok(norm)
}

/// [`clip_global_norm`] on a rank of a data-parallel run, whose `grads` are those of the
/// parameters it owns: each owner sends the squared norm of each of its gradients to every
/// rank, and every rank adds them up in the model's order, with the tensor additions one
/// process makes, so the norm and the clipped gradients have the one-process bits. The owners
/// are of whole tensors: a norm over ranges would add in another order
/// ([`crate::parallel::Sharding`]).
pub(super) fn clip_sharded<O>(
    model: ModelRef<'_>,
    grads: &mut GradientsParams,
    max_norm: f64,
    parallel: &mut Parallel<O>,
) -> Result<f64, FitError> {
    let mut own = OwnSquares {
        grads,
        mine: |index| parallel.owners().mine(index).is_some(),
        index: 0,
        squares: Vec::new(),
    };
    model.visit(&mut own);
    let squares = own.squares;
    let all = parallel.all_gather_tensors(&squares)?;
    let mut from: Vec<_> = all.into_iter().map(Vec::into_iter).collect();
    let device = parallel.device().clone();
    let mut total: Option<Tensor<1>> = None;
    for index in 0..parallel.owners().len() {
        let owner = parallel.owners().owner(index);
        let Some(Some(square)) = from[owner].next() else {
            continue;
        };
        let dtype = square.dtype();
        let square = Tensor::<1>::from_data(square, (&device, dtype));
        total = Some(match total {
            Some(total) => total + square,
            None => square,
        });
    }
    let Some(total) = total else {
        return Ok(0.0);
    };
    let norm = norm_of(total).map_err(clip_error)?;
    if norm > max_norm {
        scale(model, grads, max_norm / norm);
    }
    Ok(norm)
}

/// A failed read of the norm, as the run's error.
pub(super) fn clip_error(source: TensorReadError) -> FitError {
    FitError::Metric {
        split: Split::Train,
        metric: "grad_clip".to_owned(),
        source,
    }
}

/// The squared norm of each gradient of the parameters this rank owns, in visiting order.
struct OwnSquares<'a, F> {
    grads: &'a GradientsParams,
    mine: F,
    index: usize,
    squares: Vec<Option<TensorData>>,
}

impl<F: Fn(usize) -> bool> ModuleVisitor for OwnSquares<'_, F> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if (self.mine)(self.index) {
            let square = self.grads.get::<D>(param.id);
            self.squares
                .push(square.map(|grad| grad.square().sum().into_data()));
        }
        self.index += 1;
    }
}

/// The norm whose square is `total`, the sum of every gradient's squares.
fn norm_of(total: Tensor<1>) -> Result<f64, TensorReadError> {
    crate::metric::reads::count();
    Ok(f64::from(total.try_into_scalar::<f32>()?).sqrt())
}

/// Multiplies every gradient in `grads` by `factor`: the second pass of clipping.
fn scale(model: ModelRef<'_>, grads: &mut GradientsParams, factor: f64) {
    let mut pass = GlobalNorm {
        grads,
        total: None,
        factor: Some(factor),
    };
    model.visit(&mut pass);
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
