//! [`Collective`] over MPI (rsmpi): the job `mpirun` or `srun` started.

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::{Collective, Gathered, ParallelError};

/// `MPI_COMM_WORLD`.
struct World(SimpleCommunicator);

// SAFETY: MPI is initialized with its default threading level and the fit loop makes every
// call from the thread that initialized it (the process's main thread); the handle itself is
// an immutable identifier.
unsafe impl Send for World {}
// SAFETY: as above.
unsafe impl Sync for World {}

/// Starts MPI.
pub(super) fn init() -> Result<(Universe, impl Collective), ParallelError> {
    let universe = mpi::initialize().ok_or_else(|| {
        ParallelError::Launch("MPI was already initialized in this process".to_owned())
    })?;
    let world = universe.world();
    Ok((universe, World(world)))
}

impl Collective for World {
    fn rank(&self) -> usize {
        self.0.rank() as usize
    }

    fn size(&self) -> usize {
        self.0.size() as usize
    }

    fn all_gather(&self, bytes: &[u8], mut all: Vec<u8>) -> Gathered {
        let size = self.size();
        let mut counts = vec![0 as Count; size];
        self.0
            .all_gather_into(&(bytes.len() as Count), &mut counts[..]);
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |at, &count| {
                let start = *at;
                *at += count;
                Some(start)
            })
            .collect();
        let total: Count = counts.iter().sum();
        all.resize(total as usize, 0);
        {
            let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.0.all_gather_varcount_into(bytes, &mut partition);
        }
        let ends = counts
            .iter()
            .zip(&displs)
            .map(|(&count, &start)| (start + count) as usize)
            .collect();
        Gathered::new(all, ends)
    }

    fn broadcast(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        let root = self.0.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
        bytes
    }

    fn abort(&self, code: i32) -> ! {
        self.0.abort(code)
    }
}
