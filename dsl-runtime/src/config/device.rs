//! The device a run trains on, named by a string (`--device`, the `device:` key) so that one
//! binary serves every backend it was built with.
//!
//! Burn 0.22 models have no backend parameter: a `Device` names its backend at run time, and
//! each backend is compiled in by a cargo feature. This module maps names to Burn's device
//! constructors, and a name whose backend was not compiled in to an error naming the feature.

use burn::tensor::Device;

use crate::error::FitError;
use crate::error::SettingError;

pub use burn_experiment_vocabulary::device::{SPELLINGS, split};

/// The device `spec` names. A backend this binary was built without is an error naming the
/// cargo feature that adds it.
pub fn parse(spec: &str) -> Result<Device, FitError> {
    let invalid = |message: String| {
        FitError::Setting(SettingError {
            option: "device",
            message,
        })
    };
    let (backend, index) = split(spec)
        .map_err(|message| invalid(format!("{message}; the devices are {SPELLINGS}")))?;
    let missing = |feature: &str| {
        invalid(format!(
            "`{spec}` needs Burn's `{feature}` backend, which this binary was built without: \
             enable the `{feature}` feature of `burn-experiment` (in Cargo.toml: \
             `burn-experiment = {{ version = \"..\", features = [\"{feature}\"] }}`) and rebuild"
        ))
    };
    match backend {
        "flex" => Ok(Device::flex()),
        "cpu" => {
            #[cfg(feature = "cpu")]
            return Ok(Device::cpu());
            #[cfg(not(feature = "cpu"))]
            Err(missing("cpu"))
        }
        "ndarray" => {
            #[cfg(feature = "ndarray")]
            #[allow(deprecated)]
            // Burn deprecates ndarray for flex; it is still one of its backends
            return Ok(Device::ndarray());
            #[cfg(not(feature = "ndarray"))]
            Err(missing("ndarray"))
        }
        "cuda" => {
            #[cfg(feature = "cuda")]
            return Ok(Device::cuda(
                index.map_or(burn::tensor::DeviceIndex::Default, Into::into),
            ));
            #[cfg(not(feature = "cuda"))]
            {
                let _ = index;
                Err(missing("cuda"))
            }
        }
        _ => {
            #[cfg(feature = "wgpu")]
            return Ok(Device::wgpu(match index {
                Some(n) => burn::tensor::DeviceKind::DiscreteGpu(n),
                None => burn::tensor::DeviceKind::DefaultDevice,
            }));
            #[cfg(not(feature = "wgpu"))]
            {
                let _ = index;
                Err(missing("wgpu"))
            }
        }
    }
}

/// `device` as messages name it: as the user spelled it (`--device`, the `device:` key) when
/// they did, else by its backend (`flex`, `wgpu`): Burn's `Debug` of a device
/// (`Device<Cube(Wgpu(WgpuDevice { .. }))>`) names types, not anything the user wrote.
pub fn named(device: &Device, spelled: Option<&str>) -> String {
    if let Some(spelled) = spelled {
        return format!("`{spelled}`");
    }
    let debug = format!("{device:?}").to_lowercase();
    let backend = [
        "cuda", "rocm", "metal", "vulkan", "wgpu", "ndarray", "libtorch", "flex", "cpu",
    ]
    .into_iter()
    .find(|backend| debug.contains(backend));
    match backend {
        Some(backend) => format!("`{backend}`"),
        None => format!("{device:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_named_as_written_else_by_its_backend() {
        assert_eq!(named(&Device::flex(), Some("cuda:1")), "`cuda:1`");
        assert_eq!(named(&Device::flex(), None), "`flex`");
    }

    #[test]
    fn flex_is_always_there() {
        assert_eq!(parse("flex").unwrap(), Device::flex());
        let err = parse("tpu").unwrap_err().to_string();
        assert!(
            err.contains("unknown device `tpu`; the devices are `flex`"),
            "{err}"
        );
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_backend_left_out_names_its_feature() {
        let err = parse("cuda:0").unwrap_err().to_string();
        assert!(
            err.contains("`cuda` feature of `burn-experiment`") && err.contains("`cuda:0`"),
            "{err}"
        );
    }
}
