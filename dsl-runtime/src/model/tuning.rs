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

/// The parameters under the module paths `paths` (a parameter, or every parameter of a
/// submodule), as Burn's `ParamGroup` of their exact paths; a path that names no parameter is
/// an error of `option` listing the model's parameters.
pub(crate) fn group(
    model: ModelRef<'_>,
    option: &'static str,
    paths: &[String],
) -> Result<ParamGroup, FitError> {
    let all = crate::model::weights::parameter_paths(model);
    let mut chosen = Vec::new();
    for path in paths {
        let under = format!("{path}.");
        let matched: Vec<&String> = all
            .iter()
            .filter(|p| *p == path || p.starts_with(&under))
            .collect();
        if matched.is_empty() {
            return Err(FitError::Setting(SettingError {
                option,
                message: format!(
                    "`{path}` names no parameter of the model; its parameters are: {}",
                    all.join(", ")
                ),
            }));
        }
        chosen.extend(matched.into_iter().cloned());
    }
    Ok(ParamGroup::from_paths(chosen))
}
