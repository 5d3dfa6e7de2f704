//! A model's weights in files: exported as safetensors for other tools, read back from
//! safetensors or burnpack (`init_from`). All through burn-store; only the choice of store by
//! file extension and the error wording are ours.

use std::path::Path;

use burn::module::Module;
use burn::store::{ApplyError, ApplyResult, BurnpackStore, ModuleSnapshot, SafetensorsStore};

use crate::FitError;
use crate::output::atomic::replace_file;

/// Saves `model`'s parameters as a safetensors file under their module paths
/// (`model.fc1.weight`, ...); any safetensors reader (Python's `safetensors`, PyTorch, Burn's
/// `SafetensorsStore`) loads it. Encoded in memory, then written with the run directory's
/// atomic `replace_file`: a crash leaves the old file or the new one.
pub fn export_safetensors<M: Module>(model: &M, path: &Path) -> Result<(), FitError> {
    let failed = |message: String| FitError::Weights {
        path: path.to_owned(),
        message,
    };
    let mut store = SafetensorsStore::from_bytes(None);
    model
        .save_into(&mut store)
        .map_err(|e| failed(e.to_string()))?;
    let bytes = store.get_bytes().map_err(|e| failed(e.to_string()))?;
    replace_file(path, &bytes).map_err(|e| failed(e.to_string()))
}

/// `model` with every parameter read from `path`: a safetensors file (`.safetensors`, as
/// [`export_safetensors`] writes it) or a burnpack file (a run's `checkpoint/model-N.bpk`).
/// The first parameter of another shape or type, or missing from the file, is the error.
pub fn load_weights<M: Module>(mut model: M, path: &Path) -> Result<M, FitError> {
    let failed = |message: String| FitError::Weights {
        path: path.to_owned(),
        message,
    };
    if !path.is_file() {
        return Err(failed(
            "no such file: give a .safetensors file or a run's checkpoint/model-N.bpk".to_owned(),
        ));
    }
    let safetensors = path.extension().is_some_and(|e| e == "safetensors");
    // The stores' own validation reports every mismatch in Burn's debug format; without it the
    // mismatches come back in the result, and `check` names the first one in words.
    let applied = if safetensors {
        let mut store = SafetensorsStore::from_file(path).validate(false);
        model.load_from(&mut store).map_err(|e| e.to_string())
    } else {
        let mut store = BurnpackStore::from_file(path)
            .auto_extension(false)
            .validate(false);
        model.load_from(&mut store).map_err(|e| e.to_string())
    };
    check(&applied.map_err(failed)?).map_err(failed)?;
    Ok(model)
}

/// The first problem of a load: a parameter of another shape or type, then one the file lacks.
fn check(applied: &ApplyResult) -> Result<(), String> {
    if let Some(error) = applied.errors.first() {
        let others = match applied.errors.len() {
            1 => String::new(),
            n => format!(" ({} more parameters differ)", n - 1),
        };
        return Err(match error {
            ApplyError::ShapeMismatch {
                path,
                expected,
                found,
            } => format!(
                "`{path}` has shape {:?} in the file, and {:?} in the model{others}: the file holds the weights of another model (or of other hyperparameters)",
                found.as_slice(),
                expected.as_slice()
            ),
            other => format!("{other}{others}"),
        });
    }
    if let Some((path, _)) = applied.missing.first() {
        return Err(format!(
            "it has no value for `{path}` ({} parameter(s) missing)",
            applied.missing.len()
        ));
    }
    Ok(())
}

/// The module path of every parameter of `model` (`model.fc1.weight`, ...).
pub fn parameter_paths<M: Module>(model: &M) -> Vec<String> {
    model
        .collect(None, None, false)
        .into_iter()
        .map(|tensor| tensor.name)
        .collect()
}
