//! Several optimizers in one experiment (a GAN's discriminator and generator, a critic stepped
//! more often than its actor): on every batch the steps run in their declared order, each
//! back-propagating its own loss into the parameters its optimizer owns, the next step seeing
//! the weights the previous one moved.
//!
//! Built on Burn's parameter groups: one `ModuleOptimizer` holds each optimizer as the group of
//! the parameters it owns (`with_group`), and one `ModuleLrScheduler` each rate, so checkpoints,
//! resumes and `--verify` see one optimizer record and one scheduler record, as in a
//! one-optimizer run. Written here because Burn has no such loop: the order and frequency of
//! the steps, and gradients kept for one group only (`GradientsParams::from_params`), so that a
//! generator step leaves the discriminator untouched bit for bit.

use std::collections::BTreeMap;

use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::module::{ParamGroup, ParamId};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Gradients;
use burn::train::{LearnerModel, TrainStep};

use crate::config::spec::{NamedOptimizer, Schedule};
use crate::erased::ModelRef;
use crate::error::{FitError, SettingError};

/// The forward pass of one step on a batch: the gradients of its loss and its output.
pub type Play<M> = fn(&M, &<M as TrainStep>::Input) -> (Gradients, <M as TrainStep>::Output);

/// One step of every batch: the optimizer that takes it, how often, and what it computes.
pub struct Step<M: LearnerModel> {
    /// The optimizer's name, which `after_step` hooks name.
    name: &'static str,
    every: usize,
    /// The first batch it runs at (1 to `every`).
    first: usize,
    /// Whether batches are counted within each epoch rather than over the run.
    in_epoch: bool,
    group: ParamGroup,
    play: Play<M>,
    /// The parameters the step's optimizer owns, found on the model the run trains.
    owned: Vec<ParamId>,
}

/// The steps of a several-optimizer experiment, in the order they run on each batch.
pub struct Steps<M: LearnerModel> {
    steps: Vec<Step<M>>,
    /// What the parameter paths start with on the model the run trains (`model.`), left out
    /// of messages.
    prefix: String,
}

impl<M: LearnerModel> Steps<M> {
    /// Whether a step is taken by the optimizer `name`.
    pub(super) fn has(&self, name: &str) -> bool {
        self.steps.iter().any(|s| s.name == name)
    }

    /// The steps due at global step `step`, batch `batch` of its epoch (both from 1), in order:
    /// those whose count (global, or within the epoch) has reached `first` and is `first` plus
    /// a multiple of `every`.
    pub(super) fn due(&self, step: usize, batch: usize) -> impl Iterator<Item = &Step<M>> {
        self.steps.iter().filter(move |s| {
            let count = if s.in_epoch { batch } else { step };
            count >= s.first && (count - s.first).is_multiple_of(s.every)
        })
    }

    /// Refuses a model some of whose parameters no optimizer owns: no step's gradients reach
    /// them (`GradientsParams::from_params` keeps the step's own), so they would never train
    /// and nothing would say so. Parameters frozen for the whole run (`frozen`) are meant to
    /// stay as they are.
    pub(super) fn all_owned(
        &self,
        model: ModelRef<'_>,
        frozen: impl Fn(&ParamId, &str) -> bool,
    ) -> Result<(), FitError> {
        let unowned: Vec<String> = crate::model::weights::parameters(model)
            .into_iter()
            .filter(|(id, path)| {
                !frozen(id, path) && !self.steps.iter().any(|s| s.group.matches(id, Some(path)))
            })
            .map(|(_, path)| {
                let path = path.strip_prefix(&self.prefix).unwrap_or(&path);
                format!("`{path}`")
            })
            .collect();
        if unowned.is_empty() {
            return Ok(());
        }
        let more = match unowned.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        Err(FitError::Setting(SettingError {
            option: "optimizers",
            message: format!(
                "no optimizer owns {}{more}, so they would never train: put their module under an optimizer's `on [..]`, or add it to `freeze` to keep it as it is",
                unowned[..unowned.len().min(3)].join(", ")
            ),
        }))
    }

    /// Finds each optimizer's parameters on `model`, the model the run starts training.
    pub(super) fn own(mut self, model: &M) -> Self {
        for step in &mut self.steps {
            step.owned = owned_by(ModelRef::new(model), &step.group);
        }
        self
    }
}

impl<M: LearnerModel> Step<M> {
    /// The name of the optimizer that takes the step.
    pub(super) fn name(&self) -> &'static str {
        self.name
    }

    /// The step's output on `batch`, and the gradients of its loss for its own parameters only.
    pub(super) fn play(
        &self,
        model: &M,
        batch: &<M as TrainStep>::Input,
    ) -> (GradientsParams, <M as TrainStep>::Output) {
        let (mut grads, output) = (self.play)(model, batch);
        (
            GradientsParams::from_params(&mut grads, model, &self.owned),
            output,
        )
    }
}

/// A several-optimizer experiment's optimizer, schedule and steps: `optimizers` by name,
/// `steps` as `(optimizer name, forward pass)` in the order they run. Each optimizer owns the
/// parameters under its module paths (of the wrapper's field `prefix`); a parameter owned
/// twice, or a path naming none, is an error. The schedule's shape is the run's, at each
/// optimizer's own base rate, over `total_steps` batches.
pub fn several<M: LearnerModel>(
    model: &M,
    prefix: &str,
    optimizers: &BTreeMap<String, NamedOptimizer>,
    schedule: &Schedule,
    total_steps: usize,
    steps: Vec<(&'static str, Play<M>)>,
) -> Result<(ModuleOptimizer, ModuleLrScheduler, Steps<M>), FitError> {
    let invalid = |message: String| {
        FitError::Setting(SettingError {
            option: "optimizers",
            message,
        })
    };
    let declared: Vec<&str> = steps.iter().map(|(name, _)| *name).collect();
    if let Some(extra) = optimizers.keys().find(|k| !declared.contains(&k.as_str())) {
        return Err(invalid(format!(
            "names `{extra}`, which no step uses; the experiment's optimizers are {}",
            declared.join(", ")
        )));
    }
    let model = ModelRef::new(model);
    let params = crate::model::weights::parameters(model);
    let mut owner: BTreeMap<ParamId, &str> = BTreeMap::new();
    let mut all: Option<ModuleOptimizer> = None;
    let mut rates = Vec::new();
    let mut built = Vec::new();
    for (name, play) in steps {
        let Some(spec) = optimizers.get(name) else {
            return Err(invalid(format!("has no `{name}`, which a step uses")));
        };
        if spec.every == 0 {
            return Err(invalid(format!(
                "`{name}.every` is 0; a step runs every n ≥ 1 batches"
            )));
        }
        let first = spec.first.unwrap_or(spec.every);
        if !(1..=spec.every).contains(&first) {
            return Err(invalid(format!(
                "`{name}.first` is {first}; a step first runs at a batch from 1 to its `every` ({})",
                spec.every
            )));
        }
        let paths: Vec<String> = spec.on.iter().map(|p| format!("{prefix}{p}")).collect();
        let group = crate::model::tuning::group(model, "optimizers", &paths)?;
        for (id, path) in params
            .iter()
            .filter(|(id, path)| group.matches(id, Some(path)))
        {
            if let Some(first) = owner.insert(*id, name) {
                let path = path.strip_prefix(prefix).unwrap_or(path);
                return Err(invalid(format!(
                    "`{path}` is owned by both `{first}` and `{name}`; give each parameter one optimizer"
                )));
            }
        }
        // The first optimizer is also Burn's fallback for the parameters no group owns, which
        // no step's gradients reach.
        let base = match all.take() {
            Some(base) => base,
            None => spec.optimizer.init()?,
        };
        all = Some(spec.optimizer.for_group(base, group.clone())?);
        rates.push((group.clone(), spec.lr));
        built.push(Step {
            name,
            every: spec.every,
            first,
            in_epoch: spec.in_epoch,
            group,
            play,
            owned: Vec::new(),
        });
    }
    let (Some(optimizer), Some((_, base_lr))) = (all, rates.first().cloned()) else {
        return Err(invalid("declares no optimizer".to_owned()));
    };
    let scheduler = schedule.build_grouped(base_lr, total_steps, &rates)?;
    let steps = Steps {
        steps: built,
        prefix: prefix.to_owned(),
    };
    Ok((optimizer, scheduler, steps))
}

/// The parameters of `model` in `group`.
pub(super) fn owned_by(model: ModelRef<'_>, group: &ParamGroup) -> Vec<ParamId> {
    crate::model::weights::parameters(model)
        .into_iter()
        .filter(|(id, path)| group.matches(id, Some(path)))
        .map(|(id, _)| id)
        .collect()
}
