//! The checkpoint side of a run: what to write after each epoch and at an interrupt, and what
//! to delete.

use burn::train::LearnerModel;

use super::TrainOutputOf;
use super::epoch::TrainState;
use crate::checkpoint::{
    CheckpointDir, Digest, Policy, Records, SavedState, Slot, Within, Writer, retained,
};
use crate::erased::AnyModule;
use crate::history::History;
use crate::metric::SplitMetric;
use crate::{config::options::FitOptions, error::FitError};

/// What the run recorded when a checkpoint is taken: its values so far, and the digest of
/// `metrics.csv` (flushed) that holds them.
#[derive(Clone, Copy)]
pub(super) struct Record<'a> {
    pub history: &'a History,
    pub metrics: Digest,
}

/// The checkpoint side of a run: the writer, the epochs on disk and the keep rules.
pub(super) struct Saving {
    pub writer: Writer,
    pub saved: Vec<usize>,
    policies: Vec<Policy>,
    /// Whether an interrupted run's checkpoint is still there, to delete once an epoch ends.
    interrupted_on_disk: bool,
    /// The run's options as every state file saves them, serialized once.
    options: serde_json::Value,
    /// What the callbacks saved at the end of the last epoch, for the next state file.
    pub callbacks: Vec<serde_json::Value>,
}

impl Saving {
    /// The checkpoint side of a run that writes checkpoints, `None` otherwise. A run that does
    /// not continue from an interrupted run's checkpoint drops it (it is stale). Epochs on disk
    /// that the policies no longer keep (`history` is the run's so far) are deleted: a killed
    /// run may have left them before its deletions were carried out.
    pub fn open(
        checkpoints: &CheckpointDir,
        options: &FitOptions,
        continues_within: bool,
        history: &History,
    ) -> Result<Option<Self>, FitError> {
        let Some(policies) = &options.checkpoint else {
            return Ok(None);
        };
        let options = serde_json::to_value(options).map_err(|e| FitError::InvalidOption {
            option: "options",
            message: format!("cannot be saved in a checkpoint: {e}"),
        })?;
        let mut saving = Saving {
            options,
            writer: checkpoints.writer()?,
            saved: checkpoints.epochs()?,
            policies: policies.clone(),
            interrupted_on_disk: checkpoints.has_interrupted(),
            callbacks: Vec::new(),
        };
        if saving.interrupted_on_disk && !continues_within {
            saving.writer.delete(Slot::Interrupted)?;
            saving.interrupted_on_disk = false;
        }
        if let Some(&newest) = saving.saved.iter().max() {
            saving.release(newest, history)?;
        }
        Ok(Some(saving))
    }

    /// Queues `epoch`'s checkpoint, then the deletion of epochs no policy keeps any more and of
    /// the checkpoint an interrupted run left inside this epoch, if any.
    pub fn epoch_done<M: LearnerModel>(
        &mut self,
        epoch: usize,
        state: &TrainState<M>,
        record: Record<'_>,
        hyperparameters: &serde_json::Value,
    ) -> Result<(), FitError> {
        let history = record.history;
        self.write(
            Slot::Epoch(epoch),
            epoch,
            None,
            state,
            record,
            hyperparameters,
        )?;
        if self.interrupted_on_disk {
            self.writer.delete(Slot::Interrupted)?;
            self.interrupted_on_disk = false;
        }
        self.saved.retain(|&e| e != epoch);
        self.saved.push(epoch);
        self.release(epoch, history)
    }

    /// Deletes the saved epochs no policy keeps now that `newest` is written.
    fn release(&mut self, newest: usize, history: &History) -> Result<(), FitError> {
        let keep = retained(&self.policies, &self.saved, newest, history);
        for &old in self.saved.iter().filter(|e| !keep.contains(e)) {
            self.writer.delete(Slot::Epoch(old))?;
        }
        self.saved = keep;
        Ok(())
    }

    /// Ends a run interrupted inside an epoch: writes where it got to when every training
    /// metric can carry its state over (otherwise the epoch is trained again on resume, which
    /// keeps every metric exact), then waits for all writes. Returns whether it wrote.
    pub fn interrupted<M: LearnerModel>(
        self,
        epoch: usize,
        mut within: Within,
        train_metrics: &[Box<dyn SplitMetric<TrainOutputOf<M>>>],
        state: &TrainState<M>,
        record: Record<'_>,
        hyperparameters: &serde_json::Value,
    ) -> Result<bool, FitError> {
        let carried: Option<Vec<serde_json::Value>> =
            train_metrics.iter().map(|m| m.carry()).collect();
        let written = match carried {
            Some(carried) => {
                within.carried = carried;
                self.write(
                    Slot::Interrupted,
                    epoch - 1,
                    Some(within),
                    state,
                    record,
                    hyperparameters,
                )?;
                true
            }
            None => false,
        };
        self.writer.finish()?;
        Ok(written)
    }

    fn write<M: LearnerModel>(
        &self,
        slot: Slot,
        epoch: usize,
        within: Option<Within>,
        state: &TrainState<M>,
        record: Record<'_>,
        hyperparameters: &serde_json::Value,
    ) -> Result<(), FitError> {
        self.writer.write(
            slot,
            SavedState {
                epoch,
                files: Default::default(),
                history: record.history.epochs_only(),
                metrics: record.metrics,
                options: self.options.clone(),
                hyperparameters: hyperparameters.clone(),
                within,
                callbacks: self.callbacks.clone(),
                loss_scale: state.precision.as_ref().and_then(|low| low.scale),
            },
            Records {
                model: AnyModule::new(state.model.clone()).record(),
                optimizer: state.optimizer_record()?,
                scheduler: state.lr_scheduler.to_record(),
                ema: state
                    .ema
                    .as_ref()
                    .map(|ema| AnyModule::new(ema.average().clone()).record()),
            },
        )?;
        Ok(())
    }
}
