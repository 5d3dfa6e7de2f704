//! [`Collective`] over MPI (rsmpi): the job `mpirun` or `srun` started.

use mpi::Count;
use mpi::datatype::{Partition, PartitionMut};
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
        let mut counts = vec![0 as Count; self.size()];
        self.0
            .all_gather_into(&(bytes.len() as Count), &mut counts[..]);
        let displs = starts(&counts);
        all.resize(total(&counts), 0);
        {
            let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.0.all_gather_varcount_into(bytes, &mut partition);
        }
        Gathered::new(all, ends_of(&counts, &displs))
    }

    fn all_to_all(&self, send: &[u8], ends: &[usize], mut received: Vec<u8>) -> Gathered {
        let sizes: Vec<Count> = ends
            .iter()
            .scan(0, |start, &end| {
                let size = end - *start;
                *start = end;
                Some(size as Count)
            })
            .collect();
        let mut counts = vec![0 as Count; self.size()];
        self.0.all_to_all_into(&sizes[..], &mut counts[..]);
        let displs = starts(&counts);
        received.resize(total(&counts), 0);
        {
            let send_displs = starts(&sizes);
            let send = Partition::new(send, &sizes[..], &send_displs[..]);
            let mut partition = PartitionMut::new(&mut received[..], &counts[..], &displs[..]);
            self.0.all_to_all_varcount_into(&send, &mut partition);
        }
        Gathered::new(received, ends_of(&counts, &displs))
    }

    fn gather(&self, bytes: &[u8]) -> Option<Gathered> {
        let root = self.0.process_at_rank(0);
        let len = bytes.len() as Count;
        if self.0.rank() != 0 {
            root.gather_into(&len);
            root.gather_varcount_into(bytes);
            return None;
        }
        let mut counts = vec![0 as Count; self.size()];
        root.gather_into_root(&len, &mut counts[..]);
        let displs = starts(&counts);
        let mut all = vec![0; total(&counts)];
        {
            let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(bytes, &mut partition);
        }
        Some(Gathered::new(all, ends_of(&counts, &displs)))
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

/// Where each rank's bytes start in one buffer.
fn starts(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0, |at, &count| {
            let start = *at;
            *at += count;
            Some(start)
        })
        .collect()
}

fn total(counts: &[Count]) -> usize {
    counts.iter().map(|&c| c as usize).sum()
}

fn ends_of(counts: &[Count], starts: &[Count]) -> Vec<usize> {
    counts
        .iter()
        .zip(starts)
        .map(|(&count, &start)| (start + count) as usize)
        .collect()
}
