//! A model's weights in files: exported as safetensors for other tools, read back from
//! safetensors or burnpack (`init_from`). Through burn-store's stores and Burn's records; the
//! choice of store by file extension, the matching by path and the error wording are ours.

use std::collections::BTreeMap;
use std::path::Path;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::store::burn_pack::{Reader, Tensor as PackTensor, Writer};
use burn::store::{ModuleRecord, ModuleStore, SafetensorsStore};
use burn::tensor::{Bool, BoolStore, Bytes, DType, Int, Tensor};
use safetensors::Dtype;
use safetensors::tensor::TensorView;

use crate::erased::{AnyModule, ModelRef};
use crate::error::FitError;
use crate::output::atomic::replace_file;

/// Saves `model`'s parameters as a safetensors file under their module paths
/// (`model.fc1.weight`, ...), with burn-store's metadata; any safetensors reader (Python's
/// `safetensors`, PyTorch, Burn's `SafetensorsStore`) loads it. Encoded in memory, then written
/// with the run directory's atomic `replace_file`: a crash leaves the old file or the new one.
/// Taken from Burn's record (see [`load_weights`]) and written by [`safetensors_bytes`].
pub fn export_safetensors<M: Module + 'static>(model: &M, path: &Path) -> Result<(), FitError> {
    export(AnyModule::new(model.clone()), path)
}

/// [`export_safetensors`] with the float weights cast to `low` (`Precision::low`): `None`, the
/// f32 weights as trained, or a 16-bit copy for inference in that type (`--export` of a
/// `precision: bf16` experiment, or `--precision`).
pub fn export_safetensors_as<M: Module + 'static>(
    model: &M,
    path: &Path,
    low: Option<burn::tensor::FloatDType>,
) -> Result<(), FitError> {
    let model = AnyModule::new(model.clone());
    match low {
        Some(dtype) => export(crate::model::precision::cast_weights(model, dtype), path),
        None => export(model, path),
    }
}

fn export(model: AnyModule, path: &Path) -> Result<(), FitError> {
    let failed = |message: String| FitError::Weights {
        path: path.to_owned(),
        message,
    };
    let record = model
        .record()
        .into_bytes()
        .map_err(|e| failed(e.to_string()))?;
    let bytes = safetensors_bytes(record).map_err(failed)?;
    replace_file(path, &bytes).map_err(|e| failed(e.to_string()))
}

/// A record's tensors (burnpack bytes) as a safetensors file.
fn safetensors_bytes(record: Bytes) -> Result<Vec<u8>, String> {
    let tensors = Reader::from_bytes(record)
        .and_then(Reader::into_tensors)
        .map_err(|e| e.to_string())?;
    let mut parts = Vec::with_capacity(tensors.len());
    for tensor in tensors {
        let name = tensor.name.clone();
        let dtype = safetensors_dtype(tensor.dtype).ok_or_else(|| {
            format!(
                "`{name}` is {:?}, which safetensors cannot hold",
                tensor.dtype
            )
        })?;
        let shape = tensor.shape.as_slice().to_vec();
        let bytes = tensor.into_bytes().map_err(|e| e.to_string())?;
        parts.push((name, dtype, shape, bytes));
    }
    let views = parts
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(*dtype, shape.clone(), bytes)
                .map(|view| (name.as_str(), view))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    let metadata = SafetensorsStore::default_metadata().into_iter().collect();
    let bytes = safetensors::serialize(views, Some(metadata)).map_err(|e| e.to_string())?;
    Ok(with_sorted_metadata(bytes))
}

/// `file` with the keys of its header's `__metadata__` in sorted order. The safetensors crate
/// takes the metadata as a `HashMap`, whose order changes from process to process, so two
/// exports of the same weights differed in their bytes. The header is compact JSON padded to
/// its recorded length, so the same entries in another order fit the same bytes.
fn with_sorted_metadata(mut file: Vec<u8>) -> Vec<u8> {
    let Some(len) = file
        .get(..8)
        .and_then(|n| usize::try_from(u64::from_le_bytes(n.try_into().ok()?)).ok())
    else {
        return file;
    };
    let Some(header) = file.get(8..8 + len) else {
        return file;
    };
    let Ok(serde_json::Value::Object(mut entries)) = serde_json::from_slice(header) else {
        return file;
    };
    if let Some(serde_json::Value::Object(metadata)) = entries.get_mut("__metadata__") {
        metadata.sort_keys();
    }
    let Ok(sorted) = serde_json::to_vec(&entries) else {
        return file;
    };
    if sorted.len() <= len {
        file[8..8 + sorted.len()].copy_from_slice(&sorted);
        file[8 + sorted.len()..8 + len].fill(b' ');
    }
    file
}

/// Burn's dtypes in safetensors, as burn-store maps them.
fn safetensors_dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::F64 => Dtype::F64,
        DType::F32 | DType::Flex32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I64 => Dtype::I64,
        DType::I32 => Dtype::I32,
        DType::I16 => Dtype::I16,
        DType::I8 => Dtype::I8,
        DType::U64 => Dtype::U64,
        DType::U32 | DType::Bool(BoolStore::U32) => Dtype::U32,
        DType::U8 | DType::Bool(BoolStore::U8) => Dtype::U8,
        DType::Bool(BoolStore::Native) => Dtype::BOOL,
        DType::U16 | DType::QFloat(_) => return None,
    })
}

/// `model` with every parameter read from `path`: a safetensors file (`.safetensors`, as
/// [`export_safetensors`] writes it) or a burnpack file (a run's `checkpoint/model-N.bpk`).
/// The first parameter of another shape, or missing from the file, is the error; each keeps its
/// parameter id (learning-rate groups are keyed by it) and the model's dtype.
///
/// Through Burn's `ModuleRecord`, the path checkpoints take, on the erased model: compiled
/// once in this crate (`crate::erased`).
pub fn load_weights<M: Module + 'static>(model: M, path: &Path) -> Result<M, FitError> {
    load(AnyModule::new(model), path).map(AnyModule::into_inner)
}

fn load(model: AnyModule, path: &Path) -> Result<AnyModule, FitError> {
    let failed = |message: String| FitError::Weights {
        path: path.to_owned(),
        message,
    };
    if !path.is_file() {
        return Err(failed(
            "no such file: give a .safetensors file or a run's checkpoint/model-N.bpk".to_owned(),
        ));
    }
    // In the model's order (the record's is by name): the first error named is the first
    // parameter the model has.
    let order = parameter_paths(ModelRef::of(&model));
    let own = model
        .clone()
        .record()
        .into_bytes()
        .map_err(|e| failed(e.to_string()))?;
    let record = record_from_file(path, own, &order).map_err(failed)?;
    model.load(record).map_err(|e| failed(e.to_string()))
}

/// The tensors of the weights file `path`, matched by module path to the model's own (`own`,
/// its record as burnpack bytes; `order`, their paths in the model's order), as a record
/// carrying the model's parameter ids, loaded in the model's dtypes.
fn record_from_file(path: &Path, own: Bytes, order: &[String]) -> Result<ModuleRecord, String> {
    let mut file: BTreeMap<String, PackTensor> =
        if path.extension().is_some_and(|e| e == "safetensors") {
            let mut store = SafetensorsStore::from_file(path);
            store.get_all_tensors().map_err(|e| e.to_string())?.clone()
        } else {
            Reader::from_file(path)
                .and_then(Reader::into_tensors)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|t| (t.name.clone(), t))
                .collect()
        };
    let mut own: BTreeMap<String, PackTensor> = Reader::from_bytes(own)
        .and_then(Reader::into_tensors)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect();
    let (mut matched, mut mismatched, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for name in order {
        let Some(tensor) = own.remove(name) else {
            continue;
        };
        let name = name.clone();
        let (expected, id) = (tensor.shape.clone(), tensor.param_id);
        match file.remove(&name) {
            None => missing.push(name),
            Some(found) if found.shape != expected => {
                mismatched.push((name, found.shape.clone(), expected));
            }
            Some(found) => {
                let (_, dtype, shape, _, bytes) = found.into_parts().map_err(|e| e.to_string())?;
                matched.push(PackTensor::new(name, dtype, shape, id, bytes));
            }
        }
    }
    if let Some((name, found, expected)) = mismatched.first() {
        let others = match mismatched.len() {
            1 => String::new(),
            n => format!(" ({} more parameters differ)", n - 1),
        };
        return Err(format!(
            "`{name}` has shape {:?} in the file, and {:?} in the model{others}: the file holds the weights of another model (or of other hyperparameters)",
            found.as_slice(),
            expected.as_slice()
        ));
    }
    if let Some(name) = missing.first() {
        return Err(format!(
            "it has no value for `{name}` ({} parameter(s) missing)",
            missing.len()
        ));
    }
    let bytes = Writer::new(matched)
        .into_bytes()
        .map_err(|e| e.to_string())?;
    Ok(ModuleRecord::from_bytes(bytes)
        .map_err(|e| e.to_string())?
        .cast_to_module_dtype())
}

/// The module path of every parameter of `model` (`model.fc1.weight`, ...), in the model's
/// order.
pub(crate) fn parameter_paths(model: ModelRef<'_>) -> Vec<String> {
    parameters(model)
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

/// Every parameter of `model` with its path, in the model's order.
pub(crate) fn parameters(model: ModelRef<'_>) -> Vec<(ParamId, String)> {
    let mut paths = Paths::default();
    model.visit(&mut paths);
    paths.found
}

/// The float parameters of `model` that are matrices (2-D), with their paths: what LoRA
/// adapts.
pub(crate) fn matrices(model: ModelRef<'_>) -> Vec<(ParamId, String)> {
    let mut paths = Paths::default();
    model.visit(&mut paths);
    paths.matrices
}

/// The parameters a visit meets, with their paths; written here because burn-store's
/// collector, which gives the paths too, snapshots every tensor.
#[derive(Default)]
struct Paths {
    at: Vec<String>,
    found: Vec<(ParamId, String)>,
    /// The 2-D float parameters among them.
    matrices: Vec<(ParamId, String)>,
}

impl Paths {
    fn found(&mut self, id: ParamId) {
        self.found.push((id, self.at.join(".")));
    }
}

impl ModuleVisitor for Paths {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.at.push(name.to_owned());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.at.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.found(param.id);
        if D == 2 {
            self.matrices.push((param.id, self.at.join(".")));
        }
    }

    fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<D, Int>>) {
        self.found(param.id);
    }

    fn visit_bool<const D: usize>(&mut self, param: &Param<Tensor<D, Bool>>) {
        self.found(param.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_is_written_in_sorted_order_whatever_the_map_s_order() {
        let weights = [1.0f32, 2.0, 3.0];
        let bytes: Vec<u8> = weights.iter().flat_map(|w| w.to_le_bytes()).collect();
        let view = TensorView::new(Dtype::F32, vec![3], &bytes).unwrap();
        let metadata: std::collections::HashMap<String, String> =
            ["producer", "format", "a", "version", "zeta"]
                .into_iter()
                .map(|key| (key.to_owned(), format!("value of {key}")))
                .collect();
        let file = safetensors::serialize([("w", view)], Some(metadata)).unwrap();
        let sorted = with_sorted_metadata(file.clone());
        assert_eq!(sorted.len(), file.len());
        let read = safetensors::SafeTensors::read_metadata(&sorted).unwrap().1;
        let keys: Vec<&String> = read.metadata().as_ref().unwrap().keys().collect();
        assert_eq!(keys.len(), 5);
        let header = String::from_utf8_lossy(&sorted[8..sorted.len() - bytes.len()]);
        let at = |key: &str| header.find(&format!("\"{key}\":\"value")).unwrap();
        assert!(at("a") < at("format") && at("format") < at("producer"));
        assert!(at("producer") < at("version") && at("version") < at("zeta"));
        let tensors = safetensors::SafeTensors::deserialize(&sorted).unwrap();
        assert_eq!(tensors.tensor("w").unwrap().data(), &bytes[..]);
    }
}
