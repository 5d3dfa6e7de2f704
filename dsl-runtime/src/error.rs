//! Why a run stopped.

use std::path::PathBuf;

use burn::tensor::TensorReadError;

use crate::data::DataError;
use crate::history::Split;

/// Why [`Fit::run`](crate::fit::Fit::run) returned without finishing.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// A setting cannot train.
    #[error("invalid fit option `{option}`: {message}")]
    InvalidOption {
        /// The setting, as named in [`FitOptions`](crate::config::options::FitOptions).
        option: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// A callback asked [`EpochEnd::value`](crate::fit::callback::EpochEnd::value) for a
    /// metric the run does not record (a typo would otherwise read `None` forever).
    #[error(
        "a callback asked `EpochEnd::value` for `{asked}`, which this run does not record: \
         {suggestion}the recorded metrics are {recorded}; to read another, add it to `metrics: [..]`"
    )]
    UnrecordedMetric {
        /// `split.metric` as asked.
        asked: String,
        /// "did you mean `..`? ", or nothing.
        suggestion: String,
        /// The recorded metrics, comma-separated.
        recorded: String,
    },
    /// A setting of the config layer (an option out of its range, a device, a schedule, an
    /// optimizer argument, a module path, a setting Burn's engine does not honour).
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// Data-parallel training cannot start or go on (`data_parallel: mpi`).
    #[error(transparent)]
    Parallel(#[from] crate::parallel::ParallelError),
    /// A dataset could not be loaded (from a file, a database, ...).
    #[error("cannot load the dataset: {0}")]
    Dataset(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A model's weights could not be written to or read from a file.
    #[error("weights file {path}: {message}")]
    Weights {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A split has no sample.
    #[error("the {split} dataset is empty: give it at least one sample")]
    EmptyDataset {
        /// The empty split.
        split: Split,
    },
    /// An `at_epoch_end` hook returned an error: the run stops before the epoch's checkpoint.
    #[error("the `at_epoch_end` hook failed at epoch {epoch}: {message}")]
    EpochHook {
        /// The epoch whose end it was.
        epoch: usize,
        /// The hook's error.
        message: String,
    },
    /// `--mlflow-sync` could not send what the server lacks (the server down, refusing, or the
    /// run directory unreadable): not a mistake on the command line, so not exit 2.
    #[error("MLflow sync: {0}")]
    Tracking(String),
    /// A resumed run's `metrics.csv` no longer holds the rows its checkpoint recorded.
    #[error(transparent)]
    MetricsDamaged(#[from] crate::output::MetricsDamaged),
    /// The run directory cannot be created or written; raised before the first epoch.
    #[error(
        "cannot write the run directory {path}: {source}; free space there or choose another folder: `--artifacts DIR` (the `artifacts` key of `training!`, `FitOptions::artifacts` in code)"
    )]
    RunDir {
        /// The run directory.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// `--verify`: the rerun's values differ from the recorded run's.
    #[error(
        "not reproduced: {}: {difference}{}",
        run.display(),
        match causes.as_slice() {
            [] => "\nno recorded fact differs (versions, git commit, data fingerprints, settings): look for a change the record cannot see (code outside git, a dataset item outside the fingerprint's sample, a nondeterministic backend)".to_owned(),
            causes => format!("\nwhat differs from the recorded run:\n  - {}", causes.join("\n  - ")),
        }
    )]
    NotReproduced {
        /// The recorded run's directory.
        run: PathBuf,
        /// The first value that differs, with its step or epoch.
        difference: String,
        /// Each recorded fact that differs in the rerun.
        causes: Vec<String>,
    },
    /// Resuming would continue a run with other settings than it was trained with.
    #[error(
        "resuming would mix two experiments: {}; {}, or pass `--resume-changed` to continue anyway (recorded in config.json)",
        changes.join("; "),
        resume_fix(changes)
    )]
    ResumeChanged {
        /// Each differing setting: `key: saved X, now Y`.
        changes: Vec<String>,
    },
    /// A run's `config.json` does not fit the experiment's config type (a hyperparameter
    /// renamed or retyped since the run), so its model cannot be rebuilt as the run built it.
    #[error(
        "{}: {message}; the model is built with the config the run recorded: load a run of this version of the experiment, or edit the file's `hyperparameters` to fit it",
        path.display()
    )]
    SavedConfig {
        /// The run's `config.json`.
        path: PathBuf,
        /// What does not fit.
        message: String,
    },
    /// `load`/`load_best` found no run to read.
    #[error("{}", match run {
        Some(run) => format!("{} has no run `{run}`: list it to see the runs, or leave `run` out for the newest", dir.display()),
        None => format!("{} has no run yet: train the experiment first", dir.display()),
    })]
    NoRun {
        /// The experiment's folder of runs.
        dir: PathBuf,
        /// The run asked for, if any.
        run: Option<String>,
    },
    /// Starting the loader's worker threads failed.
    #[error("cannot start data loader threads: {0}; lower `workers`")]
    Workers(std::io::Error),
    /// A batch could not be built.
    #[error("epoch {epoch}, {split} batch {batch}: {source}")]
    Data {
        /// The split being loaded.
        split: Split,
        /// The epoch being run.
        epoch: usize,
        /// 1-based batch index within the epoch.
        batch: usize,
        /// The underlying failure.
        source: DataError,
    },
    /// A metric could not read its tensors back from the device.
    #[error("metric {split}.{metric} could not read its input: {source}")]
    Metric {
        /// The split of the metric.
        split: Split,
        /// The metric's key.
        metric: String,
        /// The underlying failure.
        source: TensorReadError,
    },
    /// The device failed while finishing a step's work.
    #[error("the device failed: {0}")]
    Device(#[from] burn::tensor::ExecutionError),
    /// Writing or reading a checkpoint failed.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// SIGINT or SIGTERM arrived; the current step finished and the run stopped.
    #[error(
        "interrupted at epoch {epoch}, step {step}; {}",
        match (saved_here, checkpoint) {
            (true, _) => "saved at this step: run again with `--resume latest` (`resume: latest` in `training!`) to continue from it".to_owned(),
            (false, Some(e)) => format!("the last checkpoint is epoch {e}: run again with `--resume latest` (`resume: latest` in `training!`) to continue after it"),
            (false, None) => "no epoch was checkpointed yet: the next run starts over".to_owned(),
        }
    )]
    Interrupted {
        /// The epoch that was running.
        epoch: usize,
        /// The last completed global step.
        step: usize,
        /// Whether the run was checkpointed at that step (it is when every training metric can
        /// carry its state over; otherwise `resume: latest` trains the epoch again).
        saved_here: bool,
        /// The newest checkpointed epoch.
        checkpoint: Option<usize>,
    },
    /// Burn's `SupervisedTraining` (engine `burn`) reported an error.
    #[error("Burn's training engine failed: {0}")]
    Engine(#[source] std::sync::Arc<burn::train::TrainingError>),
    /// A training metric could not take back the state an interrupted run saved for it.
    #[error("cannot resume inside the epoch: {0}")]
    Restore(#[from] crate::metric::RestoreError),
    /// Installing the Ctrl-C/SIGTERM handlers failed.
    #[error("cannot watch for Ctrl-C: {0}")]
    Signals(std::io::Error),
    /// The training loss became NaN or infinite; training stopped before the next step.
    #[error(
        "the training loss is {value} at epoch {epoch}, step {step}: lower the learning rate or check the data"
    )]
    NonFiniteLoss {
        /// The epoch of the step.
        epoch: usize,
        /// The global, 1-based step.
        step: usize,
        /// The offending loss value.
        value: f32,
    },
    /// Weights became NaN or infinite during an epoch (found at its end, also when the loss is
    /// not recorded); that epoch was not checkpointed.
    #[error(
        "{count} weights are NaN or infinite after epoch {epoch}; it was not checkpointed: lower the learning rate or check the data (record `train.loss` to see the step where the loss diverged)"
    )]
    NonFiniteWeights {
        /// The epoch that produced them.
        epoch: usize,
        /// How many weights are not finite.
        count: i64,
    },
}

impl FitError {
    /// A dataset loading failure, for `?` in the dataset expressions of `training!`: any error,
    /// or a message.
    pub fn dataset(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        FitError::Dataset(error.into())
    }
}

/// A command-line mistake (a flag, a `--set`, a sweep's grid), reported with exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(pub(crate) String);

impl CliError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// A setting that cannot train: which, what is wrong and what to do. The config layer's error
/// (also raised by the model's and the engine's checks of settings), carried by
/// [`FitError::Setting`]; its text is that of [`FitError::InvalidOption`].
#[derive(Debug, thiserror::Error)]
#[error("invalid fit option `{option}`: {message}")]
pub struct SettingError {
    /// The setting, as named in [`FitOptions`](crate::config::options::FitOptions) or the config.
    pub option: &'static str,
    /// What is wrong and what to do.
    pub message: String,
}

/// How to resume with the saved settings: the saved config for config values, the saved
/// number of processes (not a config value) for `ranks`.
fn resume_fix(changes: &[String]) -> String {
    let mut fixes = Vec::new();
    for change in changes {
        match change.strip_prefix("`ranks`: saved ") {
            Some(saved) => {
                let saved = saved.split(',').next().unwrap_or_default();
                fixes.push(match saved.parse::<usize>() {
                    Ok(n) => format!("relaunch with `mpirun -n {n}`, as the run was trained"),
                    Err(_) => "start it without `mpirun`, as the run was trained".to_owned(),
                });
            }
            None if fixes.iter().all(|f| !f.starts_with("resume with")) => {
                fixes.push(
                    "resume with the saved values (e.g. `--config <run>/config.json`)".to_owned(),
                );
            }
            None => {}
        }
    }
    fixes.join(" and ")
}
