//! An exponential moving average of the model's parameters (`ema: decay`).
//!
//! Written here because Burn 0.22 has none (tracel-ai/burn#5402). After every optimizer step
//! each trained parameter's average becomes `average * decay + weight * (1 - decay)`, in the
//! parameter's own precision; parameters that do not require a gradient (frozen ones) keep
//! their value. The average starts from the weights the run starts from, lives on the
//! non-autodiff device, and is what validation, `best(..)`, `load_best` and export see.
//! `ema: decay on [paths]` averages those parameters only (a GAN's generator); the others
//! follow the trained weights, so the averaged model pairs the average with the rest as trained.

use std::collections::{HashMap, HashSet};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::store::ModuleRecord;
use burn::tensor::Tensor;

use crate::erased::{AnyModule, ModelRef};

/// The average and its decay.
pub(crate) struct Ema<M> {
    decay: f64,
    average: M,
    /// The parameters averaged; `None`: every one.
    only: Option<HashSet<ParamId>>,
}

impl<M: Module + 'static> Ema<M> {
    /// An average starting at `model`'s weights.
    pub fn new(model: &M, decay: f64) -> Self {
        Self {
            decay,
            average: model.valid(),
            only: None,
        }
    }

    /// The average of the parameters `only` alone.
    pub fn only(self, only: Option<HashSet<ParamId>>) -> Self {
        Self { only, ..self }
    }

    /// An average continued from a checkpoint's `record` of it.
    pub fn restored(model: &M, decay: f64, record: ModuleRecord) -> Result<Self, String> {
        let average = AnyModule::new(model.valid())
            .load(record)
            .map_err(|e| e.to_string())?
            .into_inner();
        Ok(Self {
            decay,
            average,
            only: None,
        })
    }

    /// Folds `model`'s weights after an optimizer step into the average.
    pub fn update(&mut self, model: &M) {
        let average = AnyModule::new(self.average.clone());
        let only = self.only.as_ref();
        self.average = blend(average, ModelRef::new(model), self.decay, only).into_inner();
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

/// `average` moved towards `model`'s trained weights; outside `only`, set to them.
fn blend(
    average: AnyModule,
    model: ModelRef<'_>,
    decay: f64,
    only: Option<&HashSet<ParamId>>,
) -> AnyModule {
    let mut trained = Trained::default();
    model.visit(&mut trained);
    let mut blend = Blend {
        decay,
        weights: trained.weights,
        only,
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

/// `average * decay + weight * (1 - decay)` for every parameter with a new weight, or the
/// weight itself for one outside `only`.
struct Blend<'a> {
    decay: f64,
    weights: HashMap<ParamId, Tensor<1>>,
    only: Option<&'a HashSet<ParamId>>,
}

impl ModuleMapper for Blend<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(weight) = self.weights.remove(&param.id) else {
            return param;
        };
        let (decay, averaged) = (self.decay, self.only.is_none_or(|o| o.contains(&param.id)));
        param.map(|average| {
            let weight = weight.reshape(average.shape());
            if averaged {
                average.mul_scalar(decay) + weight.mul_scalar(1.0 - decay)
            } else {
                weight
            }
        })
    }
}
