//! [`Collective`] over the threads of one process, for tests of the exchange without MPI: each
//! call puts this rank's bytes in its slot, waits for every rank, reads what it needs, and
//! waits again before a slot can be written anew.

use std::sync::{Arc, Barrier, Mutex};

use super::{Collective, Gathered};

/// What every rank put in for the call under way: its bytes and where they are cut.
type Slots = Mutex<Vec<(Vec<u8>, Vec<usize>)>>;

/// One rank of a group of threads.
pub(crate) struct Threads {
    rank: usize,
    size: usize,
    barrier: Arc<Barrier>,
    slots: Arc<Slots>,
}

impl Threads {
    /// The `size` ranks of one group, to hand one to each thread.
    pub fn group(size: usize) -> Vec<Threads> {
        let barrier = Arc::new(Barrier::new(size));
        let slots = Arc::new(Mutex::new(vec![(Vec::new(), Vec::new()); size]));
        (0..size)
            .map(|rank| Threads {
                rank,
                size,
                barrier: barrier.clone(),
                slots: slots.clone(),
            })
            .collect()
    }

    /// Puts in `bytes` cut after `ends`, then returns `read` of every rank's, in rank order.
    fn call<T>(&self, bytes: &[u8], ends: &[usize], read: impl Fn(&[u8], &[usize]) -> T) -> Vec<T> {
        self.slots.lock().expect("slots")[self.rank] = (bytes.to_vec(), ends.to_vec());
        self.barrier.wait();
        let all = {
            let slots = self.slots.lock().expect("slots");
            slots.iter().map(|(b, e)| read(b, e)).collect()
        };
        self.barrier.wait();
        all
    }
}

/// `parts` one after the other in one buffer.
fn gathered(parts: Vec<Vec<u8>>, mut buffer: Vec<u8>) -> Gathered {
    buffer.clear();
    let mut ends = Vec::with_capacity(parts.len());
    for part in parts {
        buffer.extend_from_slice(&part);
        ends.push(buffer.len());
    }
    Gathered::new(buffer, ends)
}

impl Collective for Threads {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, bytes: &[u8], buffer: Vec<u8>) -> Gathered {
        gathered(self.call(bytes, &[], |b, _| b.to_vec()), buffer)
    }

    fn all_to_all(&self, send: &[u8], ends: &[usize], buffer: Vec<u8>) -> Gathered {
        let rank = self.rank;
        let parts = self.call(send, ends, |b, e| {
            let start = rank.checked_sub(1).map_or(0, |r| e[r]);
            b[start..e[rank]].to_vec()
        });
        gathered(parts, buffer)
    }

    fn gather(&self, bytes: &[u8]) -> Option<Gathered> {
        let all = self.all_gather(bytes, Vec::new());
        (self.rank == 0).then_some(all)
    }

    fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8> {
        let all = self.call(&bytes, &[], |b, _| b.to_vec());
        all.into_iter().next().unwrap_or_default()
    }

    fn abort(&self, code: i32) -> ! {
        panic!("rank {} aborted the group with code {code}", self.rank)
    }
}
