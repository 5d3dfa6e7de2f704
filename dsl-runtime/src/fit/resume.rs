//! Finding the checkpoint a run continues from.

use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::optim::ModuleOptimizer;
use burn::train::LearnerModel;

use super::TrainOutputOf;
use crate::checkpoint::{CheckpointDir, CheckpointError, Loaded, Resume, SavedState, Within};
use crate::history::History;
use crate::metric::SplitMetric;
use crate::{FitError, FitOptions};

/// Where a run starts: the model, optimizer and schedule (restored from a checkpoint when
/// resuming), the history so far, and the first epoch to train.
pub(super) struct Start<M> {
    pub model: M,
    pub optimizer: ModuleOptimizer,
    pub lr_scheduler: ModuleLrScheduler,
    pub history: History,
    pub first_epoch: usize,
    /// How far into `first_epoch` an interrupted run got.
    pub within: Option<Within>,
}

/// The start of a run: as given for a fresh run, else loaded from the checkpoint `resume`
/// names, with the training metrics of an interrupted epoch given back their state.
pub(super) fn restore<M: LearnerModel>(
    checkpoints: &CheckpointDir,
    options: &FitOptions,
    (model, optimizer, lr_scheduler): (M, ModuleOptimizer, ModuleLrScheduler),
    declared: History,
    train_metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
) -> Result<Start<M>, FitError> {
    let fresh = Start {
        model,
        optimizer,
        lr_scheduler,
        history: declared,
        first_epoch: options.first_epoch,
        within: None,
    };
    let Some(resume) = options.resume else {
        return Ok(fresh);
    };
    let Some(loaded) = load(checkpoints, resume, options.quiet)? else {
        return Ok(fresh);
    };
    let history = history(loaded.state.history, &fresh.history)?;
    let model =
        fresh
            .model
            .try_load_record(loaded.model)
            .map_err(|e| CheckpointError::Mismatch {
                file: checkpoints.model_file(loaded.slot),
                reason: e.to_string(),
            })?;
    if let Some(within) = &loaded.state.within {
        if within.carried.len() != train_metrics.len() {
            return Err(FitError::InvalidOption {
                option: "resume",
                message: "the interrupted run recorded other training metrics: resume with the same metrics".to_owned(),
            });
        }
        for (metric, carried) in train_metrics.iter_mut().zip(&within.carried) {
            metric.restore(carried)?;
        }
    }
    Ok(Start {
        model,
        optimizer: fresh.optimizer.load_record(loaded.optimizer),
        lr_scheduler: fresh.lr_scheduler.load_record(loaded.scheduler),
        history,
        first_epoch: loaded.state.epoch + 1,
        within: loaded.state.within,
    })
}

/// The checkpoint to resume from: `None` for `Latest` in a run that has none yet. `Latest` is
/// the checkpoint an interrupted run left inside an epoch when no epoch was completed after
/// it, else the newest epoch. A damaged newest checkpoint falls back to the previous intact
/// one, saying so on stderr; an explicitly requested epoch that is damaged is an error.
fn load(
    checkpoints: &CheckpointDir,
    resume: Resume,
    quiet: bool,
) -> Result<Option<Loaded>, FitError> {
    let loaded = match resume {
        Resume::Epoch(epoch) => Some(checkpoints.load(epoch)?),
        Resume::Latest => {
            let interrupted = match checkpoints.load_interrupted() {
                Ok(loaded) => loaded,
                Err(err @ CheckpointError::Damaged { .. }) => {
                    eprintln!("warning: the interrupted run's checkpoint is skipped: {err}");
                    None
                }
                Err(err) => return Err(err.into()),
            };
            let latest = match checkpoints.load_latest()? {
                Some((loaded, skipped)) => {
                    for note in skipped {
                        eprintln!("warning: {note}");
                    }
                    Some(loaded)
                }
                None => None,
            };
            match (interrupted, latest) {
                (Some(inside), Some(after)) if after.state.epoch > inside.state.epoch => {
                    Some(after)
                }
                (Some(inside), _) => Some(inside),
                (None, latest) => latest,
            }
        }
    };
    if !quiet {
        match &loaded {
            Some(Loaded {
                state:
                    SavedState {
                        epoch,
                        within: Some(within),
                        ..
                    },
                ..
            }) => eprintln!(
                "resuming inside epoch {} after batch {} (step {}) from {}",
                epoch + 1,
                within.batches,
                within.step,
                checkpoints.path().display()
            ),
            Some(loaded) => eprintln!(
                "resuming after epoch {} from {}",
                loaded.state.epoch,
                checkpoints.path().display()
            ),
            None => eprintln!(
                "no checkpoint in {}: starting from epoch 1",
                checkpoints.path().display()
            ),
        }
    }
    Ok(loaded)
}

/// The restored history, which must record the same metrics as this run.
fn history(restored: History, declared: &History) -> Result<History, FitError> {
    let names = |h: &History| -> Vec<String> {
        h.series()
            .iter()
            .map(|s| format!("{}.{}", s.split, s.metric))
            .collect()
    };
    if names(&restored) != names(declared) {
        return Err(FitError::InvalidOption {
            option: "resume",
            message: format!(
                "the checkpoint recorded metrics {:?} but this run records {:?}: resume with the same metrics",
                names(&restored),
                names(declared)
            ),
        });
    }
    Ok(restored)
}
