//! The scalar settings of a run, saved as `config.json`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use burn_experiment_vocabulary::bounds;

use crate::checkpoint::{Policy, Resume};
use crate::config::precision::Precision;
use crate::config::spec::{EarlyStopping, GradClip, LoraSpec, PlateauRule};
use crate::error::FitError;
use crate::error::SettingError;
use crate::output::runs::ExperimentRuns;

/// Scalar settings of a run. Defaults: 1 epoch, batch size 1 (Burn's default), dataset order,
/// no worker thread, no gradient accumulation, runs in `artifacts/run/run-<N>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitOptions {
    /// Name of the experiment; its runs are `artifacts/<name>/run-<N>`.
    pub name: String,
    /// The run to resume or continue (`run-3` or `3`); with `resume` and no `run`, the newest.
    /// A fresh run leaves it `None` and gets a new `run-<N>`.
    pub run: Option<String>,
    /// Root folder of run directories.
    pub artifacts: PathBuf,
    /// Number the first epoch of this call gets (1 for a fresh run). Continuing a run at epoch
    /// `n + 1` replays the shuffle order an uninterrupted run would have used.
    pub first_epoch: usize,
    /// Last epoch to train (inclusive).
    pub epochs: usize,
    /// Samples per batch; the last batch of an epoch may be shorter.
    pub batch_size: usize,
    /// Shuffle seed for the training split; `None` keeps dataset order.
    pub shuffle: Option<u64>,
    /// The run's seed (`seed:`): the random numbers a training step draws (dropout) come from
    /// a stream of its own, seeded from this seed (0 without one), the epoch and the batch's
    /// position in it, so they do not depend on what ran before: the same on resume, with
    /// workers, and on every rank of a data-parallel run. Not written when `None`, as before
    /// the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Threads building batches ahead of the training thread (0: build on it).
    pub workers: usize,
    /// Batches whose gradients are summed before each optimizer step.
    pub grad_accumulation: Option<usize>,
    /// Gradient clipping before every optimizer step.
    pub grad_clip: Option<GradClip>,
    /// Stop when a validation or training metric stops improving.
    pub early_stopping: Option<EarlyStopping>,
    /// Checkpoint after every epoch into `<run dir>/checkpoint`, keeping the epochs these
    /// policies keep (and always the newest); `None` writes no checkpoint. A run that does not
    /// resume starts over: it clears the folder first.
    pub checkpoint: Option<Vec<Policy>>,
    /// Continue from a checkpoint of the run `run` names, else of the newest run.
    pub resume: Option<Resume>,
    /// Resume even though settings that decide the training differ from the checkpoint's
    /// (they are listed in `config.json` under `resumed_with_changes`); without it such a
    /// resume is refused, since it would mix two experiments in one run.
    #[serde(default)]
    pub resume_changed: bool,
    /// Train on at most this many batches per epoch (a quick look at a large dataset).
    pub limit_train_batches: Option<usize>,
    /// Validate on at most this many batches per epoch.
    pub limit_valid_batches: Option<usize>,
    /// Write the run directory (`config.json`, `metrics.csv`, `summary.md`, `curves.svg`,
    /// checkpoints); `false` for a smoke test that leaves nothing on disk.
    pub write_files: bool,
    /// Print nothing (no progress bar, no epoch lines, no summary).
    pub quiet: bool,
    /// Start a fresh run from the weights of this file (safetensors, or a run's
    /// `checkpoint/model-N.bpk`); a resumed run takes its checkpoint's weights instead, optimizer
    /// state included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from: Option<PathBuf>,
    /// Module paths of the model (`mlp.fc1`, `mlp.fc2.bias`) whose parameters are not trained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freeze: Vec<String>,
    /// The epoch from which the `freeze` paths train again; `None`: frozen for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfreeze: Option<usize>,
    /// Decay of an exponential moving average of the weights, in (0, 1): validation, `best(..)`
    /// and the checkpoints loaded for evaluation use the average.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ema: Option<f64>,
    /// Module paths (`model.generator`) the moving average covers; empty: every parameter.
    /// The others follow the trained weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ema_on: Vec<String>,
    /// Recompute memory-bound activations in the backward pass instead of keeping them (Burn's
    /// balanced gradient checkpointing): less memory, more compute, the same gradients.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gradient_checkpointing: bool,
    /// LoRA adapters on some of the model's weights, the rest frozen (`training!` prefixes the
    /// paths with `model.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<LoraSpec>,
    /// Lower the learning rate when a metric stops improving (`lr_schedule: plateau(..)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plateau: Option<PlateauRule>,
    /// The number of processes of a data-parallel run (`data_parallel: mpi` under `mpirun`),
    /// set by the fit loop, recorded so that resuming with another count is a changed setting;
    /// absent in one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
    /// The MLflow server the run is tracked on (the command line sets it from
    /// `MLFLOW_TRACKING_URI`); absent, no tracking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlflow: Option<crate::output::mlflow::Mlflow>,
    /// Training steps whose losses are read from the device in one transfer (1: every step):
    /// on a GPU each read waits for the device, so the loop does not read every step. Every
    /// step's value still reaches `metrics.csv`; the progress bar moves at each read. A run
    /// with callbacks reads every step.
    #[serde(default = "read_every")]
    pub read_every: usize,
    /// The float type of the forward and backward passes and of validation (`precision`):
    /// the optimizer steps f32 weights whatever it is. Not written when f32.
    #[serde(default, skip_serializing_if = "Precision::is_f32")]
    pub precision: Precision,
    /// A callback the command line adds to the run (a study's trial reports each epoch's
    /// objective and is told when to stop): not a setting, so not written.
    #[serde(skip)]
    pub watch: Option<Watch>,
}

/// What the command line watches of a run (a study's trial reports its objective): told of the
/// run's start and of each epoch's end, it may stop the run after that epoch, saying why.
pub trait EpochWatch: Send {
    /// The run starts in `run_dir` at `first_epoch` (after a resume's restored ones) and would
    /// train to `last_epoch`.
    fn run_start(
        &mut self,
        run_dir: &std::path::Path,
        first_epoch: usize,
        last_epoch: usize,
    ) -> Option<String>;
    /// `epoch` was validated; its values are in `history`.
    fn epoch_end(&mut self, epoch: usize, history: &crate::history::History) -> Option<String>;
}

/// An [`EpochWatch`] shared with whoever set it, who reads what it learnt once the run ends.
#[derive(Clone)]
pub struct Watch(pub std::sync::Arc<std::sync::Mutex<dyn EpochWatch>>);

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

/// The same watch, not one with equal fields: options are equal when they share it.
impl PartialEq for Watch {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// [`FitOptions::read_every`]'s default.
pub const READ_EVERY: usize = 32;

fn read_every() -> usize {
    READ_EVERY
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            name: "run".to_owned(),
            run: None,
            artifacts: PathBuf::from("artifacts"),
            first_epoch: 1,
            epochs: 1,
            batch_size: 1,
            shuffle: None,
            seed: None,
            workers: 0,
            grad_accumulation: None,
            grad_clip: None,
            early_stopping: None,
            checkpoint: None,
            resume: None,
            resume_changed: false,
            limit_train_batches: None,
            limit_valid_batches: None,
            write_files: true,
            quiet: false,
            init_from: None,
            freeze: Vec::new(),
            unfreeze: None,
            ema: None,
            ema_on: Vec::new(),
            gradient_checkpointing: false,
            lora: None,
            plateau: None,
            ranks: None,
            mlflow: None,
            read_every: READ_EVERY,
            precision: Precision::F32,
            watch: None,
        }
    }
}

impl FitOptions {
    /// The runs of this experiment.
    pub fn runs(&self) -> ExperimentRuns {
        ExperimentRuns::new(&self.artifacts, &self.name)
    }

    /// The directory this run writes to, created when files are written: a new `run-<N>` for a
    /// fresh run; when resuming, the run `run` names, else the newest (a new one when there is
    /// none yet); `run` without `resume` continues that run in this process
    /// ([`FitReport::resume`](crate::fit::FitReport::resume)).
    pub fn resolve_run_dir(&self) -> Result<PathBuf, FitError> {
        let runs = self.runs();
        let io = |source| FitError::RunDir {
            path: runs.path().to_owned(),
            source,
        };
        let named = match &self.run {
            Some(id) => Some(runs.named(id).ok_or_else(|| {
                FitError::Setting(SettingError {
                    option: "run",
                    message: format!("`{id}` is not a run id: write `run-3` or `3`"),
                })
            })?),
            None => None,
        };
        match (named, self.resume.is_some()) {
            (Some(path), resuming) => {
                let exists = path.is_dir();
                if !exists && (resuming || self.first_epoch > 1) {
                    let existing = runs.numbers().map_err(io)?;
                    return Err(FitError::Setting(SettingError {
                        option: "run",
                        message: format!(
                            "{} does not exist; the runs of {} are {existing:?}",
                            path.display(),
                            runs.path().display()
                        ),
                    }));
                }
                if exists && !resuming && self.first_epoch == 1 && self.write_files {
                    return Err(FitError::Setting(SettingError {
                        option: "run",
                        message: format!(
                            "{} already exists and a fresh run never overwrites one: resume it (`--resume latest`), or leave `run` out for a new run",
                            path.display()
                        ),
                    }));
                }
                if self.write_files {
                    std::fs::create_dir_all(&path).map_err(io)?;
                    crate::output::runs::refuse_link(runs.path()).map_err(io)?;
                    crate::output::runs::refuse_link(&path).map_err(io)?;
                }
                Ok(path)
            }
            (None, true) => match runs.newest().map_err(io)? {
                Some(path) => Ok(path),
                None if self.write_files => runs.create_next().map_err(io),
                None => runs.next().map_err(io),
            },
            (None, false) if self.write_files => runs.create_next().map_err(io),
            (None, false) => runs.next().map_err(io),
        }
    }

    /// The settings of a smoke test like Lightning's `fast_dev_run`: one epoch of one batch per
    /// split, no file written, no checkpoint read.
    pub fn fast_dev_run(self) -> Self {
        Self {
            first_epoch: 1,
            epochs: 1,
            limit_train_batches: Some(1),
            limit_valid_batches: Some(1),
            write_files: false,
            checkpoint: None,
            resume: None,
            early_stopping: None,
            ..self
        }
    }

    /// Rejects settings that cannot train, naming the setting and the fix.
    pub fn validate(&self) -> Result<(), FitError> {
        let invalid = |option: &'static str, message: &str| {
            Err(FitError::Setting(SettingError {
                option,
                message: message.to_owned(),
            }))
        };
        // The bounds `training!` checks at compile time (`burn_experiment_vocabulary::bounds`), for values
        // that come from the command line, a config file or code.
        let within = |key: &str, value: f64| bounds::of(key).admits(value);
        if !within("batch_size", self.batch_size as f64) {
            return invalid(
                "batch_size",
                &format!(
                    "is {}; it must be {}",
                    self.batch_size,
                    bounds::of("batch_size").describe()
                ),
            );
        }
        if self.first_epoch == 0 {
            return invalid("first_epoch", "epochs are numbered from 1");
        }
        if self.epochs < self.first_epoch {
            return invalid(
                "epochs",
                &format!(
                    "is {} but the run starts at epoch {}: set epochs to the last epoch to train",
                    self.epochs, self.first_epoch
                ),
            );
        }
        if self
            .grad_accumulation
            .is_some_and(|n| !within("grad_accumulation", n as f64))
        {
            return invalid(
                "grad_accumulation",
                "must be at least 1 (1 is the same as no accumulation)",
            );
        }
        match self.grad_clip {
            Some(GradClip::Norm(max)) if !within("grad_clip", max) => {
                return invalid("grad_clip", "norm(max) needs a positive max");
            }
            Some(GradClip::Value(max)) if !within("grad_clip", max.into()) => {
                return invalid("grad_clip", "value(max) needs a positive max");
            }
            Some(GradClip::ParamNorm(max)) if !within("grad_clip", max.into()) => {
                return invalid("grad_clip", "param_norm(max) needs a positive max");
            }
            _ => {}
        }
        if let Some(stop) = &self.early_stopping
            && !within("patience", stop.patience as f64)
        {
            return invalid("early_stopping", "patience must be at least 1 epoch");
        }
        for policy in self.checkpoint.iter().flatten() {
            match policy {
                Policy::KeepLast { n } if !within("keep_last", *n as f64) => {
                    return invalid("checkpoint", "keep_last(n) must keep at least 1 epoch");
                }
                Policy::Every { k } if !within("every", *k as f64) => {
                    return invalid("checkpoint", "every(k) needs a period of at least 1 epoch");
                }
                _ => {}
            }
        }
        if self.limit_train_batches == Some(0) || self.limit_valid_batches == Some(0) {
            return invalid(
                "limit_train_batches",
                "a batch limit must be at least 1 (leave it unset for every batch)",
            );
        }
        if !self.write_files && (self.checkpoint.is_some() || self.resume.is_some()) {
            return invalid(
                "write_files",
                "a run that writes no files cannot checkpoint or resume: unset `checkpoint` and `resume`",
            );
        }
        if self.resume.is_some() && self.checkpoint.is_none() {
            return invalid(
                "resume",
                "a resumable run also writes checkpoints: set `checkpoint` too",
            );
        }
        if self.unfreeze.is_some() && self.freeze.is_empty() {
            return invalid("unfreeze", "there is nothing to unfreeze: set `freeze` too");
        }
        if let Some(decay) = self.ema
            && !within("ema", decay)
        {
            return invalid(
                "ema",
                &format!("the decay is {decay}; it must be in (0, 1), e.g. 0.999"),
            );
        }
        if self.unfreeze == Some(0) {
            return invalid("unfreeze", "epochs are numbered from 1");
        }
        // The largest values (a count no run reaches, so that no loop over it runs for ever).
        let counts = [
            ("epochs", Some(self.epochs)),
            ("batch_size", Some(self.batch_size)),
            ("grad_accumulation", self.grad_accumulation),
            ("workers", Some(self.workers)),
            ("unfreeze", self.unfreeze),
            (
                "patience",
                self.early_stopping.as_ref().map(|stop| stop.patience),
            ),
        ];
        for (key, n) in counts {
            if let Some(n) = n
                && !within(key, n as f64)
            {
                return invalid(
                    key,
                    &format!("is {n}; it must be {}", bounds::of(key).describe()),
                );
            }
        }
        if self.name.is_empty() || self.name.contains(['/', '\\']) || self.name == ".." {
            return invalid("name", "must be a plain folder name such as `three_class`");
        }
        Ok(())
    }
}
