//! Batches built ahead on worker threads and handed out in a fixed order.
//!
//! Burn's `MultiThreadDataLoader` sends batches back in whichever order its threads finish, so two
//! runs of the same experiment may train on differently ordered batches. This loader gives batch
//! `k` of an epoch to worker `k mod n` and reads results back worker by worker in the same rotation:
//! work is parallel, delivery is sequential, and the order is that of [`epoch_order`] whatever
//! the worker count. Worker threads live as long as the loader, not one epoch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use burn::data::dataloader::Progress;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, DatasetError};
use burn::tensor::Device;

use super::augment::Augment;
use super::order::epoch_order;
use crate::interrupt;

/// Batches each worker may have built ahead of the training thread.
const PREFETCH_PER_WORKER: usize = 2;

/// Why a batch could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The dataset failed to return an item.
    #[error("the dataset could not return an item: {0}")]
    Dataset(#[from] DatasetError),
    /// The batcher panicked; the panic message is kept.
    #[error("the batcher panicked: {0}")]
    BatcherPanicked(String),
    /// A worker thread stopped without answering (it can only have panicked outside the batcher).
    #[error("a data loader worker thread stopped unexpectedly")]
    WorkerLost,
    /// Ctrl-C or SIGTERM arrived while waiting for a batch.
    #[error("interrupted while waiting for a batch")]
    Interrupted,
}

/// What a worker needs to turn a list of indices into a batch.
struct Source<I, B> {
    dataset: Arc<dyn Dataset<I>>,
    batcher: Arc<dyn Batcher<I, B>>,
    device: Device,
    /// The training split's augmentation and its seed, set before the first epoch.
    augment: OnceLock<(Augment<I>, u64)>,
}

/// One batch to build: the dataset indices of its items, and where the first of them stands in
/// the epoch (for augmentation).
struct Job {
    epoch: usize,
    start: usize,
    indices: Vec<usize>,
}

impl<I, B> Source<I, B> {
    fn build(&self, job: Job) -> Result<B, DataError> {
        let mut items = self.dataset.get_many(job.indices)?;
        if let Some((augment, seed)) = self.augment.get() {
            items = items
                .into_iter()
                .enumerate()
                .map(|(i, item)| augment.apply(item, *seed, job.epoch, job.start + i))
                .collect();
        }
        // A panicking batcher must surface as an error instead of a worker that never answers.
        catch_unwind(AssertUnwindSafe(|| self.batcher.batch(items, &self.device))).map_err(|p| {
            let message = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            DataError::BatcherPanicked(message)
        })
    }
}

struct Worker<B> {
    jobs: Option<Sender<Job>>,
    results: Receiver<Result<B, DataError>>,
    thread: Option<JoinHandle<()>>,
}

impl<B> Drop for Worker<B> {
    fn drop(&mut self) {
        // Closing the job channel ends the worker's loop.
        self.jobs.take();
        // A worker stalled in the batcher of an interrupted run is left to the process's end.
        if let Some(thread) = self.thread.take()
            && !interrupt::raised()
        {
            let _ = thread.join();
        }
    }
}

/// A dataset, a batcher and the batching options of one split.
pub struct Loader<I, B> {
    source: Arc<Source<I, B>>,
    batch_size: usize,
    shuffle: Option<u64>,
    workers: Vec<Worker<B>>,
    /// Waits for every batch even after Ctrl-C/SIGTERM: in data-parallel training the ranks
    /// stop together at an optimizer step (`parallel`), never while one awaits a batch.
    patient: bool,
}

impl<I, B> Loader<I, B>
where
    I: Send + Sync + 'static,
    B: Send + 'static,
{
    /// A loader building batches on `device` with `workers` threads (0: on the caller's thread).
    pub fn new(
        name: &str,
        dataset: Arc<dyn Dataset<I>>,
        batcher: Arc<dyn Batcher<I, B>>,
        device: Device,
        batch_size: usize,
        shuffle: Option<u64>,
        workers: usize,
    ) -> std::io::Result<Self> {
        if batch_size == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the {name} loader needs a batch size of at least 1"),
            ));
        }
        let source = Arc::new(Source {
            dataset,
            batcher,
            device,
            augment: OnceLock::new(),
        });
        let workers = (0..workers)
            .map(|index| spawn_worker(format!("dsl-loader-{name}-{index}"), source.clone()))
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self {
            source,
            batch_size,
            shuffle,
            workers,
            patient: false,
        })
    }

    /// Applies `augment` to every item this loader delivers, with per-item RNGs seeded from
    /// `seed`, the epoch and the item's position in it (see [`Augment`]).
    pub fn augment(self, augment: Augment<I>, seed: u64) -> Self {
        // The source is new and this is its only setting: the cell is empty.
        let _ = self.source.augment.set((augment, seed));
        self
    }

    /// Waits for batches after Ctrl-C/SIGTERM too (see `patient`).
    pub(crate) fn patient(mut self) -> Self {
        self.patient = true;
        self
    }

    /// The batches of `epoch` (1-based), in plan order, at most `limit` of them.
    pub fn epoch(&self, epoch: usize, limit: Option<usize>) -> EpochBatches<'_, I, B> {
        self.epoch_after(epoch, limit, 0)
    }

    /// [`Loader::epoch`] without its first `done` batches: where an interrupted run continues.
    pub fn epoch_after(
        &self,
        epoch: usize,
        limit: Option<usize>,
        done: usize,
    ) -> EpochBatches<'_, I, B> {
        self.epoch_shard(epoch, limit, done, (0, 1))
    }

    /// [`Loader::epoch_after`], delivering only every `size`-th batch from the `rank`-th on:
    /// a rank's share of the batches in data-parallel training.
    pub(crate) fn epoch_shard(
        &self,
        epoch: usize,
        limit: Option<usize>,
        done: usize,
        (rank, size): (usize, usize),
    ) -> EpochBatches<'_, I, B> {
        let order = epoch_order(self.source.dataset.len(), self.shuffle, epoch);
        let all = order.len().div_ceil(self.batch_size);
        let total = limit.map_or(all, |limit| limit.min(all));
        let first = done.min(total);
        let positions = total - first;
        let mut batches = EpochBatches {
            loader: self,
            epoch,
            first,
            positions,
            offset: rank,
            stride: size,
            count: positions.saturating_sub(rank).div_ceil(size),
            order,
            submitted: 0,
            received: 0,
            items_done: 0,
        };
        let ahead = self.workers.len() * PREFETCH_PER_WORKER;
        while batches.submitted < batches.count.min(ahead) {
            batches.submit_next();
        }
        batches
    }
}

impl<I, B> Loader<I, B> {
    /// Number of items in the dataset.
    pub fn num_items(&self) -> usize {
        self.source.dataset.len()
    }
}

fn spawn_worker<I, B>(name: String, source: Arc<Source<I, B>>) -> std::io::Result<Worker<B>>
where
    I: Send + Sync + 'static,
    B: Send + 'static,
{
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let (result_tx, result_rx) = mpsc::channel();
    let thread = std::thread::Builder::new().name(name).spawn(move || {
        for job in job_rx {
            if result_tx.send(source.build(job)).is_err() {
                break;
            }
        }
    })?;
    Ok(Worker {
        jobs: Some(job_tx),
        results: result_rx,
        thread: Some(thread),
    })
}

/// The batches of one epoch. Dropping it early waits for the batches already handed to workers,
/// so the next epoch starts from empty queues.
pub struct EpochBatches<'a, I, B> {
    loader: &'a Loader<I, B>,
    epoch: usize,
    /// Batches of the epoch before the first one delivered (those an interrupted run trained).
    first: usize,
    /// Batches of the epoch from `first` on, delivered here or not.
    positions: usize,
    /// Batch `i` delivered here is batch `first + offset + i * stride` of the epoch.
    offset: usize,
    stride: usize,
    /// Batches delivered in this call.
    count: usize,
    /// The epoch's dataset indices; batch `first + i` is the `i`-th run of `batch_size`.
    order: Vec<usize>,
    submitted: usize,
    received: usize,
    items_done: usize,
}

impl<I, B> EpochBatches<'_, I, B> {
    /// Number of batches in this epoch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether this epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Items delivered so far in this epoch, out of the dataset's, as Burn's metrics expect it
    /// (without a unit: none of them reads it, and naming it would allocate on every step).
    pub fn progress(&self) -> Progress {
        Progress {
            items_processed: self.items_done,
            items_total: self.loader.num_items(),
            unit: None,
        }
    }

    /// Where batch `index` of this call lies in the epoch's order.
    fn span(&self, index: usize) -> std::ops::Range<usize> {
        let start = (self.first + self.offset + index * self.stride) * self.loader.batch_size;
        start..(start + self.loader.batch_size).min(self.order.len())
    }

    /// Batch `index` of this call as a job.
    fn job(&self, index: usize) -> Job {
        let span = self.span(index);
        Job {
            epoch: self.epoch,
            start: span.start,
            indices: self.order[span].to_vec(),
        }
    }

    fn submit_next(&mut self) {
        let job = self.job(self.submitted);
        let workers = &self.loader.workers;
        let worker = &workers[self.submitted % workers.len()];
        // A send fails only if the worker is gone; `next` then reports `WorkerLost`.
        if let Some(jobs) = &worker.jobs {
            let _ = jobs.send(job);
        }
        self.submitted += 1;
    }
}

impl<I, B> Iterator for EpochBatches<'_, I, B> {
    type Item = Result<B, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.received == self.count {
            return None;
        }
        let index = self.received;
        let workers = &self.loader.workers;
        let batch = if workers.is_empty() {
            let job = self.job(index);
            self.loader.source.build(job)
        } else {
            let result = match receive(&workers[index % workers.len()].results, self.loader.patient)
            {
                Some(result) => result,
                // The batch stays with its worker: the run is stopping.
                None => return Some(Err(DataError::Interrupted)),
            };
            if self.submitted < self.count {
                self.submit_next();
            }
            result
        };
        self.received += 1;
        self.items_done += self.span(index).len();
        Some(batch)
    }
}

/// A rank's batches of an epoch, without the dataset's item type: what the data-parallel
/// epoch, compiled only for an experiment with the key, reads.
pub(crate) trait Shard<B> {
    /// The next batch of this rank.
    fn next_batch(&mut self) -> Option<Result<B, DataError>>;
    /// Number of batches of the epoch from the first one on, whichever rank builds them.
    fn positions(&self) -> usize;
    /// [`EpochBatches::progress`] once batch `position` (counted from the first) is trained,
    /// by whichever rank.
    fn progress_at(&self, position: usize) -> Progress;
}

impl<I, B> Shard<B> for EpochBatches<'_, I, B> {
    fn next_batch(&mut self) -> Option<Result<B, DataError>> {
        self.next()
    }

    fn positions(&self) -> usize {
        self.positions
    }

    fn progress_at(&self, position: usize) -> Progress {
        let end = ((self.first + position + 1) * self.loader.batch_size).min(self.order.len());
        Progress {
            items_processed: end - self.first * self.loader.batch_size,
            items_total: self.loader.num_items(),
            unit: None,
        }
    }
}

/// The next result of a worker, waiting in short slices so that Ctrl-C/SIGTERM is noticed
/// even when a batcher stalls; `None` once it arrived.
fn receive<B>(
    results: &Receiver<Result<B, DataError>>,
    patient: bool,
) -> Option<Result<B, DataError>> {
    loop {
        match results.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(result) => return Some(result),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Some(Err(DataError::WorkerLost)),
            Err(mpsc::RecvTimeoutError::Timeout) if !patient && interrupt::raised() => {
                return None;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

impl<I, B> Drop for EpochBatches<'_, I, B> {
    fn drop(&mut self) {
        // An interrupted run does not wait for batches a stalled worker may never finish.
        if !self.loader.patient && interrupt::raised() {
            return;
        }
        let workers = &self.loader.workers;
        for index in self.received..self.submitted {
            let _ = workers[index % workers.len()].results.recv();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use burn::data::dataloader::batcher::Batcher;
    use burn::data::dataset::InMemDataset;
    use burn::tensor::Device;

    use super::{DataError, Loader};
    use crate::interrupt::{Interrupt, SIGNAL_TESTS};

    /// A batcher that stalls, as one reading from a hung network disk would.
    struct Stalled;

    impl Batcher<u8, u8> for Stalled {
        fn batch(&self, _items: Vec<u8>, _device: &Device) -> u8 {
            std::thread::sleep(Duration::from_secs(3));
            0
        }
    }

    #[test]
    fn a_batch_size_of_zero_is_an_error_not_a_panic() {
        let dataset = std::sync::Arc::new(InMemDataset::new(vec![1u8; 4]));
        let err = Loader::new(
            "train",
            dataset,
            std::sync::Arc::new(Stalled),
            Device::flex(),
            0,
            None,
            0,
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().contains("batch size of at least 1"),
            "{err}"
        );
    }

    #[test]
    fn ctrl_c_is_noticed_while_a_worker_stalls() {
        let _serial = SIGNAL_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let held = Interrupt::install().unwrap();
        let dataset = std::sync::Arc::new(InMemDataset::new(vec![1u8; 4]));
        let loader = Loader::new(
            "train",
            dataset,
            std::sync::Arc::new(Stalled),
            Device::flex(),
            2,
            None,
            1,
        )
        .unwrap();
        let started = Instant::now();
        let mut batches = loader.epoch(1, None);
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: SIGINT goes to this process, which holds the run's handler.
            unsafe { libc::raise(libc::SIGINT) };
        });
        let next = batches.next();
        assert!(
            matches!(next, Some(Err(DataError::Interrupted))),
            "{next:?}"
        );
        drop(batches);
        drop(loader);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "waited {:?} for a stalled worker",
            started.elapsed()
        );
        drop(held);
    }
}
