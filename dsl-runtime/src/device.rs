//! The device a run trains on, named by a string (`--device`, the `device:` key) so that one
//! binary serves every backend it was built with.
//!
//! Burn 0.22 models have no backend parameter: a `Device` names its backend at run time, and
//! each backend is compiled in by a cargo feature. This module maps names to Burn's device
//! constructors, and a name whose backend was not compiled in to an error naming the feature.

use burn::tensor::Device;

use crate::FitError;

/// The spellings [`parse`] accepts, for messages.
pub const SPELLINGS: &str =
    "`flex`, `cpu`, `ndarray`, `cuda`, `cuda:N`, `wgpu`, `wgpu:N` (the N-th discrete GPU)";

/// A device name split into its backend and an optional index (`cuda:1` → `("cuda", Some(1))`),
/// or why it is not one. `training!` checks a `device:` key's spelling by the same rules at
/// compile time (`dsl-macros/src/validate.rs`); whether its backend was built in is known only
/// here.
pub fn split(spec: &str) -> Result<(&str, Option<usize>), String> {
    let (backend, index) = match spec.split_once(':') {
        Some((backend, index)) => match index.parse::<usize>() {
            Ok(index) => (backend, Some(index)),
            Err(_) => {
                return Err(format!(
                    "`{spec}`: the part after `:` must be a device index (0, 1, ...)"
                ));
            }
        },
        None => (spec, None),
    };
    match (backend, index) {
        ("cuda" | "wgpu", _) | ("flex" | "cpu" | "ndarray", None) => Ok((backend, index)),
        ("flex" | "cpu" | "ndarray", Some(_)) => Err(format!(
            "`{spec}`: the `{backend}` backend has one device; write `{backend}`"
        )),
        _ => Err(format!(
            "unknown device `{spec}`; the devices are {SPELLINGS}"
        )),
    }
}

/// The device `spec` names. A backend this binary was built without is an error naming the
/// cargo feature that adds it.
pub fn parse(spec: &str) -> Result<Device, FitError> {
    let invalid = |message: String| FitError::InvalidOption {
        option: "device",
        message,
    };
    let (backend, index) = split(spec).map_err(invalid)?;
    let missing = |feature: &str| {
        invalid(format!(
            "`{spec}` needs Burn's `{feature}` backend, which this binary was built without: \
             enable the `{feature}` feature of `dsl-runtime` (in Cargo.toml: \
             `dsl-runtime = {{ version = \"..\", features = [\"{feature}\"] }}`) and rebuild"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_backend_and_index() {
        assert_eq!(split("flex"), Ok(("flex", None)));
        assert_eq!(split("cuda"), Ok(("cuda", None)));
        assert_eq!(split("cuda:1"), Ok(("cuda", Some(1))));
        assert_eq!(split("wgpu:0"), Ok(("wgpu", Some(0))));
        assert!(split("cuda:x").unwrap_err().contains("device index"));
        assert!(split("flex:1").unwrap_err().contains("has one device"));
        assert!(split("tpu").unwrap_err().contains("unknown device `tpu`"));
    }

    #[test]
    fn flex_is_always_there() {
        assert_eq!(parse("flex").unwrap(), Device::flex());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_backend_left_out_names_its_feature() {
        let err = parse("cuda:0").unwrap_err().to_string();
        assert!(
            err.contains("`cuda` feature of `dsl-runtime`") && err.contains("`cuda:0`"),
            "{err}"
        );
    }
}
