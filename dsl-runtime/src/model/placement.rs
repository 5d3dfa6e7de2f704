//! Where a run's model draws its initial weights: on the CPU, then moved to the run's device.
//!
//! Each Burn backend has a random generator of its own, so one `seed` gave other initial weights
//! on wgpu or CUDA than on the CPU, and a run on a GPU could not be compared with a run on the
//! CPU. PyTorch builds a module on the CPU and then moves it (`model.to("cuda")`), so that
//! `torch.manual_seed` means the same weights on every device; `training!` does the same: the
//! model expression sees Burn's `flex` device, its parameters are drawn there and then forked to
//! the run's device. On `flex` itself nothing moves, so CPU runs are unchanged. The cost is one
//! copy of the weights at start-up, as in PyTorch.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::erased::{AnyModule, ModelRef};

/// The device a run's model expression builds on: Burn's CPU backend, `flex`, with gradients
/// when `device` (the run's device) has them.
pub fn init_device(device: &Device) -> Device {
    let flex = Device::flex();
    if device.is_autodiff() {
        flex.autodiff()
    } else {
        flex
    }
}

/// Seeds the run's device and, when it is another device, the one the model is drawn on:
/// `seed` then fixes the initial weights and the random numbers drawn during training.
pub fn seed_devices(device: &Device, seed: u64) {
    device.seed(seed);
    let flex = Device::flex();
    if device.clone().inner() != flex {
        flex.seed(seed);
    }
}

/// `model`, built on [`init_device`], on `device`. Burn's parameters are lazy, and a lazy one
/// moved to another device would draw its values there: each is drawn on the CPU first, in the
/// model's own order, then the whole model is forked (it keeps its gradient settings).
pub fn to_run_device<M: Module + 'static>(model: M, device: &Device) -> M {
    if init_device(device) == *device {
        return model;
    }
    draw(ModelRef::new(&model));
    AnyModule::new(model).fork(device).into_inner()
}

/// Initializes `model`'s lazy parameters where they were built, in the model's order. The fit
/// loop does it before the first step, whose random numbers are seeded per batch
/// (`fit/draws.rs`): a parameter left lazy would otherwise be drawn from that batch's stream
/// instead of the generator `seed` set.
pub(crate) fn draw(model: ModelRef<'_>) {
    model.visit(&mut Draw);
}

/// Reads every parameter, which initializes the lazy ones where they were built.
struct Draw;

impl ModuleVisitor for Draw {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }

    fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<D, Int>>) {
        let _ = param.val();
    }

    fn visit_bool<const D: usize>(&mut self, param: &Param<Tensor<D, Bool>>) {
        let _ = param.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::{Linear, LinearConfig};

    #[test]
    fn on_flex_the_model_stays_as_built() {
        let device = Device::flex().autodiff();
        assert_eq!(init_device(&device), device);
        assert_eq!(init_device(&Device::flex()), Device::flex());
        device.seed(3);
        let built: Linear = LinearConfig::new(2, 3).init(&device);
        let placed = to_run_device(built.clone(), &device);
        assert_eq!(
            placed.weight.val().into_data(),
            built.weight.val().into_data()
        );
        assert_eq!(placed.devices(), [device]);
    }
}
