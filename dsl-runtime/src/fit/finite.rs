//! Whether a model's weights are still numbers: the check that stops a diverged run even when
//! its loss is not recorded (a recorded `train.loss` names the step itself).

use burn::module::{ModuleVisitor, Param};
use burn::tensor::{Int, Tensor, TensorReadError};

use crate::erased::ModelRef;

/// How many weights of `model` are NaN or infinite; one host read.
pub(super) fn non_finite_weights(model: ModelRef<'_>) -> Result<i64, TensorReadError> {
    let mut count = Count { total: None };
    model.visit(&mut count);
    match count.total {
        Some(total) => {
            crate::metric::reads::count();
            total.try_into_scalar::<i64>()
        }
        None => Ok(0),
    }
}

struct Count {
    total: Option<Tensor<1, Int>>,
}

impl ModuleVisitor for Count {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let bad = param.val().is_finite().bool_not().int().sum();
        self.total = Some(match self.total.take() {
            Some(total) => total + bad,
            None => bad,
        });
    }
}
