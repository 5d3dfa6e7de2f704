//! The loop's features at the edges of an epoch, as hooks it iterates: freezing (which may
//! unfreeze at an epoch's start), the plateau schedule (the rate's factor for the epoch), the
//! user's callbacks, saving (a checkpoint at an epoch's end) and early stopping. The loop calls
//! [`Features::epoch_start`] and [`Features::epoch_end`]; each feature implements
//! [`EpochHook`] in its own module. Statically dispatched: the features are concrete types in a
//! fixed order, and one a run does not use is `None`, a branch per epoch (nothing here runs per
//! step).

use burn::train::LearnerModel;

use super::early_stop::{EarlyStop, lr_scale};
use super::epoch::TrainState;
use super::freeze::Freeze;
use super::saving::Saving;
use crate::config::spec::PlateauRule;
use crate::erased::AnyModule;
use crate::error::FitError;
use crate::fit::callback::Callbacks;
use crate::history::History;

/// What a hook sees at an edge of epoch `epoch`, and may change.
pub(super) struct Edge<'a, M: LearnerModel> {
    pub epoch: usize,
    pub state: &'a mut TrainState<M>,
    pub history: &'a History,
    /// The digest of `metrics.csv` as flushed at the epoch's end, for the checkpoint.
    pub metrics: crate::digest::Digest,
    pub hyperparameters: &'a serde_json::Value,
    /// The callbacks' states at the epoch's end, for the checkpoint it writes.
    pub callback_states: Vec<serde_json::Value>,
}

/// A feature of the loop at the edges of an epoch.
pub(super) trait EpochHook<M: LearnerModel> {
    /// Before the epoch trains.
    fn epoch_start(&mut self, _edge: &mut Edge<'_, M>) {}
    /// After the epoch is validated; `true` asks the run to stop after it.
    fn epoch_end(&mut self, _edge: &mut Edge<'_, M>) -> Result<bool, FitError> {
        Ok(false)
    }
}

impl<M: LearnerModel, H: EpochHook<M>> EpochHook<M> for Option<H> {
    fn epoch_start(&mut self, edge: &mut Edge<'_, M>) {
        if let Some(hook) = self {
            hook.epoch_start(edge);
        }
    }

    fn epoch_end(&mut self, edge: &mut Edge<'_, M>) -> Result<bool, FitError> {
        match self {
            Some(hook) => hook.epoch_end(edge),
            None => Ok(false),
        }
    }
}

/// The run's features, in the order their hooks run: freezing and the plateau schedule set up
/// the epoch before the callbacks hear of it; at its end the callbacks run before saving (the
/// checkpoint keeps their states) and early stopping decides last.
pub(super) struct Features {
    pub freeze: Option<Freeze>,
    pub plateau: Option<PlateauRule>,
    pub callbacks: Callbacks,
    pub saving: Option<Saving>,
    pub early_stop: Option<EarlyStop>,
}

impl<M: LearnerModel> EpochHook<M> for Features {
    fn epoch_start(&mut self, edge: &mut Edge<'_, M>) {
        self.freeze.epoch_start(edge);
        self.plateau.epoch_start(edge);
        self.callbacks.epoch_start(edge);
    }

    fn epoch_end(&mut self, edge: &mut Edge<'_, M>) -> Result<bool, FitError> {
        // Every feature hears of the epoch's end, whichever asks to stop.
        let by_callback = self.callbacks.epoch_end(edge)?;
        self.saving.epoch_end(edge)?;
        // After saving: a typo in a callback costs no trained epoch.
        self.callbacks.check_asked(edge.history)?;
        let by_early_stop = self.early_stop.epoch_end(edge)?;
        Ok(by_callback || by_early_stop)
    }
}

impl<M: LearnerModel> EpochHook<M> for Freeze {
    fn epoch_start(&mut self, edge: &mut Edge<'_, M>) {
        if self.unfreezes_at(edge.epoch) {
            let model = AnyModule::new(edge.state.model.clone());
            edge.state.model = self.unfreeze(model).into_inner();
        }
    }
}

impl<M: LearnerModel> EpochHook<M> for PlateauRule {
    fn epoch_start(&mut self, edge: &mut Edge<'_, M>) {
        edge.state.lr_scale = lr_scale(self, edge.history, edge.epoch);
    }
}

impl<M: LearnerModel> EpochHook<M> for Callbacks {
    fn epoch_start(&mut self, edge: &mut Edge<'_, M>) {
        self.each(|c| c.epoch_start(edge.epoch));
    }

    fn epoch_end(&mut self, edge: &mut Edge<'_, M>) -> Result<bool, FitError> {
        self.tell_epoch_end(edge.epoch, edge.history);
        edge.callback_states = self.states();
        Ok(self.stop().is_some())
    }
}

impl<M: LearnerModel> EpochHook<M> for Saving {
    fn epoch_end(&mut self, edge: &mut Edge<'_, M>) -> Result<bool, FitError> {
        self.callbacks = std::mem::take(&mut edge.callback_states);
        let record = super::saving::Record {
            history: edge.history,
            metrics: edge.metrics,
        };
        self.epoch_done(edge.epoch, edge.state, record, edge.hyperparameters)?;
        Ok(false)
    }
}

impl<M: LearnerModel> EpochHook<M> for EarlyStop {
    fn epoch_end(&mut self, edge: &mut Edge<'_, M>) -> Result<bool, FitError> {
        Ok(self.should_stop(edge.history, edge.epoch))
    }
}
