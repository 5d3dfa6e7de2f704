//! Typed hooks into a run: `callbacks: [..]` in `training!`, or [`Fit::callback`].
//!
//! Burn's Learner reports events to its own processors and renderers, which see metric entries
//! but cannot stop a run nor keep state in its checkpoints; these hooks do both. A run with no
//! callback skips every hook after one length check per step.
//!
//! [`Fit::callback`]: crate::fit::Fit::callback

use std::cell::RefCell;
use std::path::Path;

use crate::config::options::Watch;
use crate::error::FitError;
use crate::history::{History, Split};

/// What a hook asks of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// End the run after the current epoch (validated and checkpointed as usual); the reason is
    /// printed, written to `summary.md` and returned in [`FitReport::stopped`]. Asked from
    /// [`Callback::run_start`], no epoch is trained.
    ///
    /// [`FitReport::stopped`]: crate::fit::FitReport::stopped
    Stop(String),
}

/// The start of a run.
#[derive(Debug)]
pub struct RunStart<'a> {
    /// The first epoch this run trains (after the restored ones, when resuming).
    pub first_epoch: usize,
    /// The last epoch it would train.
    pub last_epoch: usize,
    /// Where its files go.
    pub run_dir: &'a Path,
}

/// One optimizer step.
#[derive(Clone, Copy, Debug)]
pub struct StepEnd {
    /// The epoch.
    pub epoch: usize,
    /// The global, 1-based training step (the `step` column of `metrics.csv`).
    pub step: usize,
    /// The batch's `train.loss`, when it is recorded.
    pub loss: Option<f64>,
    /// The learning rate the step used.
    pub lr: f64,
}

/// The end of an epoch: its values are in `history`.
#[derive(Clone, Copy, Debug)]
pub struct EpochEnd<'a> {
    /// The epoch just validated.
    pub epoch: usize,
    /// Every value recorded so far.
    pub history: &'a History,
    /// What [`EpochEnd::value`] was asked for that the run does not record: a typo there
    /// would otherwise read `None` forever, so the run ends with an error naming it.
    unrecorded: &'a RefCell<Vec<String>>,
}

impl<'a> EpochEnd<'a> {
    /// The end of `epoch`, e.g. to test a callback outside a run.
    pub fn new(epoch: usize, history: &'a History, unrecorded: &'a RefCell<Vec<String>>) -> Self {
        Self {
            epoch,
            history,
            unrecorded,
        }
    }

    /// This epoch's value of `split.metric`; `None` when it has no value this epoch. A metric
    /// the run does not record at all ends the run with an error naming the recorded ones
    /// (after this epoch is saved).
    pub fn value(&self, split: Split, metric: &str) -> Option<f64> {
        let Some(series) = self.history.get(split, metric) else {
            self.unrecorded
                .borrow_mut()
                .push(format!("{split}.{metric}"));
            return None;
        };
        series.at(self.epoch)
    }
}

/// The end of a run that trained to its end or was stopped by a callback or early stopping
/// (not one that failed or was interrupted).
#[derive(Clone, Copy, Debug)]
pub struct RunEnd<'a> {
    /// The last epoch completed.
    pub last_epoch: usize,
    /// Every value recorded.
    pub history: &'a History,
    /// Why a callback stopped the run, if one did.
    pub stopped: Option<&'a str>,
}

/// Hooks called by the fit loop, in the order of their `callbacks` list. Every method has a
/// default that does nothing, so a callback implements only what it uses. The hooks run on the
/// thread that runs the loop, so a callback need not be `Send`: it may hold an `Rc` or a
/// `RefCell` (`ui-tests/pass/training/callback_holding_an_rc.rs`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a callback",
    label = "`callbacks` takes values implementing `burn_experiment::callback::Callback`",
    note = "implement `Callback` for `{Self}`: every hook has a default, so implement just the ones you need"
)]
pub trait Callback {
    /// Before the first epoch.
    fn run_start(&mut self, _run: &RunStart<'_>) -> Control {
        Control::Continue
    }
    /// Before an epoch's first batch.
    fn epoch_start(&mut self, _epoch: usize) -> Control {
        Control::Continue
    }
    /// After each optimizer step.
    fn step_end(&mut self, _step: &StepEnd) -> Control {
        Control::Continue
    }
    /// After an epoch is validated, before its checkpoint is written.
    fn epoch_end(&mut self, _epoch: &EpochEnd<'_>) -> Control {
        Control::Continue
    }
    /// After the last epoch.
    fn run_end(&mut self, _end: &RunEnd<'_>) {}
    /// The callback's state, saved in every checkpoint so that a resumed run continues it;
    /// `None` (the default) for a callback without state.
    fn save(&self) -> Option<serde_json::Value> {
        None
    }
    /// Takes back what [`Callback::save`] returned, when a run resumes from a checkpoint.
    fn restore(&mut self, _state: serde_json::Value) -> Result<(), String> {
        Ok(())
    }
    /// The callback behind a box, as `training!` passes it: a value that is not a callback is
    /// then reported at the user's expression alone.
    fn boxed(self) -> Box<dyn Callback>
    where
        Self: Sized + 'static,
    {
        Box::new(self)
    }
}

/// The command line's watch of a run, heard as a callback.
// Not recommended in errors: a user's type that is not a callback is not helped by a watch.
#[diagnostic::do_not_recommend]
impl Callback for Watch {
    fn run_start(&mut self, run: &RunStart<'_>) -> Control {
        let stop = self
            .lock()
            .run_start(run.run_dir, run.first_epoch, run.last_epoch);
        stop.map_or(Control::Continue, Control::Stop)
    }
    fn epoch_end(&mut self, epoch: &EpochEnd<'_>) -> Control {
        let stop = self.lock().epoch_end(epoch.epoch, epoch.history);
        stop.map_or(Control::Continue, Control::Stop)
    }
}

impl Watch {
    /// The watch, locked (a panic in it elsewhere does not hide what it holds).
    fn lock(&self) -> std::sync::MutexGuard<'_, dyn crate::config::options::EpochWatch + 'static> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A boxed callback is a callback: lets [`Fit::callback`](crate::fit::Fit::callback) take what
/// `training!` builds.
// Not recommended in errors: a value that is not a callback is not helped by a box.
#[diagnostic::do_not_recommend]
impl Callback for Box<dyn Callback> {
    fn run_start(&mut self, run: &RunStart<'_>) -> Control {
        self.as_mut().run_start(run)
    }
    fn epoch_start(&mut self, epoch: usize) -> Control {
        self.as_mut().epoch_start(epoch)
    }
    fn step_end(&mut self, step: &StepEnd) -> Control {
        self.as_mut().step_end(step)
    }
    fn epoch_end(&mut self, epoch: &EpochEnd<'_>) -> Control {
        self.as_mut().epoch_end(epoch)
    }
    fn run_end(&mut self, end: &RunEnd<'_>) {
        self.as_mut().run_end(end)
    }
    fn save(&self) -> Option<serde_json::Value> {
        self.as_ref().save()
    }
    fn restore(&mut self, state: serde_json::Value) -> Result<(), String> {
        self.as_mut().restore(state)
    }
}

/// The callbacks of a run, the reason the first one to stop it gave, and the metrics they
/// asked for that the run does not record.
#[derive(Default)]
pub(crate) struct Callbacks {
    list: Vec<Box<dyn Callback>>,
    stop: Option<String>,
    /// The command line's watch, heard last, if any.
    watch: Option<usize>,
    /// Whether the stop came from the watch, whose reason says who stopped the run (`pruned:
    /// ..`), rather than from a user's callback.
    stopped_by_watch: bool,
    unrecorded: RefCell<Vec<String>>,
}

impl Callbacks {
    /// The user's callbacks, then the command line's `watch`.
    pub fn new(mut list: Vec<Box<dyn Callback>>, watch: Option<Watch>) -> Self {
        let watch = watch.map(|watch| {
            list.push(Box::new(watch));
            list.len() - 1
        });
        Self {
            list,
            stop: None,
            watch,
            stopped_by_watch: false,
            unrecorded: RefCell::default(),
        }
    }

    /// Why the run was stopped, as `summary.md` says it: a user's callback's reason after
    /// "stopped by a callback", the watch's as it is.
    pub fn stop_line(&self) -> Option<String> {
        let reason = self.stop.as_ref()?;
        Some(match self.stopped_by_watch {
            true => reason.clone(),
            false => format!("stopped by a callback: {reason}"),
        })
    }

    /// The end of `epoch` as the callbacks see it.
    pub fn tell_epoch_end(&mut self, epoch: usize, history: &History) {
        let unrecorded = std::mem::take(&mut self.unrecorded);
        let end = EpochEnd::new(epoch, history, &unrecorded);
        self.each(|c| c.epoch_end(&end));
        self.unrecorded = unrecorded;
    }

    /// An error for the first metric a callback asked for that the run does not record.
    pub fn check_asked(&self, history: &History) -> Result<(), FitError> {
        let Some(asked) = self.unrecorded.borrow().first().cloned() else {
            return Ok(());
        };
        let recorded: Vec<String> = history
            .series()
            .iter()
            .map(|s| format!("{}.{}", s.split, s.metric))
            .collect();
        let known: Vec<&str> = recorded.iter().map(String::as_str).collect();
        let suggestion = match burn_experiment_vocabulary::closest(&asked, &known) {
            Some(close) => format!("did you mean `{close}`? "),
            None => String::new(),
        };
        Err(FitError::UnrecordedMetric {
            asked,
            suggestion,
            recorded: known.join(", "),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Why a callback asked the run to stop.
    pub fn stop(&self) -> Option<&str> {
        self.stop.as_deref()
    }

    pub fn take_stop(&mut self) -> Option<String> {
        self.stop.take()
    }

    /// Calls `hook` on every callback; the first `Stop` is kept.
    pub fn each(&mut self, mut hook: impl FnMut(&mut dyn Callback) -> Control) {
        for (index, callback) in self.list.iter_mut().enumerate() {
            if let Control::Stop(reason) = hook(callback.as_mut())
                && self.stop.is_none()
            {
                self.stop = Some(reason);
                self.stopped_by_watch = self.watch == Some(index);
            }
        }
    }

    /// What each callback saves, in order (`null` for none).
    pub fn states(&self) -> Vec<serde_json::Value> {
        let states: Vec<Option<serde_json::Value>> = self.list.iter().map(|c| c.save()).collect();
        if states.iter().all(Option::is_none) {
            return Vec::new();
        }
        states
            .into_iter()
            .map(|s| s.unwrap_or(serde_json::Value::Null))
            .collect()
    }

    /// Gives each callback back what a checkpoint saved for it.
    pub fn restore(&mut self, states: &[serde_json::Value]) -> Result<(), String> {
        if states.is_empty() {
            return Ok(());
        }
        if states.len() != self.list.len() {
            return Err(format!(
                "the checkpoint holds the state of {} callbacks, this run has {}: resume with the same callbacks",
                states.len(),
                self.list.len()
            ));
        }
        for (i, (callback, state)) in self.list.iter_mut().zip(states).enumerate() {
            if !state.is_null() {
                callback
                    .restore(state.clone())
                    .map_err(|e| format!("callback {} cannot take back its state: {e}", i + 1))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter {
        steps: u64,
        stop_at: u64,
    }

    impl Callback for Counter {
        fn step_end(&mut self, _: &StepEnd) -> Control {
            self.steps += 1;
            if self.steps == self.stop_at {
                Control::Stop(format!("{} steps", self.steps))
            } else {
                Control::Continue
            }
        }
        fn save(&self) -> Option<serde_json::Value> {
            Some(self.steps.into())
        }
        fn restore(&mut self, state: serde_json::Value) -> Result<(), String> {
            self.steps = state.as_u64().ok_or("not a count")?;
            Ok(())
        }
    }

    struct Silent;
    impl Callback for Silent {}

    fn step() -> StepEnd {
        StepEnd {
            epoch: 1,
            step: 1,
            loss: None,
            lr: 0.1,
        }
    }

    #[test]
    fn the_first_stop_is_kept_and_states_round_trip() {
        let mut callbacks = Callbacks::new(
            vec![
                Box::new(Silent),
                Box::new(Counter {
                    steps: 0,
                    stop_at: 2,
                }),
            ],
            None,
        );
        callbacks.each(|c| c.step_end(&step()));
        assert_eq!(callbacks.stop(), None);
        callbacks.each(|c| c.step_end(&step()));
        assert_eq!(callbacks.stop(), Some("2 steps"));
        assert_eq!(
            callbacks.stop_line().as_deref(),
            Some("stopped by a callback: 2 steps")
        );
        let states = callbacks.states();
        assert_eq!(states, vec![serde_json::Value::Null, 2.into()]);

        let mut resumed = Callbacks::new(
            vec![
                Box::new(Silent),
                Box::new(Counter {
                    steps: 0,
                    stop_at: 3,
                }),
            ],
            None,
        );
        resumed.restore(&states).unwrap();
        resumed.each(|c| c.step_end(&step()));
        assert_eq!(resumed.stop(), Some("3 steps"), "the count went on from 2");

        let err = Callbacks::new(vec![Box::new(Silent)], None)
            .restore(&states)
            .unwrap_err();
        assert!(err.contains("2 callbacks, this run has 1"), "{err}");
        let mut bad = Callbacks::new(
            vec![
                Box::new(Silent),
                Box::new(Counter {
                    steps: 0,
                    stop_at: 1,
                }),
            ],
            None,
        );
        let err = bad
            .restore(&[serde_json::Value::Null, "x".into()])
            .unwrap_err();
        assert!(err.contains("callback 2"), "{err}");
    }

    /// A study's pruner, as the command line's watch.
    struct Pruning;

    impl crate::config::options::EpochWatch for Pruning {
        fn run_start(&mut self, _: &Path, _: usize, _: usize) -> Option<String> {
            None
        }
        fn epoch_end(&mut self, epoch: usize, _: &History) -> Option<String> {
            Some(format!("pruned: worse than the median at epoch {epoch}"))
        }
    }

    #[test]
    fn a_stop_by_the_watch_says_its_own_reason_and_not_a_callbacks() {
        let watch = Watch(std::sync::Arc::new(std::sync::Mutex::new(Pruning)));
        let mut callbacks = Callbacks::new(vec![Box::new(Silent)], Some(watch));
        callbacks.tell_epoch_end(2, &History::default());
        assert_eq!(
            callbacks.stop_line().as_deref(),
            Some("pruned: worse than the median at epoch 2")
        );
    }

    #[test]
    fn callbacks_without_state_save_nothing() {
        let callbacks = Callbacks::new(vec![Box::new(Silent)], None);
        assert!(callbacks.states().is_empty());
        assert!(Callbacks::default().is_empty());
    }
}
