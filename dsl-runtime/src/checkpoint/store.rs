//! Checkpoint files: `checkpoint/{model,optim,scheduler}-N.bpk` (Burn's burnpack records) and
//! `checkpoint/state-N.json`, written last, which makes epoch `N` exist. A run stopped by
//! Ctrl-C or SIGTERM inside an epoch leaves the same four files with `interrupted` for `N`.
//!
//! Every file is written atomically (temporary file, rename), the state file after the three
//! records, and an epoch's deletion starts with its state file. A process killed at any moment
//! therefore leaves only complete epochs visible. Writing happens on one writer thread per run,
//! in submission order, so deleting old epochs never overtakes writing the new one.
//!
//! Durability against a power loss is batched on that thread: what was written is synced (on
//! Linux one `syncfs`, one journal commit for all files) at most a second after it was
//! written, before any older epoch is deleted (deletions wait for the sync), and when the run
//! ends. A power loss can thus cost the checkpoints of the last second, never an older one that
//! was synced, and a half-synced epoch is caught by its digests and skipped on resume.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use burn::lr_scheduler::LrSchedulerRecord;
use burn::optim::OptimizerRecord;
use burn::store::ModuleRecord;
use burn::tensor::Bytes;
use serde::{Deserialize, Serialize};

use crate::digest::{Digest, seal, unseal};
use crate::history::History;
use crate::output::atomic::replace_file;

/// Why a checkpoint could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The requested epoch has no checkpoint.
    #[error("no checkpoint for epoch {epoch} in {dir}; available epochs: {available:?}")]
    Missing {
        /// The requested epoch.
        epoch: usize,
        /// The checkpoint folder.
        dir: PathBuf,
        /// The epochs that do have one.
        available: Vec<usize>,
    },
    /// A file is truncated, altered or unreadable.
    #[error(
        "checkpoint file {file} is damaged: {reason}; resume from an earlier epoch, or delete the file's epoch"
    )]
    Damaged {
        /// The damaged file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The model's parameters do not match the checkpoint (another architecture or size).
    #[error("checkpoint {file} does not fit this model: {reason}")]
    Mismatch {
        /// The model file.
        file: PathBuf,
        /// Burn's validation message, naming the parameter.
        reason: String,
    },
    /// A run that saved no checkpoint is asked for one (`--predict`, `--test-only`, `load_best`).
    #[error(
        "no checkpoint in {dir}: the run saved none\nhelp: set `checkpoint: keep_last(1)` (or `best(..)`) in `training!` and train again; `--fast-dev-run` and runs without `checkpoint` write none"
    )]
    NoneSaved {
        /// The checkpoint folder.
        dir: PathBuf,
    },
    /// A run that had checkpoints has no readable one left: resuming would train it again
    /// from the start over its own records, so it stops instead.
    #[error(
        "no readable checkpoint in {dir}: {}\nhelp: the run is not restarted over its own records; restore the files, resume an epoch that is intact with `--resume N`, or start a fresh run (without --resume), which gets a new run directory",
        damaged.join("; ")
    )]
    AllDamaged {
        /// The checkpoint folder.
        dir: PathBuf,
        /// Each damaged file and what is wrong with it.
        damaged: Vec<String>,
    },
    /// Reading or writing the checkpoint folder failed.
    #[error("checkpoint I/O on {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
}

impl CheckpointError {
    /// `file (reason)` of a [`CheckpointError::Damaged`], as [`CheckpointError::AllDamaged`]
    /// lists them; any other error as it displays.
    pub(crate) fn damaged_file(&self) -> String {
        match self {
            CheckpointError::Damaged { file, reason } => format!("{} ({reason})", file.display()),
            other => other.to_string(),
        }
    }
}

/// What `state-N.json` holds: enough to continue the run exactly.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SavedState {
    /// The last completed epoch.
    pub epoch: usize,
    /// Length and hash of each record file of this epoch, by file name.
    pub files: BTreeMap<String, Digest>,
    /// Every epoch's metric values up to and including this epoch. The per-step values are
    /// not copied here (they would make the file grow with every step): they are in
    /// `metrics.csv`, whose first bytes `metrics` covers.
    pub history: History,
    /// The length and hash of `metrics.csv` when this checkpoint was taken: a resume checks
    /// that the file still starts with exactly those bytes, reads the steps' values back from
    /// them, and drops what follows.
    pub metrics: Digest,
    /// The run's options. The shuffle order of the next epoch follows from them and the epoch
    /// number, so no RNG state needs saving.
    pub options: serde_json::Value,
    /// The experiment's own config, as in `config.json`.
    pub hyperparameters: serde_json::Value,
    /// Set in the checkpoint of an interrupted run: how far into epoch `epoch + 1` it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<Within>,
    /// What each callback saved (`Callback::save`), in the run's order; empty when none saves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callbacks: Vec<serde_json::Value>,
    /// An f16 run's loss scale (`precision: f16`), which the next steps continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<crate::checkpoint::loss_scale::LossScale>,
}

/// The part of an epoch an interrupted run completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Within {
    /// Batches of the epoch trained; the run continues with the next one.
    pub batches: usize,
    /// The global step of the last of them.
    pub step: usize,
    /// Each training metric's state so far, in the run's order (`SplitMetric::carry`).
    pub carried: Vec<serde_json::Value>,
}

/// Where a checkpoint's files are: the end of an epoch, or the step where a run was
/// interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// After epoch `N`: `*-N.*`.
    Epoch(usize),
    /// Inside an epoch: `*-interrupted.*`.
    Interrupted,
}

impl Slot {
    /// File name of this slot's state file.
    fn state_name(self) -> String {
        format!("state-{self}.json")
    }

    /// File name of this slot's record `kind` (`model`, `optim`, `scheduler`).
    fn record_name(self, kind: &str) -> String {
        format!("{kind}-{self}.bpk")
    }
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Slot::Epoch(epoch) => write!(f, "{epoch}"),
            Slot::Interrupted => f.write_str("interrupted"),
        }
    }
}

/// The records and state of one checkpoint, verified.
pub struct Loaded {
    /// Where they were read from.
    pub slot: Slot,
    /// The epoch's state.
    pub state: SavedState,
    /// The model's parameters.
    pub model: ModuleRecord,
    /// The optimizer's state.
    pub optimizer: OptimizerRecord,
    /// The learning-rate schedule's state.
    pub scheduler: LrSchedulerRecord,
    /// The moving average of the model's parameters, for a run with `ema`.
    pub ema: Option<ModuleRecord>,
}

/// The records of a checkpoint, the moving average (`ema`) being written only by runs with one.
pub struct Records {
    /// The model's parameters.
    pub model: ModuleRecord,
    /// The optimizer's state.
    pub optimizer: OptimizerRecord,
    /// The learning-rate schedule's state.
    pub scheduler: LrSchedulerRecord,
    /// The moving average of the parameters.
    pub ema: Option<ModuleRecord>,
}

const RECORDS: [&str; 3] = ["model", "optim", "scheduler"];
/// The record of the moving average, present when the state file lists it.
const EMA: &str = "ema";

impl SavedState {
    /// What the state says agrees with where it was found and with itself: the epoch of
    /// `state-N.json` is `N`, only an interrupted run's state says how far into an epoch it
    /// got, and the history holds no epoch after the state's.
    fn check(&self, slot: Slot) -> Result<(), String> {
        match (slot, &self.within) {
            (Slot::Epoch(n), _) if self.epoch != n => {
                return Err(format!(
                    "it says epoch {}, but it is epoch {n}'s file",
                    self.epoch
                ));
            }
            (Slot::Epoch(_), Some(_)) => {
                return Err("an epoch's state says it stopped inside an epoch".to_owned());
            }
            (Slot::Interrupted, None) => {
                return Err(
                    "an interrupted run's state says nothing of where it stopped".to_owned(),
                );
            }
            (Slot::Interrupted, Some(within)) if within.step < within.batches => {
                return Err(format!(
                    "it stopped at global step {} after {} batches of its epoch",
                    within.step, within.batches
                ));
            }
            _ => {}
        }
        if self.epoch.checked_add(1).is_none() {
            return Err(format!("epoch {} cannot be continued", self.epoch));
        }
        for series in self.history.series() {
            if let Some((epoch, _)) = series
                .epochs
                .iter()
                .find(|(e, _)| *e == 0 || *e > self.epoch)
            {
                return Err(format!(
                    "its history of {}.{} has a value for epoch {epoch}, outside 1..={}",
                    series.split, series.metric, self.epoch
                ));
            }
            if series.epochs.len() > self.epoch {
                return Err(format!(
                    "its history of {}.{} has {} epochs for {} completed",
                    series.split,
                    series.metric,
                    series.epochs.len(),
                    self.epoch
                ));
            }
        }
        Ok(())
    }
}

/// The checkpoint folder of a run directory.
#[derive(Clone, Debug)]
pub struct CheckpointDir {
    dir: PathBuf,
}

impl CheckpointDir {
    /// `<run_dir>/checkpoint`.
    pub fn new(run_dir: &Path) -> Self {
        Self {
            dir: run_dir.join("checkpoint"),
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn io(&self, path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError {
        let path = path.to_owned();
        move |source| CheckpointError::Io { path, source }
    }

    /// Epochs with a state file, oldest first.
    pub fn epochs(&self) -> Result<Vec<usize>, CheckpointError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(&self.dir)(e)),
        };
        let mut epochs: Vec<usize> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                name.strip_prefix("state-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()
            })
            .collect();
        epochs.sort_unstable();
        Ok(epochs)
    }

    /// Epoch `epoch`, with every file checked against the digests of its state file.
    pub fn load(&self, epoch: usize) -> Result<Loaded, CheckpointError> {
        match self.read_state(Slot::Epoch(epoch))? {
            Some(state) => self.load_records(Slot::Epoch(epoch), state),
            None => Err(CheckpointError::Missing {
                epoch,
                dir: self.dir.clone(),
                available: self.epochs().unwrap_or_default(),
            }),
        }
    }

    /// Whether an interrupted run left a checkpoint (intact or not).
    pub fn has_interrupted(&self) -> bool {
        self.dir.join(Slot::Interrupted.state_name()).exists()
    }

    /// The checkpoint an interrupted run left, if there is one.
    pub fn load_interrupted(&self) -> Result<Option<Loaded>, CheckpointError> {
        self.read_state(Slot::Interrupted)?
            .map(|state| self.load_records(Slot::Interrupted, state))
            .transpose()
    }

    fn read_state(&self, slot: Slot) -> Result<Option<(PathBuf, SavedState)>, CheckpointError> {
        let state_path = self.dir.join(slot.state_name());
        let damaged = |reason: String| CheckpointError::Damaged {
            file: state_path.clone(),
            reason,
        };
        let state_bytes = match crate::read::bytes(&state_path, crate::read::STATE) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            // Too long, or not a regular file: not a state file this run wrote.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::FileTooLarge | std::io::ErrorKind::InvalidInput
                ) =>
            {
                return Err(damaged(e.to_string()));
            }
            Err(e) => return Err(self.io(&state_path)(e)),
        };
        let json = unseal(&state_bytes).map_err(damaged)?;
        let state: SavedState = serde_json::from_slice(json).map_err(|e| damaged(e.to_string()))?;
        state.check(slot).map_err(damaged)?;
        Ok(Some((state_path, state)))
    }

    fn load_records(
        &self,
        slot: Slot,
        (state_path, state): (PathBuf, SavedState),
    ) -> Result<Loaded, CheckpointError> {
        let mut bytes = RECORDS.iter().map(|kind| {
            let name = slot.record_name(kind);
            let expected = state
                .files
                .get(&name)
                .ok_or_else(|| CheckpointError::Damaged {
                    file: state_path.clone(),
                    reason: format!("it lists no digest for {name}"),
                })?;
            self.read_record(&name, expected)
        });
        let damaged = |file: PathBuf| {
            move |e: burn::store::RecordError| CheckpointError::Damaged {
                file,
                reason: e.to_string(),
            }
        };
        let (file, data) = bytes.next().expect("three records")?;
        let model = ModuleRecord::from_bytes(data).map_err(damaged(file))?;
        let (file, data) = bytes.next().expect("three records")?;
        let optimizer = OptimizerRecord::from_bytes(data).map_err(damaged(file))?;
        let (file, data) = bytes.next().expect("three records")?;
        let scheduler = LrSchedulerRecord::from_bytes(data).map_err(damaged(file))?;
        drop(bytes);
        let ema = match state.files.get(&slot.record_name(EMA)) {
            Some(expected) => {
                let (file, data) = self.read_record(&slot.record_name(EMA), expected)?;
                Some(ModuleRecord::from_bytes(data).map_err(damaged(file))?)
            }
            None => None,
        };
        Ok(Loaded {
            slot,
            state,
            model,
            optimizer,
            scheduler,
            ema,
        })
    }

    /// The bytes of record file `name`, which must match the digest the state lists. No more is
    /// read than the state says the file holds (plus one byte, to see that it is longer), so a
    /// damaged or replaced file cannot make a resume allocate beyond it.
    fn read_record(
        &self,
        name: &str,
        expected: &Digest,
    ) -> Result<(PathBuf, Bytes), CheckpointError> {
        let file = self.dir.join(name);
        let data = crate::read::bytes(&file, crate::read::record(expected.len)).map_err(|e| {
            CheckpointError::Damaged {
                file: file.clone(),
                reason: e.to_string(),
            }
        })?;
        let actual = Digest::of(&data);
        if actual != *expected {
            return Err(CheckpointError::Damaged {
                file,
                reason: format!(
                    "{} bytes with hash {:016x}, expected {} bytes with hash {:016x}",
                    actual.len, actual.fnv1a, expected.len, expected.fnv1a
                ),
            });
        }
        Ok((file, Bytes::from_bytes_vec(data)))
    }

    /// The newest intact epoch, and a note for each newer epoch skipped because it was damaged;
    /// `None` when there is no epoch, [`CheckpointError::AllDamaged`] when every one is damaged.
    pub fn load_latest(&self) -> Result<Option<(Loaded, Vec<String>)>, CheckpointError> {
        let mut skipped = Vec::new();
        let mut damaged = Vec::new();
        for epoch in self.epochs()?.into_iter().rev() {
            match self.load(epoch) {
                Ok(loaded) => return Ok(Some((loaded, skipped))),
                Err(err @ CheckpointError::Damaged { .. }) => {
                    skipped.push(format!("epoch {epoch} skipped: {err}"));
                    damaged.push(err);
                }
                Err(err) => return Err(err),
            }
        }
        if damaged.is_empty() {
            return Ok(None);
        }
        Err(CheckpointError::AllDamaged {
            dir: self.dir.clone(),
            damaged: damaged.iter().map(CheckpointError::damaged_file).collect(),
        })
    }

    /// Path of the model record of `slot`.
    pub fn model_file(&self, slot: Slot) -> PathBuf {
        self.dir.join(slot.record_name("model"))
    }

    /// Starts the writer thread of a run, after removing what a killed writer may have left:
    /// temporary files, and records without their state file (a checkpoint's state file is
    /// written last and removed first, so a kill while writing or pruning one leaves its
    /// records, which nothing reads).
    pub fn writer(&self) -> Result<Writer, CheckpointError> {
        std::fs::create_dir_all(&self.dir).map_err(self.io(&self.dir))?;
        let entries = std::fs::read_dir(&self.dir).map_err(self.io(&self.dir))?;
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let temporary = name.starts_with('.') && name.contains(".tmp-");
            let orphan = record_slot(&name)
                .is_some_and(|slot| !self.dir.join(format!("state-{slot}.json")).exists());
            if temporary || orphan {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let error: Arc<Mutex<Option<CheckpointError>>> = Arc::default();
        let dir = self.clone();
        let failed = error.clone();
        let thread = std::thread::Builder::new()
            .name("dsl-checkpoint".to_owned())
            .spawn(move || {
                let mut unsynced = Unsynced::default();
                // After a failure nothing more is written or deleted, waiting deletions
                // included: an older epoch must not be removed when the newer one may be
                // incomplete.
                let mut broken = false;
                let record = |result: Result<(), CheckpointError>, unsynced: &mut Unsynced| {
                    if let Err(err) = result {
                        unsynced.deletes.clear();
                        if let Ok(mut slot) = failed.lock() {
                            slot.get_or_insert(err);
                        }
                        return true;
                    }
                    false
                };
                loop {
                    let first = match rx.recv_timeout(SYNC_AFTER) {
                        Ok(job) => job,
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            broken |= record(dir.sync(&mut unsynced), &mut unsynced);
                            continue;
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    // Everything queued so far, minus epochs that are written and deleted again
                    // within it: when epochs are shorter than a write, the writer skips the
                    // checkpoints nobody would keep instead of falling further behind.
                    let mut jobs = vec![first];
                    jobs.extend(rx.try_iter());
                    for job in coalesce(jobs) {
                        if broken {
                            break;
                        }
                        broken |= record(dir.run(job, &mut unsynced), &mut unsynced);
                    }
                    if unsynced.older_than(SYNC_AFTER) {
                        broken |= record(dir.sync(&mut unsynced), &mut unsynced);
                    }
                }
                // The run is over: whatever it wrote is made durable before `finish` returns.
                record(dir.sync(&mut unsynced), &mut unsynced);
            })
            .map_err(self.io(&self.dir))?;
        Ok(Writer {
            jobs: Some(tx),
            thread: Some(thread),
            error,
        })
    }

    /// Writes or deletes. Files are replaced atomically (temporary file, then rename), which is
    /// all a killed process needs; their durability against a power loss is batched
    /// ([`CheckpointDir::sync`]): before any file is deleted, at most [`SYNC_AFTER`] after a
    /// write, and when the run ends.
    fn run(&self, job: Job, unsynced: &mut Unsynced) -> Result<(), CheckpointError> {
        match job {
            Job::Write { slot, encode } => {
                let Encoded { records, state } = encode()?;
                // A deletion still waiting for a sync must not remove these new files.
                unsynced.deletes.retain(|&pending| pending != slot);
                // Records first, the state file last: it is what makes the epoch exist.
                for (name, bytes) in records {
                    let path = self.dir.join(name);
                    replace_file(&path, &bytes).map_err(self.io(&path))?;
                    unsynced.push(path);
                }
                let path = self.dir.join(slot.state_name());
                replace_file(&path, &state).map_err(self.io(&path))?;
                unsynced.push(path);
                Ok(())
            }
            // An older epoch goes only once the newer ones are on disk for good: its deletion
            // waits for the next sync when files are waiting for one.
            Job::Delete(slot) if !unsynced.paths.is_empty() => {
                unsynced.deletes.push(slot);
                Ok(())
            }
            Job::Delete(slot) => self.delete(slot),
        }
    }

    /// Removes `slot`'s files, its state file first (which unmakes the epoch).
    fn delete(&self, slot: Slot) -> Result<(), CheckpointError> {
        let names = std::iter::once(slot.state_name()).chain(
            RECORDS
                .iter()
                .chain([&EMA])
                .map(|kind| slot.record_name(kind)),
        );
        for name in names {
            let path = self.dir.join(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.io(&path)(e)),
            }
        }
        Ok(())
    }
}

/// The slot (`3`, `interrupted`) a record file `{kind}-{slot}.bpk` belongs to.
fn record_slot(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".bpk")?;
    let (kind, slot) = stem.split_once('-')?;
    (RECORDS.contains(&kind) || kind == EMA).then_some(slot)
}

/// How long a written checkpoint may wait for its fsync when nothing else forces one.
const SYNC_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Files written but not yet synced, in the order they were written, and since when; and the
/// deletions waiting for them to be synced.
#[derive(Default)]
struct Unsynced {
    paths: Vec<PathBuf>,
    deletes: Vec<Slot>,
    since: Option<std::time::Instant>,
}

impl Unsynced {
    fn push(&mut self, path: PathBuf) {
        self.since.get_or_insert_with(std::time::Instant::now);
        self.paths.push(path);
    }

    fn older_than(&self, age: std::time::Duration) -> bool {
        self.since.is_some_and(|since| since.elapsed() >= age)
    }
}

impl CheckpointDir {
    /// Makes every file written since the last call durable, then carries out the deletions
    /// that waited for it.
    fn sync(&self, unsynced: &mut Unsynced) -> Result<(), CheckpointError> {
        if !unsynced.paths.is_empty() {
            self.sync_files(std::mem::take(&mut unsynced.paths))?;
        }
        unsynced.since = None;
        for slot in std::mem::take(&mut unsynced.deletes) {
            self.delete(slot)?;
        }
        Ok(())
    }

    /// Makes `paths` durable, with the folder's entries. Elsewhere than Linux: each file's data
    /// in the order it was written (records before their state file), then the folder; a file
    /// replaced or deleted since needs no sync of its own.
    fn sync_files(&self, paths: Vec<PathBuf>) -> Result<(), CheckpointError> {
        // On Linux one `syncfs` writes every file and rename of the filesystem in one journal
        // commit, where an fsync per file pays a commit each (12 files for a 3-epoch run).
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let dir = std::fs::File::open(&self.dir).map_err(self.io(&self.dir))?;
            // SAFETY: `dir` is an open descriptor for the call's duration.
            if unsafe { libc::syncfs(dir.as_raw_fd()) } == 0 {
                return Ok(());
            }
        }
        for path in paths {
            match std::fs::File::open(&path) {
                Ok(file) => file.sync_data().map_err(self.io(&path))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.io(&path)(e)),
            }
        }
        // Directory fsync is how POSIX persists renames; not every platform allows opening one.
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            dir.sync_all().map_err(self.io(&self.dir))?;
        }
        Ok(())
    }
}

/// Drops each `Write(e)` that a later `Delete(e)` in the same batch undoes, and that delete.
fn coalesce(jobs: Vec<Job>) -> Vec<Job> {
    let deleted: Vec<Slot> = jobs
        .iter()
        .filter_map(|job| match job {
            Job::Delete(slot) => Some(*slot),
            Job::Write { .. } => None,
        })
        .collect();
    let written: Vec<Slot> = jobs
        .iter()
        .filter_map(|job| match job {
            Job::Write { slot, .. } => Some(*slot),
            Job::Delete(_) => None,
        })
        .collect();
    jobs.into_iter()
        .filter(|job| match job {
            Job::Write { slot, .. } | Job::Delete(slot) => {
                !(written.contains(slot) && deleted.contains(slot))
            }
        })
        .collect()
}

enum Job {
    Write {
        slot: Slot,
        encode: Box<dyn FnOnce() -> Result<Encoded, CheckpointError> + Send>,
    },
    Delete(Slot),
}

/// The bytes of a checkpoint's records, taken on the caller's thread: the tensors a wgpu (CubeCL)
/// read hands back are views into a pooled staging buffer, which later reads of the same device
/// may overwrite. Encoded on the writer thread instead, a record of epoch 2 held Adam moments of
/// epoch 3 on wgpu, and a resume from it diverged (`tests/runtime/checkpoints.rs`, run on wgpu
/// in `.ci/run`). Copying the bytes is cheap next to reading them off the device; hashing and
/// writing them stay on the writer thread.
fn record_bytes(slot: Slot, records: Records) -> Result<Vec<(String, Vec<u8>)>, CheckpointError> {
    let Records {
        model,
        optimizer,
        scheduler,
        ema,
    } = records;
    let to_vec = |kind: &str, bytes: Result<Bytes, burn::store::RecordError>| {
        bytes
            .map(|b| (slot.record_name(kind), b.to_vec()))
            .map_err(|e| CheckpointError::Damaged {
                file: PathBuf::from(slot.record_name(kind)),
                reason: format!("cannot serialize: {e}"),
            })
    };
    let mut records = vec![
        to_vec("model", model.into_bytes())?,
        to_vec("optim", optimizer.into_bytes())?,
        to_vec("scheduler", scheduler.into_bytes())?,
    ];
    if let Some(ema) = ema {
        records.push(to_vec(EMA, ema.into_bytes())?);
    }
    Ok(records)
}

/// A checkpoint's files: its records, then the state file listing their digests. Runs on the
/// writer thread.
fn encode(
    slot: Slot,
    mut state: SavedState,
    records: Vec<(String, Vec<u8>)>,
) -> Result<Encoded, CheckpointError> {
    state.files = records
        .iter()
        .map(|(name, bytes)| (name.clone(), Digest::of(bytes)))
        .collect();
    let state = serde_json::to_vec_pretty(&state)
        .map(|json| seal(&json))
        .map_err(|e| CheckpointError::Damaged {
            file: PathBuf::from(slot.state_name()),
            reason: format!("cannot serialize: {e}"),
        })?;
    Ok(Encoded { records, state })
}

/// A checkpoint's file contents: `(file name, bytes)` of each record, and the state file.
struct Encoded {
    records: Vec<(String, Vec<u8>)>,
    state: Vec<u8>,
}

/// The writer thread of a run; files are written in the order they are submitted.
pub struct Writer {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    error: Arc<Mutex<Option<CheckpointError>>>,
}

impl Writer {
    /// Queues `slot`: the records (serialized now, so the values are those of this instant),
    /// then the state file, both written on the writer thread. An encoding failure of the
    /// state is reported by the next call, or by [`Writer::finish`].
    pub fn write(
        &self,
        slot: Slot,
        state: SavedState,
        records: Records,
    ) -> Result<(), CheckpointError> {
        let records = record_bytes(slot, records)?;
        self.submit(Job::Write {
            slot,
            encode: Box::new(move || encode(slot, state, records)),
        })
    }

    /// Queues the deletion of `slot`'s files.
    pub fn delete(&self, slot: Slot) -> Result<(), CheckpointError> {
        self.submit(Job::Delete(slot))
    }

    fn submit(&self, job: Job) -> Result<(), CheckpointError> {
        self.check()?;
        if let Some(jobs) = &self.jobs {
            // The thread only stops when the channel closes, so a send cannot fail while
            // `self` lives.
            let _ = jobs.send(job);
        }
        Ok(())
    }

    /// The first failure of the writer thread so far, if any.
    pub fn check(&self) -> Result<(), CheckpointError> {
        match self.error.lock().ok().and_then(|mut e| e.take()) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Waits for every queued write, then reports the first failure.
    pub fn finish(mut self) -> Result<(), CheckpointError> {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.check()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CheckpointDir, CheckpointError, Encoded, Job, Slot, Unsynced, coalesce};

    #[test]
    fn a_deletion_waits_for_the_sync_and_never_removes_newer_files() {
        let run = tempfile::tempdir().unwrap();
        let dir = CheckpointDir::new(run.path());
        std::fs::create_dir_all(dir.path()).unwrap();
        let state = |slot: Slot| Job::Write {
            slot,
            encode: Box::new(move || {
                Ok(Encoded {
                    records: Vec::new(),
                    state: format!("{slot}").into_bytes(),
                })
            }),
        };
        let exists = |slot: Slot| dir.path().join(slot.state_name()).exists();
        let mut unsynced = Unsynced::default();
        dir.run(state(Slot::Epoch(1)), &mut unsynced).unwrap();
        dir.sync(&mut unsynced).unwrap();
        dir.run(state(Slot::Epoch(2)), &mut unsynced).unwrap();
        // Epoch 2 is not synced yet: epoch 1 stays until it is.
        dir.run(Job::Delete(Slot::Epoch(1)), &mut unsynced).unwrap();
        assert!(exists(Slot::Epoch(1)));
        dir.sync(&mut unsynced).unwrap();
        assert!(!exists(Slot::Epoch(1)) && exists(Slot::Epoch(2)));
        // A waiting deletion of a slot written again is dropped, not carried out on new files.
        dir.run(state(Slot::Interrupted), &mut unsynced).unwrap();
        dir.run(Job::Delete(Slot::Interrupted), &mut unsynced)
            .unwrap();
        dir.run(state(Slot::Interrupted), &mut unsynced).unwrap();
        dir.sync(&mut unsynced).unwrap();
        assert!(exists(Slot::Interrupted));
    }

    #[test]
    fn a_new_writer_removes_records_left_without_their_state_file() {
        let run = tempfile::tempdir().unwrap();
        let dir = CheckpointDir::new(run.path());
        std::fs::create_dir_all(dir.path()).unwrap();
        let files = [
            "state-2.json",
            "model-2.bpk",
            "optim-2.bpk",
            // A kill while epoch 1 was pruned: its state file went first.
            "optim-1.bpk",
            "scheduler-1.bpk",
            "ema-1.bpk",
            // A kill while an interrupted step was written: its state file comes last.
            "model-interrupted.bpk",
            ".model-3.bpk.tmp-9",
            "notes.txt",
        ];
        for file in files {
            std::fs::write(dir.path().join(file), b"x").unwrap();
        }
        dir.writer().unwrap().finish().unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["model-2.bpk", "notes.txt", "optim-2.bpk", "state-2.json"]
        );
    }

    fn write(epoch: usize) -> Job {
        Job::Write {
            slot: Slot::Epoch(epoch),
            encode: Box::new(|| {
                Err(CheckpointError::Missing {
                    epoch: 0,
                    dir: Default::default(),
                    available: Vec::new(),
                })
            }),
        }
    }

    fn delete(epoch: usize) -> Job {
        Job::Delete(Slot::Epoch(epoch))
    }

    fn slots(jobs: &[Job]) -> Vec<String> {
        jobs.iter()
            .map(|j| match j {
                Job::Write { slot, .. } => format!("w{slot}"),
                Job::Delete(slot) => format!("d{slot}"),
            })
            .collect()
    }

    #[test]
    fn a_write_deleted_in_the_same_batch_is_skipped() {
        let jobs = vec![write(3), delete(1), write(4), delete(3), write(5)];
        assert_eq!(slots(&coalesce(jobs)), ["d1", "w4", "w5"]);
        // A delete of an epoch written in an earlier batch stays.
        assert_eq!(slots(&coalesce(vec![delete(2), write(4)])), ["d2", "w4"]);
        // Epoch 3's files and the interrupted ones are different slots.
        assert_eq!(
            slots(&coalesce(vec![write(3), Job::Delete(Slot::Interrupted)])),
            ["w3", "dinterrupted"]
        );
    }
}
