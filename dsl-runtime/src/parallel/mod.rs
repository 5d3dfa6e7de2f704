//! Data-parallel training over the processes of one job (`data_parallel: mpi`).
//!
//! Burn 0.22 trains on the devices of one machine and has no multi-node training; the engine
//! every cluster runs for that is MPI, so the processes `mpirun` (or `srun`) starts, the ranks,
//! train one run together here. Each rank holds the whole model. An optimizer step takes `N`
//! consecutive batches of the epoch's order, one per rank: rank `r` builds and steps only batch
//! `r` of each group. Each parameter value has one owner rank ([`owners`]: a contiguous range
//! of the flattened parameters per rank for an elementwise optimizer, whole tensors balanced by
//! size otherwise): the ranks send each gradient value to its owner and every step output to
//! every rank ([`step`]); an owner adds its values' gradients up in rank order, which are the
//! additions Burn's `GradientsAccumulator` makes in one process with `grad_accumulation: N`,
//! applies the optimizer step to them and sends their new values to every rank; every rank
//! feeds the training metrics every output in batch order. The run is therefore defined as,
//! and tested equal to, that one-process run. An owner alone keeps its values' optimizer state
//! (ZeRO stage 1, [`state`]); rank 0 gathers it for its checkpoints.
//!
//! Validation and the test split are divided the same way: rank `r` measures every `N`-th
//! batch and every rank receives all the outputs in batch order ([`step::Outputs`]), so every
//! metric, early stopping, plateaus and `best(..)` have the one-process values on every rank;
//! rank 0 alone writes the run directory. A resumed run's checkpoint is read by rank 0 and sent to the
//! others ([`mirror`]), so no shared filesystem is needed.
//!
//! The transport is MPI's (the `mpi` feature, [`join`]); without the feature an experiment with
//! the key still builds and trains alone, and refuses to start under a launcher.

pub(crate) mod mirror;
#[cfg(feature = "mpi")]
mod mpi;
mod owners;
mod portable;
pub(crate) mod state;
pub(crate) mod step;
#[cfg(test)]
mod threads;
mod wire;

use std::sync::OnceLock;

pub use owners::Sharding;
pub use portable::{ItemCodec, Portable, PortablePart};

/// The messages data-parallel training needs between ranks.
pub trait Collective: Send + Sync {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Every rank's `bytes`, in rank order, received into `buffer` (a buffer reused from one
    /// step to the next is neither zeroed nor faulted in again).
    fn all_gather(&self, bytes: &[u8], buffer: Vec<u8>) -> Gathered;
    /// `send`, cut after each of `ends`, part `s` to rank `s`; received: what every rank sent
    /// this one, in rank order, into `buffer` (reused as in [`Collective::all_gather`]).
    fn all_to_all(&self, send: &[u8], ends: &[usize], buffer: Vec<u8>) -> Gathered;
    /// Every rank's `bytes` on rank 0 (`None` on the others, which keep no copy).
    fn gather(&self, bytes: &[u8]) -> Option<Gathered>;
    /// Rank 0's `bytes` on every rank (the others' `bytes` are ignored).
    fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8>;
    /// Ends every process of the job with `code`: what a rank that cannot go on does, so that
    /// no other rank waits forever for its next message.
    fn abort(&self, code: i32) -> !;
}

/// What an all-gather received: every rank's bytes, one after the other in one buffer (no copy
/// per rank).
pub struct Gathered {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Gathered {
    /// `bytes` cut after each of `ends`.
    pub fn new(bytes: Vec<u8>, ends: Vec<usize>) -> Self {
        Self { bytes, ends }
    }

    /// Rank `rank`'s bytes.
    pub fn of(&self, rank: usize) -> &[u8] {
        let start = rank.checked_sub(1).map_or(0, |r| self.ends[r]);
        &self.bytes[start..self.ends[rank]]
    }

    /// The number of ranks.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no rank sent anything (never, from a job).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The buffer, for the next all-gather.
    pub fn into_buffer(self) -> Vec<u8> {
        self.bytes
    }
}

/// Why data-parallel training cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ParallelError {
    /// Launched by an MPI launcher, but this binary cannot join the job.
    #[error("{0}")]
    Launch(String),
    /// A setting data-parallel training does not support.
    #[error("`data_parallel` cannot train with {setting}: {fix}")]
    Unsupported {
        /// The setting.
        setting: &'static str,
        /// What to do instead.
        fix: &'static str,
    },
    /// The ranks' weights differ: a nondeterministic model or backend.
    #[error(
        "the ranks' weights differ after epoch {epoch} (checksums by rank: {checksums:08x?}): a model whose forward pass draws random numbers (dropout) or a nondeterministic backend makes each rank train differently; remove the randomness or train in one process"
    )]
    Diverged {
        /// The epoch after which they were compared.
        epoch: usize,
        /// Each rank's checksum.
        checksums: Vec<u32>,
    },
    /// The optimizer state could not be split by owner or merged for a checkpoint.
    #[error("the optimizer state cannot be split between the ranks or merged: {0}")]
    State(String),
    /// A message between ranks could not be read back.
    #[error("a message from rank {rank} cannot be read: {message}")]
    Wire {
        /// The sender.
        rank: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// The job this process trains in, set by [`join`] when it has more than one rank.
static GROUP: OnceLock<Box<dyn Collective>> = OnceLock::new();

/// The ranks this process trains with, when it was launched as one of several.
pub(crate) fn group() -> Option<&'static dyn Collective> {
    GROUP.get().map(|group| &**group)
}

/// This process's membership of its job, for as long as it trains: dropping it ends MPI.
pub struct Joined {
    #[cfg(feature = "mpi")]
    _universe: Option<::mpi::environment::Universe>,
}

impl Joined {
    /// This rank and the number of ranks; `(0, 1)` alone.
    pub fn rank_and_size(&self) -> (usize, usize) {
        group().map_or((0, 1), |g| (g.rank(), g.size()))
    }
}

/// The number of processes a launcher says it started, from the variables Open MPI, MPICH
/// (Hydra) and Slurm's PMIx plugin set; `None` for a process started alone, which trains
/// exactly as without the key.
fn launched_size() -> Option<usize> {
    let size = |name| std::env::var(name).ok()?.parse().ok();
    size("OMPI_COMM_WORLD_SIZE")
        .or_else(|| size("PMI_SIZE"))
        .or_else(|| {
            std::env::var_os("PMIX_RANK")?;
            Some(size("SLURM_NTASKS").unwrap_or(2))
        })
}

/// This process's rank and the number of processes, when a launcher started several: read
/// from the launcher's variables, without MPI (an experiment without the key has none).
pub(crate) fn launched() -> Option<(usize, usize)> {
    let size = launched_size().filter(|&n| n > 1)?;
    let rank = [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.parse().ok())
    .unwrap_or(0);
    Some((rank, size))
}

/// Joins the job this process was launched in, for an experiment with `data_parallel: mpi`.
/// Alone (no launcher), nothing happens and training is as without the key.
pub fn join() -> Result<Joined, ParallelError> {
    let launched = launched_size().unwrap_or(1);
    #[cfg(feature = "mpi")]
    {
        if launched < 2 {
            return Ok(Joined { _universe: None });
        }
        let (universe, group) = mpi::init()?;
        if group.size() > 1 {
            let _ = GROUP.set(Box::new(group));
        }
        Ok(Joined {
            _universe: Some(universe),
        })
    }
    #[cfg(not(feature = "mpi"))]
    {
        if launched > 1 {
            return Err(ParallelError::Launch(format!(
                "launched as one of {launched} processes, but this binary was built without MPI: build it with the `mpi` feature of burn-experiment (`cargo build --release --features burn-experiment/mpi`, after `apt-get install openmpi-bin libopenmpi-dev libclang-dev`), or start it without `mpirun`"
            )));
        }
        Ok(Joined {})
    }
}
