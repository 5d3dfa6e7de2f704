//! Hooks that see the model. After optimizer steps they may change it: Burn's wgan clips its
//! critic's weights after each of the critic's steps. A hook is a function of the model to the
//! model, run on every rank alike after the update; it leaves no state of its own, so a
//! checkpoint (taken at an epoch's end, after the hooks) and a resume replay nothing twice.
//!
//! At an epoch's end they read it (Burn's wgan saves generated images every few epochs): run
//! after validation and before the epoch's checkpoint, so an epoch a resume trains again runs
//! its hook again, and one it skips had its hook run.

use std::path::Path;

use burn::module::{ModuleMapper, Param};
use burn::tensor::Tensor;
use burn::train::LearnerModel;

use super::steps::Steps;
use crate::error::{FitError, SettingError};

/// A hook after an optimizer step: the stepped model to the model the next batch sees.
pub type AfterStep<M> = fn(M) -> M;

/// `after_step`'s closure as `training!` passes it: typed by the user's model, so that
/// `|model| model.clip_weights(0.01)` needs no annotation.
#[doc(hidden)]
pub fn model_hook<M, F: Fn(M) -> M>(hook: F) -> F {
    hook
}

/// Makes every float parameter a leaf of the autodiff graph again, with its values and whether
/// it requires gradients. A hook written with tensor operations on the tracked weights
/// (`param.map(|w| w.clamp(-c, c))`) leaves them as nodes of the last step's graph, and the next
/// backward pass would fail inside Burn ("graph tape has already been consumed"); Burn's wgan
/// `Clip` mapper re-roots them by hand, and this does it for every hook.
struct Leaves;

impl ModuleMapper for Leaves {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        // A weight the hook computed from a trained one is tracked, not a leaf requiring
        // gradients; a frozen weight is neither, and stays so.
        let tracked = tensor.is_require_grad() || tensor.is_tracked();
        let mut tensor = Tensor::from_inner(tensor.inner());
        if tracked {
            tensor = tensor.require_grad();
        }
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// The run's hooks after optimizer steps, each after every step or after one optimizer's.
pub(super) struct AfterSteps<M: LearnerModel> {
    hooks: Vec<(Option<&'static str>, AfterStep<M>)>,
}

impl<M: LearnerModel> Default for AfterSteps<M> {
    fn default() -> Self {
        Self { hooks: Vec::new() }
    }
}

impl<M: LearnerModel> AfterSteps<M> {
    /// `hook` after the steps of the optimizer `of` (every step when `None`).
    pub fn push(&mut self, of: Option<&'static str>, hook: AfterStep<M>) {
        self.hooks.push((of, hook));
    }

    /// Refuses a hook naming an optimizer that takes no step of the run.
    pub fn check(&self, steps: Option<&Steps<M>>) -> Result<(), FitError> {
        for (of, _) in &self.hooks {
            let Some(name) = of else { continue };
            if !steps.is_some_and(|steps| steps.has(name)) {
                return Err(FitError::Setting(SettingError {
                    option: "after_step",
                    message: match steps {
                        Some(_) => format!("names `{name}`, which takes no step of this run"),
                        None => format!(
                            "names the optimizer `{name}`, but this run has one optimizer: give the hook without a name"
                        ),
                    },
                }));
            }
        }
        Ok(())
    }

    /// `model` after the hooks of a step of optimizer `of` (`None`: the run's one optimizer),
    /// in the order they were given.
    pub fn run(&self, mut model: M, of: Option<&str>) -> M {
        let mut ran = false;
        for (wanted, hook) in &self.hooks {
            if wanted.is_none() || *wanted == of {
                model = hook(model);
                ran = true;
            }
        }
        match ran {
            true => model.map(&mut Leaves),
            false => model,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

/// Where an epoch-end hook is called.
#[derive(Debug)]
pub struct EpochAt<'a> {
    /// The epoch that just ended, from 1.
    pub epoch: usize,
    /// The run's directory, for what the hook writes (`image-3.png`).
    pub run_dir: &'a Path,
}

/// A hook at an epoch's end: the model as validation sees it (the moving average with `ema`),
/// and where; an error stops the run before the epoch's checkpoint.
pub type AtEpochEnd<M> = fn(&M, &EpochAt<'_>) -> Result<(), String>;

/// What an epoch-end hook may return: nothing, or a `Result` whose error stops the run.
#[diagnostic::on_unimplemented(
    message = "an `at_epoch_end` hook returns `()` or a `Result<(), E>`, not `{Self}`",
    label = "this hook returns `{Self}`",
    note = "end the closure's body with `;` to return `()`, or return `Ok(())` and errors (any `E: Display`) that stop the run"
)]
pub trait HookOutcome {
    /// The outcome, its error as text.
    fn into_result(self) -> Result<(), String>;
}

#[diagnostic::do_not_recommend]
impl HookOutcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

#[diagnostic::do_not_recommend]
impl<E: std::fmt::Display> HookOutcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// `at_epoch_end`'s closure as `training!` passes it, typed by the user's model.
#[doc(hidden)]
pub fn epoch_hook<M, R, F: Fn(&M, &EpochAt<'_>) -> R>(hook: F) -> F {
    hook
}
