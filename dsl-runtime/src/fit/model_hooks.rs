//! Hooks that see the model between optimizer steps and may change it: Burn's wgan clips its
//! critic's weights after each of the critic's steps. A hook is a function of the model to the
//! model, run on every rank alike after the update; it leaves no state of its own, so a
//! checkpoint (taken at an epoch's end, after the hooks) and a resume replay nothing twice.

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
        for (wanted, hook) in &self.hooks {
            if wanted.is_none() || *wanted == of {
                model = hook(model);
            }
        }
        model
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}
