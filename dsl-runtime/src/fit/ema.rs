//! An exponential moving average of the model's parameters (`ema: decay`).
//!
//! Written here because Burn 0.22 has none (tracel-ai/burn#5402). After every optimizer step
//! each trained parameter's average becomes `average * decay + weight * (1 - decay)`, in the
//! parameter's own precision; parameters that do not require a gradient (frozen ones) keep
//! their value. The average starts from the weights the run starts from, lives on the
//! non-autodiff device, and is what validation, `best(..)`, `load_best` and export see.

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::store::ModuleRecord;
use burn::tensor::Tensor;

use crate::erased::{AnyModule, ModelRef};

/// The average and its decay.
pub(crate) struct Ema<M> {
    decay: f64,
    average: M,
}

impl<M: Module + 'static> Ema<M> {
    /// An average starting at `model`'s weights.
    pub fn new(model: &M, decay: f64) -> Self {
        Self {
            decay,
            average: model.valid(),
        }
    }

    /// An average continued from a checkpoint's `record` of it.
    pub fn restored(model: &M, decay: f64, record: ModuleRecord) -> Result<Self, String> {
        let average = AnyModule::new(model.valid())
            .load(record)
            .map_err(|e| e.to_string())?
            .into_inner();
        Ok(Self { decay, average })
    }

    /// Folds `model`'s weights after an optimizer step into the average.
    pub fn update(&mut self, model: &M) {
        let average = AnyModule::new(self.average.clone());
        self.average = blend(average, ModelRef::new(model), self.decay).into_inner();
    }

    /// The averaged model, in inference mode.
    pub fn average(&self) -> &M {
        &self.average
    }

    /// The averaged model, owned.
    pub fn into_average(self) -> M {
        self.average
    }
}

/// `average` moved towards `model`'s trained weights.
fn blend(average: AnyModule, model: ModelRef<'_>, decay: f64) -> AnyModule {
    let mut trained = Trained::default();
    model.visit(&mut trained);
    let mut blend = Blend {
        decay,
        weights: trained.weights,
    };
    average.map(&mut blend)
}

/// The value of every trained float parameter (one that requires a gradient: frozen ones
/// keep their average), flattened and off the autodiff graph, by id: one pass over the
/// training model per step.
#[derive(Default)]
struct Trained {
    weights: HashMap<ParamId, Tensor<1>>,
}

impl ModuleVisitor for Trained {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let weight = param.val();
        if !weight.is_require_grad() {
            return;
        }
        let len = weight.shape().num_elements();
        self.weights
            .insert(param.id, weight.without_autodiff().reshape([len]));
    }
}

/// `average * decay + weight * (1 - decay)` for every parameter with a new weight.
struct Blend {
    decay: f64,
    weights: HashMap<ParamId, Tensor<1>>,
}

impl ModuleMapper for Blend {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(weight) = self.weights.remove(&param.id) else {
            return param;
        };
        let decay = self.decay;
        param.map(|average| {
            let weight = weight.reshape(average.shape());
            average.mul_scalar(decay) + weight.mul_scalar(1.0 - decay)
        })
    }
}
