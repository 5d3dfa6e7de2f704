//! The optimizer state of a data-parallel run, split by owner (ZeRO stage 1): each rank keeps
//! the state of the values it owns; rank 0 merges every rank's into the one record a
//! checkpoint holds, and a resume keeps each rank's part of it.
//!
//! Burn's `OptimizerRecord` keeps its entries private; they are read and written here through
//! its file format, burnpack, where every entry is keyed by its parameter's id: tensors carry
//! the id, scalars and metadata are named `{id}` or `{id}.{field}`. The state of a range of a
//! tensor ([`super::owners::Sharding::Ranges`]) is that range of each state tensor (an
//! elementwise optimizer's state has the parameter's shape), kept as `[1, …, 1, n]`; a merge
//! puts the ranges back one after the other, in rank order, in the parameter's shape. Its
//! scalars (the step count) are the same in every range.

use std::collections::BTreeMap;

use burn::optim::{ModuleOptimizer, OptimizerRecord};
use burn::tensor::Bytes;
use burn_pack::{Reader, Writer};

use super::ParallelError;
use super::owners::Owners;

/// `optimizer` with the state of the values `owners` gives this rank only.
pub(crate) fn keep_own(
    optimizer: ModuleOptimizer,
    owners: &Owners,
) -> Result<ModuleOptimizer, ParallelError> {
    let bytes = optimizer.into_bytes().map_err(state)?;
    let parts = Parts::read(bytes)?;
    let mut tensors = Vec::new();
    for tensor in parts.tensors {
        let Some((param, Some(piece))) = tensor.param_id.and_then(|id| owners.by_id(id)) else {
            continue;
        };
        if param.is_whole(piece) {
            tensors.push(tensor);
            continue;
        }
        let (name, dtype, shape, id, bytes) = tensor.into_parts().map_err(state)?;
        if shape.num_elements() != param.elements() {
            return Err(ParallelError::State(format!(
                "`{name}` has {} values where its parameter has {}: an optimizer whose state is not elementwise cannot be split by ranges",
                shape.num_elements(),
                param.elements()
            )));
        }
        let size = dtype.size();
        let range = &bytes[piece.range.start * size..piece.range.end * size];
        tensors.push(burn_pack::Tensor::new(
            name,
            dtype,
            piece.dims(param.dims.len()),
            id,
            Bytes::from_bytes_vec(range.to_vec()),
        ));
    }
    let own = Parts {
        tensors,
        scalars: keyed(parts.scalars, owners),
        metadata: keyed(parts.metadata, owners),
    };
    let record = OptimizerRecord::from_bytes(own.write()?).map_err(state)?;
    Ok(optimizer.load_record(record))
}

/// The records of every rank (burnpack bytes, in rank order) as one: the ranges of a split
/// parameter's state tensors joined in its shape.
pub(crate) fn merge(records: &[&[u8]], owners: &Owners) -> Result<Bytes, ParallelError> {
    let mut all = Parts::default();
    // The ranges of each split parameter's state tensors, by tensor name, as they arrive.
    let mut ranges: BTreeMap<String, Joined> = BTreeMap::new();
    for record in records {
        let part = Parts::read(Bytes::from_bytes_vec(record.to_vec()))?;
        for tensor in part.tensors {
            let split = tensor
                .param_id
                .and_then(|id| owners.by_id(id))
                .map(|(param, _)| param)
                .filter(|param| param.pieces.len() > 1);
            let Some(param) = split else {
                all.tensors.push(tensor);
                continue;
            };
            let (name, dtype, _, _, bytes) = tensor.into_parts().map_err(state)?;
            ranges
                .entry(name)
                .or_insert_with(|| Joined {
                    id: param.id,
                    dims: param.dims.clone(),
                    dtype,
                    bytes: Vec::new(),
                })
                .bytes
                .extend_from_slice(&bytes);
        }
        all.scalars.extend(part.scalars);
        all.metadata.extend(part.metadata);
    }
    for (name, joined) in ranges {
        let needed = joined.dims.iter().product::<usize>() * joined.dtype.size();
        if joined.bytes.len() != needed {
            return Err(ParallelError::State(format!(
                "the ranks' ranges of `{name}` hold {} bytes, where its parameter needs {needed}",
                joined.bytes.len(),
            )));
        }
        all.tensors.push(burn_pack::Tensor::new(
            name,
            joined.dtype,
            joined.dims,
            Some(joined.id),
            Bytes::from_bytes_vec(joined.bytes),
        ));
    }
    all.write()
}

/// A split parameter's state tensor, put together from its ranges.
struct Joined {
    id: u64,
    dims: Vec<usize>,
    dtype: burn::tensor::DType,
    bytes: Vec<u8>,
}

/// A rank's state to send: its record's bytes.
pub(crate) fn own_bytes(optimizer: &ModuleOptimizer) -> Result<Vec<u8>, ParallelError> {
    Ok(optimizer.into_bytes().map_err(state)?.to_vec())
}

/// The entries of a burnpack record.
#[derive(Default)]
struct Parts {
    tensors: Vec<burn_pack::Tensor>,
    scalars: BTreeMap<String, burn_pack::Scalar>,
    metadata: BTreeMap<String, String>,
}

impl Parts {
    fn read(bytes: Bytes) -> Result<Self, ParallelError> {
        let reader = Reader::from_bytes(bytes).map_err(state)?;
        let scalars = reader.scalars().clone();
        let metadata = reader.metadata().clone();
        let tensors = reader.into_tensors().map_err(state)?;
        Ok(Self {
            tensors,
            scalars,
            metadata,
        })
    }

    fn write(self) -> Result<Bytes, ParallelError> {
        let mut writer = Writer::new(self.tensors);
        for (key, value) in &self.scalars {
            writer = writer.with_scalar(key, *value);
        }
        for (key, value) in &self.metadata {
            writer = writer.with_metadata(key, value);
        }
        writer.into_bytes().map_err(state)
    }
}

/// The entries named `{id}` or `{id}.{field}` of the parameters this rank owns values of, and
/// any entry of no parameter (Burn 0.22 writes none; one would be every rank's).
fn keyed<V>(entries: BTreeMap<String, V>, owners: &Owners) -> BTreeMap<String, V> {
    entries
        .into_iter()
        .filter(|(key, _)| {
            let id = key.split('.').next().unwrap_or_default();
            id.parse().map_or(true, |id| {
                owners.by_id(id).is_some_and(|(_, p)| p.is_some())
            })
        })
        .collect()
}

fn state(error: impl std::fmt::Display) -> ParallelError {
    ParallelError::State(error.to_string())
}

#[cfg(test)]
mod tests {
    use burn::nn::{Linear, LinearConfig};
    use burn::optim::{AdamConfig, GradientsParams};
    use burn::tensor::{Device, Tensor};

    use super::*;
    use crate::erased::ModelRef;
    use crate::parallel::Sharding;

    /// Every entry of a record: tensors by name with their bytes, then the names of the
    /// scalars and of the metadata.
    type Entries = (Vec<(String, Vec<u8>)>, Vec<String>, Vec<String>);

    fn entries(bytes: Bytes) -> Entries {
        let parts = Parts::read(bytes).unwrap();
        let mut tensors: Vec<_> = parts
            .tensors
            .into_iter()
            .map(|t| {
                let (name, _, _, _, bytes) = t.into_parts().unwrap();
                (name, bytes.to_vec())
            })
            .collect();
        tensors.sort();
        let scalars = parts.scalars.keys().cloned().collect();
        let metadata = parts.metadata.keys().cloned().collect();
        (tensors, scalars, metadata)
    }

    #[test]
    fn each_rank_keeps_its_parameters_state_and_the_parts_merge_to_the_whole() {
        let device = Device::flex().autodiff();
        let model: Linear = LinearConfig::new(3, 2).init(&device);
        let mut optimizer = AdamConfig::new().init();
        let x = Tensor::<2>::ones([4, 3], &device);
        let loss = model.forward(x).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let model = optimizer.step(0.1, model, grads);
        let whole = optimizer.into_bytes().unwrap();
        // Two ranks: the weight (6 values) and the bias (2) have different owners.
        let owners = |rank| Owners::of(ModelRef::new(&model), 2, rank, Sharding::Tensors);
        assert_ne!(owners(0).share().0, 0);
        assert_ne!(owners(1).share().0, 0);
        let parts: Vec<Vec<u8>> = (0..2)
            .map(|rank| {
                let reloaded = AdamConfig::new().init().from_bytes(whole.clone()).unwrap();
                own_bytes(&keep_own(reloaded, &owners(rank)).unwrap()).unwrap()
            })
            .collect();
        let (one, other) = (
            entries(Bytes::from_bytes_vec(parts[0].clone())),
            entries(Bytes::from_bytes_vec(parts[1].clone())),
        );
        assert!(!one.0.is_empty() && !other.0.is_empty());
        assert!(one.0.iter().all(|t| !other.0.contains(t)), "disjoint");
        let merged = merge(&[&parts[0], &parts[1]], &owners(0)).unwrap();
        assert_eq!(entries(merged), entries(whole));
    }
}
