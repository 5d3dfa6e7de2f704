//! Burn's balanced gradient checkpointing for a model built elsewhere.
//!
//! Burn takes the strategy from the device a tensor is created on, and moving a model to the
//! checkpointing device keeps its parameters' own strategy (devices compare equal whatever
//! their strategy), so the parameters are given the device's strategy here.

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{GradientCheckpointingStrategy, Tensor};

use crate::erased::AnyModule;

/// `model` with every float parameter on Burn's balanced checkpointing strategy.
pub(super) fn recompute_activations(model: AnyModule) -> AnyModule {
    model.map(&mut Balanced)
}

struct Balanced;

impl ModuleMapper for Balanced {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        param.map(|tensor| {
            tensor.with_gradient_checkpointing_strategy(GradientCheckpointingStrategy::Balanced)
        })
    }
}
