//! Whether a model's weights, or an f16 step's gradients, are still numbers: the check that
//! stops a diverged run even when its loss is not recorded (a recorded `train.loss` names the
//! step itself), and the one that skips an f16 step whose gradients overflowed.

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor, TensorReadError};

use crate::erased::ModelRef;

/// How many weights of `model` are NaN or infinite; one host read.
pub(super) fn non_finite_weights(model: ModelRef<'_>) -> Result<i64, TensorReadError> {
    count(model, None)
}

/// How many values of `grads`, the gradients of `model`'s parameters, are NaN or infinite;
/// one host read.
pub(super) fn non_finite_gradients(
    model: ModelRef<'_>,
    grads: &GradientsParams,
) -> Result<i64, TensorReadError> {
    count(model, Some(grads))
}

fn count(model: ModelRef<'_>, grads: Option<&GradientsParams>) -> Result<i64, TensorReadError> {
    let mut count = Count { grads, total: None };
    model.visit(&mut count);
    match count.total {
        Some(total) => {
            crate::metric::reads::count();
            total.try_into_scalar::<i64>()
        }
        None => Ok(0),
    }
}

/// Sums, on the device, the non-finite values of each parameter (or of its gradient, with
/// `grads`), so that the whole count costs one read.
struct Count<'a> {
    grads: Option<&'a GradientsParams>,
    total: Option<Tensor<1, Int>>,
}

impl ModuleVisitor for Count<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let values = match self.grads {
            None => param.val(),
            Some(grads) => match grads.get::<D>(param.id) {
                Some(grad) => grad,
                None => return,
            },
        };
        let bad = values.is_finite().bool_not().int().sum();
        self.total = Some(match self.total.take() {
            Some(total) => total + bad,
            None => bad,
        });
    }
}
