//! Training part of a model: parameter groups named by module path (`freeze`, learning-rate
//! `groups`) and LoRA adapters, all Burn's (`ParamGroup`, `apply_lora`); the module paths
//! checked against the model, with the error listing its parameters, are ours.

use burn::module::{Lora, Module, ParamGroup};

use crate::erased::{AnyModule, ModelRef};
use crate::error::FitError;
use crate::error::SettingError;

/// `model` with Burn's LoRA adapters on the 2-D weights under `spec.on` (the base frozen).
pub fn apply_lora<M: Module + 'static>(
    model: M,
    spec: &crate::config::spec::LoraSpec,
) -> Result<M, FitError> {
    lora(AnyModule::new(model), spec).map(AnyModule::into_inner)
}

fn lora(model: AnyModule, spec: &crate::config::spec::LoraSpec) -> Result<AnyModule, FitError> {
    if spec.rank == 0 || !(spec.alpha > 0.0 && spec.alpha.is_finite()) {
        return Err(FitError::Setting(SettingError {
            option: "lora",
            message: format!(
                "rank {} and alpha {}: the rank must be at least 1 and alpha positive",
                spec.rank, spec.alpha
            ),
        }));
    }
    // Burn adapts the 2-D weights of the group and freezes the rest: a path with none (a
    // norm's 1-D scale) would leave nothing to train, and the first step's backward would
    // panic in Burn's autodiff. Each path must hold a matrix.
    let matrices = crate::model::weights::matrices(ModelRef::of(&model));
    for path in &spec.on {
        let one = group(ModelRef::of(&model), "lora", std::slice::from_ref(path))?;
        if !matrices.iter().any(|(id, at)| one.matches(id, Some(at))) {
            let listed: Vec<&str> = matrices
                .iter()
                .map(|(_, at)| at.strip_prefix(WRAPPER).unwrap_or(at))
                .collect();
            return Err(FitError::Setting(SettingError {
                option: "lora",
                message: format!(
                    "`{}` holds no 2-D weight for an adapter (LoRA adapts matrices, such as a linear layer's weight); the model's are: {}",
                    path.strip_prefix(WRAPPER).unwrap_or(path),
                    listed.join(", ")
                ),
            }));
        }
    }
    let group = group(ModelRef::of(&model), "lora", &spec.on)?;
    Ok(model.apply_lora(Lora::new(spec.rank, spec.alpha).set_param_group(group)))
}

/// Burn's parameter groups of `groups`, whose paths are of `model`'s field `prefix`
/// (`model.` in `training!`, whose model wraps the user's).
pub fn lr_groups<M: Module + 'static>(
    model: &M,
    prefix: &str,
    groups: &[crate::config::spec::GroupLr],
) -> Result<Vec<(ParamGroup, f64)>, FitError> {
    lr_groups_of(ModelRef::new(model), prefix, groups)
}

fn lr_groups_of(
    model: ModelRef<'_>,
    prefix: &str,
    groups: &[crate::config::spec::GroupLr],
) -> Result<Vec<(ParamGroup, f64)>, FitError> {
    groups
        .iter()
        .map(|g| {
            Ok((
                group(model, "groups", &[format!("{prefix}{}", g.path)])?,
                g.lr,
            ))
        })
        .collect()
}

/// The wrapper `training!` puts around the user's model (`<Name>Model { model }`): its paths
/// from `training!` arrive with this prefix added.
const WRAPPER: &str = "model.";

/// The parameters under the module paths `paths` (a parameter, or every parameter of a
/// submodule), as Burn's `ParamGroup` of their exact paths; a path that names no parameter is
/// an error of `option` listing the model's parameters.
///
/// In a model wrapped by `training!` (every path under `model.`), a user who wrote the
/// wrapper's prefix too (`freeze: [model.fc1]`, arriving as `model.model.fc1`) means `fc1`
/// when that doubled path names nothing; and an error names paths as the user writes them.
pub(crate) fn group(
    model: ModelRef<'_>,
    option: &'static str,
    paths: &[String],
) -> Result<ParamGroup, FitError> {
    let all = crate::model::weights::parameter_paths(model);
    let wrapped = !all.is_empty() && all.iter().all(|p| p.starts_with(WRAPPER));
    let under = |path: &str| -> Vec<String> {
        let below = format!("{path}.");
        all.iter()
            .filter(|p| *p == path || p.starts_with(&below))
            .cloned()
            .collect()
    };
    let mut chosen = Vec::new();
    for path in paths {
        let mut matched = under(path);
        if matched.is_empty()
            && wrapped
            && let Some(inner) = path
                .strip_prefix(WRAPPER)
                .filter(|p| p.starts_with(WRAPPER))
        {
            matched = under(inner);
        }
        if matched.is_empty() {
            let shown = |p: &'_ str| -> String {
                match wrapped {
                    true => p.strip_prefix(WRAPPER).unwrap_or(p).to_owned(),
                    false => p.to_owned(),
                }
            };
            let listed: Vec<String> = all.iter().map(|p| shown(p)).collect();
            return Err(FitError::Setting(SettingError {
                option,
                message: format!(
                    "`{}` names no parameter of the model; its parameters are: {}",
                    shown(path),
                    listed.join(", ")
                ),
            }));
        }
        chosen.extend(matched);
    }
    Ok(ParamGroup::from_paths(chosen))
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::Device;

    use super::group;
    use crate::erased::ModelRef;

    #[derive(Module, Debug)]
    struct Mlp {
        fc1: Linear,
        fc2: Linear,
    }

    /// What `training!` trains: the user's model under the wrapper's `model` field.
    #[derive(Module, Debug)]
    struct Wrapped {
        model: Mlp,
    }

    fn wrapped() -> Wrapped {
        let device = Device::flex();
        Wrapped {
            model: Mlp {
                fc1: LinearConfig::new(2, 3).init(&device),
                fc2: LinearConfig::new(3, 1).init(&device),
            },
        }
    }

    fn json(group: burn::module::ParamGroup) -> serde_json::Value {
        serde_json::to_value(group).unwrap()
    }

    /// `freeze: [model.fc1]` arrives as `model.model.fc1`: the user means `fc1`, and an error
    /// names paths without the wrapper's prefix, as the user writes them.
    #[test]
    fn a_path_written_with_the_wrappers_prefix_names_the_same_parameters() {
        let model = wrapped();
        let model = ModelRef::new(&model);
        let plain = group(model, "freeze", &["model.fc1".into()]).unwrap();
        let prefixed = group(model, "freeze", &["model.model.fc1".into()]).unwrap();
        assert_eq!(json(prefixed), json(plain.clone()));
        assert_eq!(
            json(plain),
            json(burn::module::ParamGroup::from_paths(vec![
                "model.fc1.weight",
                "model.fc1.bias"
            ]))
        );
        let err = group(model, "freeze", &["model.fc3".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "`fc3` names no parameter of the model; its parameters are: fc1.weight, fc1.bias, fc2.weight, fc2.bias"
            ),
            "{err}"
        );
    }

    #[derive(Module, Debug)]
    struct Normed {
        fc1: Linear,
        norm: burn::nn::LayerNorm,
    }

    #[derive(Module, Debug)]
    struct WrappedNormed {
        model: Normed,
    }

    /// LoRA on a norm's 1-D scale would leave nothing to train (Burn's autodiff then panics at
    /// the first step): refused before the run, naming the matrices there are.
    #[test]
    fn lora_on_a_path_without_a_matrix_is_refused_at_start_up() {
        let device = Device::flex();
        let model = || WrappedNormed {
            model: Normed {
                fc1: LinearConfig::new(2, 3).init(&device),
                norm: burn::nn::LayerNormConfig::new(3).init(&device),
            },
        };
        let spec = |on: &str| crate::config::spec::LoraSpec {
            rank: 1,
            alpha: 1.0,
            on: vec![on.to_owned()],
        };
        let err = super::apply_lora(model(), &spec("model.norm"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`norm` holds no 2-D weight for an adapter")
                && err.contains("the model's are: fc1.weight"),
            "{err}"
        );
        assert!(super::apply_lora(model(), &spec("model.fc1")).is_ok());
    }
}
