//! The optimizer state of a data-parallel run, split by owner (ZeRO stage 1): each rank keeps
//! the state of the parameters it owns; rank 0 merges every rank's into the one record a
//! checkpoint holds, and a resume keeps each rank's part of it.
//!
//! Burn's `OptimizerRecord` keeps its entries private; they are read and written here through
//! its file format, burnpack, where every entry is keyed by its parameter's id: tensors carry
//! the id, scalars and metadata are named `{id}` or `{id}.{field}`.

use std::collections::BTreeMap;

use burn::optim::{ModuleOptimizer, OptimizerRecord};
use burn::tensor::Bytes;
use burn_pack::{Reader, Writer};

use super::ParallelError;
use super::owners::Owners;

/// `optimizer` with the state of the parameters `owners` gives this rank only.
pub(crate) fn keep_own(
    optimizer: ModuleOptimizer,
    owners: &Owners,
) -> Result<ModuleOptimizer, ParallelError> {
    let bytes = optimizer.into_bytes().map_err(state)?;
    let parts = Parts::read(bytes)?;
    let own = Parts {
        tensors: parts
            .tensors
            .into_iter()
            .filter(|t| t.param_id.is_some_and(|id| owners.owns_id(id)))
            .collect(),
        scalars: keyed(parts.scalars, owners),
        metadata: keyed(parts.metadata, owners),
    };
    let record = OptimizerRecord::from_bytes(own.write()?).map_err(state)?;
    Ok(optimizer.load_record(record))
}

/// The records of every rank (burnpack bytes) as one.
pub(crate) fn merge(records: &[&[u8]]) -> Result<Bytes, ParallelError> {
    let mut all = Parts::default();
    for record in records {
        let part = Parts::read(Bytes::from_bytes_vec(record.to_vec()))?;
        all.tensors.extend(part.tensors);
        all.scalars.extend(part.scalars);
        all.metadata.extend(part.metadata);
    }
    all.write()
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

/// The entries named `{id}` or `{id}.{field}` of the parameters this rank owns, and any entry
/// of no parameter (Burn 0.22 writes none; one would be every rank's).
fn keyed<V>(entries: BTreeMap<String, V>, owners: &Owners) -> BTreeMap<String, V> {
    entries
        .into_iter()
        .filter(|(key, _)| {
            let id = key.split('.').next().unwrap_or_default();
            id.parse().map_or(true, |id| owners.owns_id(id))
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
        let owners = |rank| Owners::of(ModelRef::new(&model), 2, rank);
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
        let merged = merge(&[&parts[0], &parts[1]]).unwrap();
        assert_eq!(entries(merged), entries(whole));
    }
}
