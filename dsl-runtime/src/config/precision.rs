//! `precision`: the float type a run computes its forward and backward passes in.

use burn::tensor::{Device, FloatDType};
use serde::{Deserialize, Serialize};

use crate::error::SettingError;

/// The float type of a run's forward and backward passes. The weights the optimizer steps,
/// its state, the checkpoints and exported weights stay f32 whatever the precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in f32.
    #[default]
    F32,
    /// bfloat16 compute: f32's range with 8 bits of mantissa, so no loss scaling.
    Bf16,
    /// IEEE half compute with dynamic loss scaling: small gradients would underflow f16's range.
    F16,
}

impl Precision {
    /// The 16-bit type computed in; `None` for f32.
    pub fn low(self) -> Option<FloatDType> {
        match self {
            Precision::F32 => None,
            Precision::Bf16 => Some(FloatDType::BF16),
            Precision::F16 => Some(FloatDType::F16),
        }
    }

    /// Whether the options leave it at its default, which `config.json` does not write.
    pub fn is_f32(&self) -> bool {
        *self == Precision::F32
    }

    /// The precision's name as the key and the command line spell it.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// Refuses a 16-bit type `device` cannot compute in: Burn reports bf16 on many Vulkan
    /// drivers as storable but without arithmetic, where computing gives garbage.
    pub fn check(self, device: &Device) -> Result<(), SettingError> {
        match self.low() {
            Some(dtype) if !device.supports_dtype(dtype) => {
                let others: Vec<&str> = [Precision::Bf16, Precision::F16]
                    .into_iter()
                    .filter(|p| *p != self && p.low().is_some_and(|d| device.supports_dtype(d)))
                    .map(Precision::name)
                    .chain(["f32"])
                    .collect();
                Err(SettingError {
                    option: "precision",
                    message: format!(
                        "is {}, which the device {device:?} cannot compute in; use {}",
                        self.name(),
                        others.join(" or ")
                    ),
                })
            }
            _ => Ok(()),
        }
    }
}

/// Good steps in a row after which the f16 loss scale doubles (PyTorch's default).
pub const GROWTH_INTERVAL: u32 = 2000;

/// The f16 loss scale at a run's start: 2^15, not PyTorch's 2^16, because here the loss itself
/// is usually an f16 value, and the gradient of the loss with respect to itself is the scale,
/// which must be an f16 number (the largest is 65504).
pub const INITIAL_SCALE: f32 = 32768.0;

/// The dynamic loss scale of an f16 run, as its checkpoints save it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossScale {
    /// What the loss is multiplied by before the backward pass: a power of two, so that
    /// scaling and unscaling change no gradient's bits beyond what f16 rounds.
    pub scale: f32,
    /// Good steps since the scale last changed.
    pub good_steps: u32,
}

impl Default for LossScale {
    fn default() -> Self {
        Self {
            scale: INITIAL_SCALE,
            good_steps: 0,
        }
    }
}

impl LossScale {
    /// After an optimizer step whose gradients were all finite (`finite`), or one skipped
    /// because some were not.
    pub fn update(&mut self, finite: bool) {
        if finite {
            self.good_steps += 1;
            if self.good_steps == GROWTH_INTERVAL {
                self.scale *= 2.0;
                self.good_steps = 0;
            }
        } else {
            self.scale *= 0.5;
            self.good_steps = 0;
        }
    }
}
