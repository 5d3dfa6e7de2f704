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
    pub fn check(self, device: &Device, spelled: Option<&str>) -> Result<(), SettingError> {
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
                        "is {}, which the device {} cannot compute in; use {}",
                        self.name(),
                        crate::config::device::named(device, spelled),
                        others.join(" or ")
                    ),
                })
            }
            _ => Ok(()),
        }
    }
}
