//! Serializable descriptions of an optimizer, a learning-rate schedule, gradient clipping and
//! early stopping: what `training!` writes into an experiment's config, turned into Burn objects
//! at the start of a run.

use burn::lr_scheduler::LrSchedulerConfig;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::lr_scheduler::exponential::ExponentialLrSchedulerConfig;
use burn::lr_scheduler::linear::LinearLrSchedulerConfig;
use burn::lr_scheduler::module_lr_scheduler::{ModuleLrScheduler, ModuleLrSchedulerConfig};
use burn::lr_scheduler::sequential::SequentialLrSchedulerConfig;
use burn::lr_scheduler::step::StepLrSchedulerConfig;
use burn::module::ParamGroup;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{
    AdaGradConfig, AdamConfig, AdamWConfig, LambConfig, LionConfig, ModuleOptimizer, RmsPropConfig,
    SgdConfig,
};
use serde::{Deserialize, Serialize};

use crate::error::FitError;
use crate::error::SettingError;
use crate::history::Split;
use crate::via_value::via_value;

via_value!(OptimizerSpec);
via_value!(Schedule);
via_value!(GradClip);
via_value!(EarlyStopping);

/// `f32` settings as the decimals they were written as (`0.9`, not `0.8999999761581421`):
/// serde_json's value serializer widens an `f32` to the `f64` of its bits, and `config.json`
/// is read by people and compared across runs. Reading back gives the same `f32`: the shortest
/// decimal of an `f32`, read as an `f64` and narrowed, is that `f32` (double rounding cannot
/// err with 53 ≥ 2·24 + 2 bits).
mod decimal {
    use serde::Serializer;

    fn widened(value: f32) -> f64 {
        value
            .to_string()
            .parse()
            .expect("an f32's text reads as an f64")
    }

    pub fn f32<S: Serializer>(value: &f32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(widened(*value))
    }

    pub fn option<S: Serializer>(value: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => s.serialize_some(&widened(*value)),
            None => s.serialize_none(),
        }
    }
}

/// One of Burn's optimizers with its settings (the learning rate is the schedule's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "lowercase")]
pub enum OptimizerSpec {
    /// Burn's `Sgd`.
    Sgd {
        /// Momentum factor (Burn's dampening 0.1 applies); `None` for plain SGD.
        momentum: Option<f64>,
        /// L2 penalty; `None` for none.
        #[serde(serialize_with = "decimal::option")]
        weight_decay: Option<f32>,
    },
    /// Burn's `Adam`.
    Adam {
        /// First-moment decay.
        #[serde(serialize_with = "decimal::f32")]
        beta_1: f32,
        /// Second-moment decay.
        #[serde(serialize_with = "decimal::f32")]
        beta_2: f32,
        /// Numerical-stability term.
        #[serde(serialize_with = "decimal::f32")]
        epsilon: f32,
        /// L2 penalty; `None` for none.
        #[serde(serialize_with = "decimal::option")]
        weight_decay: Option<f32>,
    },
    /// Burn's `AdamW` (decoupled weight decay).
    AdamW {
        /// First-moment decay.
        #[serde(serialize_with = "decimal::f32")]
        beta_1: f32,
        /// Second-moment decay.
        #[serde(serialize_with = "decimal::f32")]
        beta_2: f32,
        /// Numerical-stability term.
        #[serde(serialize_with = "decimal::f32")]
        epsilon: f32,
        /// Decoupled weight decay.
        #[serde(serialize_with = "decimal::f32")]
        weight_decay: f32,
    },
    /// Burn's `RmsProp` (not centered).
    RmsProp {
        /// Smoothing constant of the squared-gradient average.
        #[serde(serialize_with = "decimal::f32")]
        alpha: f32,
        /// Momentum factor.
        #[serde(serialize_with = "decimal::f32")]
        momentum: f32,
        /// Numerical-stability term.
        #[serde(serialize_with = "decimal::f32")]
        epsilon: f32,
        /// L2 penalty; `None` for none.
        #[serde(serialize_with = "decimal::option")]
        weight_decay: Option<f32>,
    },
    /// Burn's `AdaGrad`.
    AdaGrad {
        /// Learning-rate decay per step.
        lr_decay: f64,
        /// Numerical-stability term.
        #[serde(serialize_with = "decimal::f32")]
        epsilon: f32,
        /// L2 penalty; `None` for none.
        #[serde(serialize_with = "decimal::option")]
        weight_decay: Option<f32>,
    },
    /// Burn's `Lion`.
    Lion {
        /// Interpolation factor of the update direction.
        #[serde(serialize_with = "decimal::f32")]
        beta_1: f32,
        /// Decay of the momentum.
        #[serde(serialize_with = "decimal::f32")]
        beta_2: f32,
        /// Decoupled weight decay.
        #[serde(serialize_with = "decimal::f32")]
        weight_decay: f32,
    },
    /// Burn's `Lamb` (with its layer-wise trust ratio).
    Lamb {
        /// First-moment decay.
        #[serde(serialize_with = "decimal::f32")]
        beta_1: f32,
        /// Second-moment decay.
        #[serde(serialize_with = "decimal::f32")]
        beta_2: f32,
        /// Numerical-stability term.
        #[serde(serialize_with = "decimal::f32")]
        epsilon: f32,
        /// Weight decay before the layer-wise adaptation.
        #[serde(serialize_with = "decimal::f32")]
        weight_decay: f32,
    },
}

impl OptimizerSpec {
    /// Burn's optimizer with these settings, or an error naming the first setting outside its
    /// range (values from `--set` or `--config` reach here unchecked by the macro).
    pub fn init(&self) -> Result<ModuleOptimizer, FitError> {
        self.check()?;
        Ok(self.build(Placed::Alone))
    }

    /// `optimizer` with this optimizer for the parameters of `group` (Burn's
    /// `ModuleOptimizer::with_group`): one optimizer of a several-optimizer experiment.
    pub fn for_group(
        &self,
        optimizer: ModuleOptimizer,
        group: ParamGroup,
    ) -> Result<ModuleOptimizer, FitError> {
        self.check()?;
        Ok(self.build(Placed::Group(optimizer, group)))
    }

    /// How a data-parallel run splits the parameters for this optimizer: ranges of values where
    /// its step is elementwise (each value's update reads that value, its gradient and its own
    /// state, and the parameter's step count), whole tensors for LAMB, whose trust ratio is a
    /// norm over the tensor.
    pub fn sharding(&self) -> crate::parallel::Sharding {
        match self {
            OptimizerSpec::Lamb { .. } => crate::parallel::Sharding::Tensors,
            OptimizerSpec::Sgd { .. }
            | OptimizerSpec::Adam { .. }
            | OptimizerSpec::AdamW { .. }
            | OptimizerSpec::RmsProp { .. }
            | OptimizerSpec::AdaGrad { .. }
            | OptimizerSpec::Lion { .. } => crate::parallel::Sharding::Ranges,
        }
    }

    /// Each setting against the range `training!` checks it by at compile time (one table,
    /// `burn_experiment_vocabulary::optimizer`).
    fn check(&self) -> Result<(), FitError> {
        let (name, settings): (&str, Vec<(&str, Option<f64>)>) = match *self {
            OptimizerSpec::Sgd {
                momentum,
                weight_decay,
            } => (
                "sgd",
                vec![
                    ("momentum", momentum),
                    ("weight_decay", weight_decay.map(f64::from)),
                ],
            ),
            OptimizerSpec::Adam {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => (
                "adam",
                vec![
                    ("beta_1", Some(beta_1.into())),
                    ("beta_2", Some(beta_2.into())),
                    ("epsilon", Some(epsilon.into())),
                    ("weight_decay", weight_decay.map(f64::from)),
                ],
            ),
            OptimizerSpec::AdamW {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => (
                "adamw",
                vec![
                    ("beta_1", Some(beta_1.into())),
                    ("beta_2", Some(beta_2.into())),
                    ("epsilon", Some(epsilon.into())),
                    ("weight_decay", Some(weight_decay.into())),
                ],
            ),
            OptimizerSpec::Lamb {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => (
                "lamb",
                vec![
                    ("beta_1", Some(beta_1.into())),
                    ("beta_2", Some(beta_2.into())),
                    ("epsilon", Some(epsilon.into())),
                    ("weight_decay", Some(weight_decay.into())),
                ],
            ),
            OptimizerSpec::RmsProp {
                alpha,
                momentum,
                epsilon,
                weight_decay,
            } => (
                "rmsprop",
                vec![
                    ("alpha", Some(alpha.into())),
                    ("momentum", Some(momentum.into())),
                    ("epsilon", Some(epsilon.into())),
                    ("weight_decay", weight_decay.map(f64::from)),
                ],
            ),
            OptimizerSpec::AdaGrad {
                lr_decay,
                epsilon,
                weight_decay,
            } => (
                "adagrad",
                vec![
                    ("lr_decay", Some(lr_decay)),
                    ("epsilon", Some(epsilon.into())),
                    ("weight_decay", weight_decay.map(f64::from)),
                ],
            ),
            OptimizerSpec::Lion {
                beta_1,
                beta_2,
                weight_decay,
            } => (
                "lion",
                vec![
                    ("beta_1", Some(beta_1.into())),
                    ("beta_2", Some(beta_2.into())),
                    ("weight_decay", Some(weight_decay.into())),
                ],
            ),
        };
        let optimizer =
            burn_experiment_vocabulary::optimizer::named(name).expect("every variant is named");
        for (key, value) in settings {
            let range = optimizer
                .arg(key)
                .expect("every setting is an argument")
                .range;
            if let Some(value) = value
                && !range.contains(value)
            {
                return Err(FitError::Setting(SettingError {
                    option: "optimizer",
                    message: format!("`{key}` is {value}; it must be {}", range.describe()),
                }));
            }
        }
        Ok(())
    }

    fn build(&self, placed: Placed) -> ModuleOptimizer {
        match *self {
            OptimizerSpec::Sgd {
                momentum,
                weight_decay,
            } => placed.place(
                SgdConfig::new()
                    .with_momentum(momentum.map(|m| MomentumConfig::new().with_momentum(m)))
                    .with_weight_decay(weight_decay.map(WeightDecayConfig::new))
                    .build(),
            ),
            OptimizerSpec::Adam {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => placed.place(
                AdamConfig::new()
                    .with_beta_1(beta_1)
                    .with_beta_2(beta_2)
                    .with_epsilon(epsilon)
                    .with_weight_decay(weight_decay.map(WeightDecayConfig::new))
                    .build(),
            ),
            OptimizerSpec::AdamW {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => placed.place(
                AdamWConfig::new()
                    .with_beta_1(beta_1)
                    .with_beta_2(beta_2)
                    .with_epsilon(epsilon)
                    .with_weight_decay(weight_decay)
                    .build(),
            ),
            OptimizerSpec::RmsProp {
                alpha,
                momentum,
                epsilon,
                weight_decay,
            } => placed.place(
                RmsPropConfig::new()
                    .with_alpha(alpha)
                    .with_momentum(momentum)
                    .with_epsilon(epsilon)
                    .with_weight_decay(weight_decay.map(WeightDecayConfig::new))
                    .build(),
            ),
            OptimizerSpec::AdaGrad {
                lr_decay,
                epsilon,
                weight_decay,
            } => placed.place(
                AdaGradConfig::new()
                    .with_lr_decay(lr_decay)
                    .with_epsilon(epsilon)
                    .with_weight_decay(weight_decay.map(WeightDecayConfig::new))
                    .build(),
            ),
            OptimizerSpec::Lion {
                beta_1,
                beta_2,
                weight_decay,
            } => placed.place(
                LionConfig::new()
                    .with_beta_1(beta_1)
                    .with_beta_2(beta_2)
                    .with_weight_decay(weight_decay)
                    .build(),
            ),
            OptimizerSpec::Lamb {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => placed.place(
                LambConfig::new()
                    .with_beta_1(beta_1)
                    .with_beta_2(beta_2)
                    .with_epsilon(epsilon)
                    .with_weight_decay(weight_decay)
                    .build(),
            ),
        }
    }
}

/// When a plateau schedule lowers the rate: `split.metric` not improved for more than
/// `patience` epochs multiplies it by `factor`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlateauRule {
    /// The split of the watched metric.
    pub split: Split,
    /// The watched metric's key.
    pub metric: String,
    /// Factor per reduction.
    pub factor: f64,
    /// Epochs without improvement tolerated before a reduction.
    pub patience: usize,
}

/// LoRA adapters on the 2-D weights under module paths `on`, through Burn's `apply_lora`:
/// every base parameter is frozen and only the adapters train.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoraSpec {
    /// Rank of the low-rank factors.
    pub rank: usize,
    /// Scale numerator: the adapters add `alpha / rank · a @ b`.
    pub alpha: f64,
    /// Module paths whose 2-D weights get adapters.
    pub on: Vec<String>,
}

impl LoraSpec {
    /// The same adapters with every path under `prefix` (`model.` in `training!`).
    pub fn prefixed(&self, prefix: &str) -> Self {
        Self {
            on: self.on.iter().map(|p| format!("{prefix}{p}")).collect(),
            ..self.clone()
        }
    }
}

/// A parameter group at its own base learning rate: `groups: { fc1: lr(1e-4) }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupLr {
    /// Module path of the user's model (`fc1`, `encoder.layer`).
    pub path: String,
    /// Base rate of the group's parameters, following the run's schedule scaled.
    pub lr: f64,
}

/// One optimizer of a several-optimizer experiment (`optimizers: { critic: adam(..) on [..] }`):
/// its base rate, Burn optimizer, the module paths it owns, and how often its step runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedOptimizer {
    /// Base rate of the parameters it owns, following the run's schedule scaled.
    pub lr: f64,
    /// The Burn optimizer and its settings.
    pub optimizer: OptimizerSpec,
    /// Module paths of the user's model whose parameters this optimizer alone moves.
    pub on: Vec<String>,
    /// Its step runs every `every` batches: 1 on every batch.
    pub every: usize,
    /// The batch its step first runs at, from 1 to `every`; `None` is `every` itself (global
    /// steps `every`, `2 every`, ..). `Some(1)` with `in_epoch` is Burn's wgan order, its
    /// generator at `iteration % n == 0` of each epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<usize>,
    /// Count each epoch's batches from 1, instead of the run's global steps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_epoch: bool,
}

/// How the learning rate moves over the run's optimizer steps, built on Burn's schedulers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// The base rate throughout.
    Constant,
    /// Cosine annealing from the base rate to `min_lr` over the whole run.
    Cosine {
        /// Rate at the last step.
        min_lr: f64,
    },
    /// Linear from the base rate to `final_lr` over the whole run.
    Linear {
        /// Rate at the last step.
        final_lr: f64,
    },
    /// Multiplied by `gamma` every step.
    Exponential {
        /// Factor per step, in (0, 1].
        gamma: f64,
    },
    /// Multiplied by `gamma` every `step_size` optimizer steps (Burn's `StepLrScheduler`;
    /// `step(every_steps = n)` in `training!`).
    Step {
        /// Steps between two decays.
        step_size: usize,
        /// Factor per decay.
        gamma: f64,
    },
    /// Multiplied by `gamma` every `epochs` epochs (PyTorch's `StepLR`; `step(every_epochs =
    /// n)`): a [`Schedule::Step`] of `epochs` times the optimizer steps of an epoch, which
    /// [`Schedule::in_steps`] turns it into before it is built.
    StepEpochs {
        /// Epochs between two decays.
        epochs: usize,
        /// Factor per decay.
        gamma: f64,
    },
    /// Linear warm-up from `base / steps` to the base rate over `steps` steps, then `then` over
    /// the remaining steps.
    WarmUp {
        /// Length of the warm-up.
        steps: usize,
        /// The schedule after the warm-up.
        then: Box<Schedule>,
    },
    /// Any of Burn's schedulers as its config (`NoamLrSchedulerConfig`, a
    /// `ComposedLrSchedulerConfig`, ..): it sets every step's rate itself, so the run has no base
    /// rate `lr` to scale, group or override.
    Burn {
        /// Burn's config, as Burn serializes it.
        scheduler: BurnSchedule,
    },
    /// The base rate times `factor` to the power of the steps before: a learning-rate range
    /// test's rising rate (`--find-lr`).
    Rising {
        /// Factor per step, above 1.
        factor: f64,
    },
    /// The base rate, times `factor` each time `split.metric` has not improved for more than
    /// `patience` epochs (PyTorch's `ReduceLROnPlateau`; Burn has no such schedule).
    Plateau {
        /// The split of the watched metric.
        split: Split,
        /// The watched metric's key.
        metric: String,
        /// Factor per reduction, in (0, 1).
        factor: f64,
        /// Epochs without improvement tolerated before a reduction.
        patience: usize,
    },
}

/// Burn's scheduler config inside a [`Schedule`]: equal when their JSON is, since Burn's
/// configs do not implement `PartialEq` (and a resume compares schedules).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BurnSchedule(pub LrSchedulerConfig);

impl PartialEq for BurnSchedule {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_value(&self.0).ok() == serde_json::to_value(&other.0).ok()
    }
}

/// What `lr_schedule` takes as an expression: each of Burn's scheduler configs. Implemented
/// for each one, not for whatever converts into `LrSchedulerConfig` (a plain `f64` does, as a
/// constant rate), so that another value is one error saying what the key takes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one of Burn's learning-rate schedulers",
    label = "`lr_schedule` takes one of Burn's scheduler configs here",
    note = "give a `NoamLrSchedulerConfig`, `ComposedLrSchedulerConfig`, `SequentialLrSchedulerConfig`, `CosineAnnealingLrSchedulerConfig`, `LinearLrSchedulerConfig`, `ExponentialLrSchedulerConfig`, `StepLrSchedulerConfig` or an `LrSchedulerConfig`; or one of the named schedules: `lr_schedule: cosine(min = 0.0)`"
)]
pub trait BurnScheduler {
    /// The config as Burn's enum of them.
    fn into_config(self) -> LrSchedulerConfig;

    /// `lr_schedule`'s expression as the run's schedule. A method, so that a value that is not
    /// a scheduler is reported at the user's expression alone.
    fn into_schedule(self) -> Schedule
    where
        Self: Sized,
    {
        Schedule::Burn {
            scheduler: BurnSchedule(self.into_config()),
        }
    }
}

macro_rules! burn_schedulers {
    ($($config:ty),* $(,)?) => {$(
        impl BurnScheduler for $config {
            fn into_config(self) -> LrSchedulerConfig {
                self.into()
            }
        }
    )*};
}

burn_schedulers!(
    burn::lr_scheduler::noam::NoamLrSchedulerConfig,
    burn::lr_scheduler::composed::ComposedLrSchedulerConfig,
    SequentialLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    StepLrSchedulerConfig,
);

impl BurnScheduler for LrSchedulerConfig {
    fn into_config(self) -> LrSchedulerConfig {
        self
    }
}

impl Schedule {
    /// The scheduler of a schedule that sets its own rate ([`Schedule::Burn`]), for an
    /// experiment with no base rate. Another schedule (from `--config`) is refused: it would
    /// need a rate the experiment does not have.
    pub fn build_own(&self) -> Result<ModuleLrScheduler, FitError> {
        match self {
            Schedule::Burn { scheduler } => ModuleLrSchedulerConfig::new(scheduler.0.clone())
                .init()
                .map_err(|message| {
                    FitError::Setting(SettingError {
                        option: "lr_schedule",
                        message,
                    })
                }),
            other => Err(FitError::Setting(SettingError {
                option: "lr_schedule",
                message: format!(
                    "is `{}`, which scales a base rate; this experiment's rate is set by Burn's scheduler in its `lr_schedule`, so it has no `lr`: give a Burn scheduler (`{{\"kind\": \"burn\", \"scheduler\": ..}}`) or change `training!`",
                    other.json()["kind"].as_str().unwrap_or_default()
                ),
            })),
        }
    }

    /// The schedule with its periods in epochs ([`Schedule::StepEpochs`]) counted in optimizer
    /// steps, for a run of `steps_per_epoch` optimizer steps per epoch.
    pub fn in_steps(&self, steps_per_epoch: usize) -> Schedule {
        match self {
            Schedule::StepEpochs { epochs, gamma } => Schedule::Step {
                step_size: epochs * steps_per_epoch.max(1),
                gamma: *gamma,
            },
            Schedule::WarmUp { steps, then } => Schedule::WarmUp {
                steps: *steps,
                then: Box::new(then.in_steps(steps_per_epoch)),
            },
            other => other.clone(),
        }
    }

    /// Burn's scheduler for a run of `total_steps` optimizer steps starting at rate `lr`.
    pub fn build(&self, lr: f64, total_steps: usize) -> Result<ModuleLrScheduler, FitError> {
        self.build_grouped(lr, total_steps, &[])
    }

    /// [`Schedule::build`] with parameter groups at their own base rate: each group's rate
    /// follows the same schedule scaled by `group lr / lr` (a group at 0 stays at 0), through
    /// Burn's per-group `ModuleLrScheduler`.
    pub fn build_grouped(
        &self,
        lr: f64,
        total_steps: usize,
        groups: &[(ParamGroup, f64)],
    ) -> Result<ModuleLrScheduler, FitError> {
        let invalid = |message: String| {
            FitError::Setting(SettingError {
                option: "lr_schedule",
                message,
            })
        };
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(FitError::Setting(SettingError {
                option: "lr",
                message: format!("is {lr}; it must be a positive number"),
            }));
        }
        if let Schedule::Burn { .. } = self {
            return Err(invalid(
                "is one of Burn's schedulers, which sets the rate itself, and this experiment has a base rate `lr`: write Burn's scheduler as `lr_schedule` in `training!` (and remove `lr`), or use one of the named schedules".to_owned(),
            ));
        }
        if let Schedule::Plateau { factor, .. } = self {
            if !(*factor > 0.0 && *factor < 1.0) {
                return Err(invalid(format!(
                    "plateau's factor is {factor}; it must be in (0, 1)"
                )));
            }
            if !groups.is_empty() {
                return Err(invalid(
                    "plateau scales one learning rate and cannot be combined with several rates (`groups`, or several optimizers, each at its own rate): use a schedule fixed in advance, such as cosine(..)"
                        .to_owned(),
                ));
            }
        }
        if groups.is_empty() && matches!(self, Schedule::Constant | Schedule::Plateau { .. }) {
            return Ok(lr.into());
        }
        if let Schedule::Rising { factor } = *self {
            let mut scheduler = ModuleLrScheduler::new(Rising::new(lr, factor));
            for (group, group_lr) in groups {
                scheduler = scheduler.with_group(group.clone(), Rising::new(*group_lr, factor));
            }
            return Ok(scheduler);
        }
        let steps = total_steps.max(1);
        let mut config = ModuleLrSchedulerConfig::new(self.config(lr, steps, 1.0)?);
        for (group, group_lr) in groups {
            if !(*group_lr >= 0.0 && group_lr.is_finite()) {
                return Err(FitError::Setting(SettingError {
                    option: "groups",
                    message: format!("a group's lr is {group_lr}; it must be 0 or more"),
                }));
            }
            let scheduler = if *group_lr == 0.0 {
                LrSchedulerConfig::Constant(0.0)
            } else {
                self.config(*group_lr, steps, group_lr / lr)?
            };
            config = config.with_group(group.clone(), scheduler);
        }
        config.init().map_err(invalid)
    }

    /// The rule a `Plateau` schedule follows, for [`FitOptions::plateau`](crate::config::options::FitOptions).
    pub fn plateau(&self) -> Option<PlateauRule> {
        match self {
            Schedule::Plateau {
                split,
                metric,
                factor,
                patience,
            } => Some(PlateauRule {
                split: *split,
                metric: metric.clone(),
                factor: *factor,
                patience: *patience,
            }),
            _ => None,
        }
    }

    /// The schedule from base rate `lr`; `scale` multiplies the rates it moves towards (a
    /// group's schedule is the run's, scaled).
    fn config(&self, lr: f64, steps: usize, scale: f64) -> Result<LrSchedulerConfig, FitError> {
        Ok(match self {
            // The reductions are applied by the fit loop from the history (`fit::early_stop`).
            Schedule::Constant | Schedule::Plateau { .. } => LrSchedulerConfig::Constant(lr),
            Schedule::Burn { .. } | Schedule::Rising { .. } => {
                return Err(FitError::Setting(SettingError {
                    option: "lr_schedule",
                    message: "a warm-up's `then` is one of the named schedules; Burn's scheduler \
                              sets the rate itself: put the warm-up inside it (Burn's \
                              `SequentialLrSchedulerConfig`)"
                        .to_owned(),
                }));
            }
            Schedule::Cosine { min_lr } => CosineAnnealingLrSchedulerConfig::new(lr, steps)
                .with_min_lr(*min_lr * scale)
                .into(),
            Schedule::Linear { final_lr } => {
                LinearLrSchedulerConfig::new(lr, *final_lr * scale, steps).into()
            }
            Schedule::Exponential { gamma } => ExponentialLrSchedulerConfig::new(lr, *gamma).into(),
            Schedule::Step { step_size, gamma } => StepLrSchedulerConfig::new(lr, *step_size)
                .with_gamma(*gamma)
                .into(),
            Schedule::StepEpochs { .. } => {
                return Err(FitError::Setting(SettingError {
                    option: "lr_schedule",
                    message: "a period in epochs needs the run's steps per epoch: build \
                              `schedule.in_steps(steps_per_epoch)`"
                        .to_owned(),
                }));
            }
            Schedule::WarmUp { steps: warm, then } => {
                if *warm == 0 || *warm >= steps {
                    return Err(FitError::Setting(SettingError {
                        option: "lr_schedule",
                        message: format!(
                            "warm_up({warm}) must be at least 1 and shorter than the run's {steps} optimizer steps"
                        ),
                    }));
                }
                SequentialLrSchedulerConfig::new(
                    vec![
                        LinearLrSchedulerConfig::new(lr / *warm as f64, lr, *warm).into(),
                        then.config(lr, steps - warm, scale)?,
                    ],
                    vec![*warm],
                )
                .into()
            }
        })
    }
}

/// [`Schedule::Rising`]'s scheduler. Written here because Burn's `ExponentialLrScheduler` only
/// decays (its `gamma` and initial rate are at most 1), and a range test rises to rates above 1.
#[derive(Clone, Debug)]
struct Rising {
    lr: f64,
    factor: f64,
    step: u64,
}

impl Rising {
    fn new(lr: f64, factor: f64) -> Self {
        Self {
            lr,
            factor,
            step: 0,
        }
    }
}

impl burn::lr_scheduler::LrScheduler for Rising {
    fn step(&mut self) -> f64 {
        let lr = self.lr * self.factor.powf(self.step as f64);
        self.step += 1;
        lr
    }

    fn to_record(&self) -> burn::lr_scheduler::LrSchedulerRecord {
        burn::lr_scheduler::LrSchedulerRecord::new().with_scalar("step", self.step)
    }

    fn load_record(&mut self, record: burn::lr_scheduler::LrSchedulerRecord) {
        if let Some(step) = record.scalar::<u64>("step") {
            self.step = step;
        }
    }
}

/// Gradient clipping applied before every optimizer step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    content = "max",
    rename_all = "lowercase"
)]
pub enum GradClip {
    /// Scale all gradients together so that their global L2 norm (over every parameter) is at
    /// most this value, as PyTorch's `clip_grad_norm_`. Burn's own `GradientClipping::Norm`
    /// clips each tensor separately: that is [`GradClip::ParamNorm`].
    Norm(f64),
    /// Scale each parameter's gradient so that its own L2 norm is at most this value (Burn's
    /// `GradientClippingConfig::Norm`, inside the optimizer).
    #[serde(rename = "param_norm")]
    ParamNorm(#[serde(serialize_with = "decimal::f32")] f32),
    /// Clamp every gradient element to `[-max, max]` (Burn's `GradientClipping::Value`).
    Value(#[serde(serialize_with = "decimal::f32")] f32),
}

/// Stop when a metric has not improved for `patience` epochs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct EarlyStopping {
    /// Split of the watched metric.
    pub split: Split,
    /// Key of the watched metric; its direction decides what "improved" means.
    pub metric: String,
    /// Epochs without improvement tolerated before stopping.
    pub patience: usize,
    /// Smallest change that counts as an improvement.
    pub min_delta: f64,
}

/// Optimizer steps in a run: per epoch one per `accumulation` batches, plus one for a remainder.
pub fn optimizer_steps(
    train_items: usize,
    batch_size: usize,
    accumulation: Option<usize>,
    epochs: usize,
) -> usize {
    let batches = train_items.div_ceil(batch_size.max(1));
    // A data-parallel step sums one batch per rank, as accumulation does in one process.
    let ranks = crate::parallel::group().map_or(1, |g| g.size());
    // Saturating: `--epochs` out of its range reaches here before the options are checked,
    // which then refuse it.
    batches
        .div_ceil(accumulation.unwrap_or(1).max(1).saturating_mul(ranks))
        .saturating_mul(epochs)
}

/// Where [`OptimizerSpec::build`] puts the optimizer: alone, or as the group of a
/// several-optimizer experiment's `ModuleOptimizer`.
enum Placed {
    Alone,
    Group(ModuleOptimizer, ParamGroup),
}

impl Placed {
    fn place<O: burn::optim::Optimizer + 'static>(self, optimizer: O) -> ModuleOptimizer {
        match self {
            Placed::Alone => optimizer.into(),
            Placed::Group(all, group) => all.with_group(group, optimizer, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_settings_are_saved_as_the_decimals_written_and_read_back_exactly() {
        let adam = OptimizerSpec::Adam {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-5,
            weight_decay: Some(1e-4),
        };
        let value = serde_json::to_value(&adam).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"kind": "adam", "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-5, "weight_decay": 1e-4})
        );
        assert_eq!(
            serde_json::from_value::<OptimizerSpec>(value).unwrap(),
            adam
        );
        // Every f32 whose shortest decimal reads back through f64 to the same bits, here a
        // spread of them.
        for bits in (0..u32::MAX).step_by(99_991) {
            let x = f32::from_bits(bits);
            if x.is_finite() {
                let through: f64 = x.to_string().parse().unwrap();
                assert_eq!((through as f32).to_bits(), bits, "{x}");
            }
        }
        let clip = serde_json::to_value(GradClip::Value(0.1)).unwrap();
        assert_eq!(clip, serde_json::json!({"kind": "value", "max": 0.1}));
    }

    fn rates(schedule: Schedule, lr: f64, steps: usize) -> Vec<f64> {
        let mut s = schedule.build(lr, steps).unwrap();
        (0..steps).map(|_| s.step().base()).collect()
    }

    /// `step(every_epochs = 2)` with 3 optimizer steps per epoch decays after 6 steps, as
    /// `step(every_steps = 6)` does; unconverted, it is an error, not a guess.
    #[test]
    fn a_period_in_epochs_is_that_many_epochs_of_steps() {
        let epochs = Schedule::StepEpochs {
            epochs: 2,
            gamma: 0.5,
        };
        let in_steps = rates(epochs.in_steps(3), 1.0, 12);
        assert_eq!(
            in_steps,
            rates(
                Schedule::Step {
                    step_size: 6,
                    gamma: 0.5
                },
                1.0,
                12
            )
        );
        assert_eq!(in_steps[5], 1.0);
        assert_eq!(in_steps[6], 0.5);
        let warm = Schedule::WarmUp {
            steps: 2,
            then: Box::new(epochs.clone()),
        };
        assert!(matches!(
            warm.in_steps(3),
            Schedule::WarmUp { then, .. } if *then == Schedule::Step { step_size: 6, gamma: 0.5 }
        ));
        let err = epochs.build(1.0, 12).err().unwrap().to_string();
        assert!(err.contains("in_steps(steps_per_epoch)"), "{err}");
        assert_eq!(
            serde_json::to_value(&epochs).unwrap(),
            serde_json::json!({"kind": "step_epochs", "epochs": 2, "gamma": 0.5})
        );
    }

    #[test]
    fn schedules_follow_their_shape() {
        assert_eq!(rates(Schedule::Constant, 0.1, 3), [0.1, 0.1, 0.1]);
        let cos = rates(Schedule::Cosine { min_lr: 0.0 }, 0.1, 10);
        assert_eq!(cos[0], 0.1);
        assert!(cos.windows(2).all(|w| w[1] < w[0]), "{cos:?}");
        let warm = rates(
            Schedule::WarmUp {
                steps: 4,
                then: Box::new(Schedule::Constant),
            },
            0.1,
            8,
        );
        assert!(warm[..4].windows(2).all(|w| w[1] > w[0]), "{warm:?}");
        assert!(
            (warm[4] - 0.1).abs() < 1e-12 && (warm[7] - 0.1).abs() < 1e-12,
            "{warm:?}"
        );
    }

    #[test]
    fn bad_schedules_name_the_setting() {
        let err = Schedule::Constant.build(-0.1, 3).err().unwrap();
        assert!(err.to_string().contains("`lr`"), "{err}");
        let err = Schedule::Exponential { gamma: 2.0 }
            .build(0.1, 3)
            .err()
            .unwrap();
        assert!(err.to_string().contains("lr_schedule"), "{err}");
    }

    #[test]
    fn optimizer_settings_out_of_range_are_refused_by_name() {
        let adam = |beta_1: f32, epsilon: f32| OptimizerSpec::Adam {
            beta_1,
            beta_2: 0.999,
            epsilon,
            weight_decay: None,
        };
        assert!(adam(0.9, 1e-8).init().is_ok());
        let err = adam(1.0, 1e-8).init().err().unwrap().to_string();
        assert!(err.contains("`beta_1` is 1; it must be in [0, 1)"), "{err}");
        let err = adam(0.9, -1e-8).init().err().unwrap().to_string();
        assert!(
            err.contains("`epsilon`") && err.contains("positive"),
            "{err}"
        );
        let sgd = OptimizerSpec::Sgd {
            momentum: Some(-0.5),
            weight_decay: None,
        };
        let err = sgd.init().err().unwrap().to_string();
        assert!(err.contains("`momentum` is -0.5"), "{err}");
    }

    #[test]
    fn optimizer_steps_count_remainders() {
        assert_eq!(optimizer_steps(96, 16, None, 3), 18);
        assert_eq!(optimizer_steps(200, 32, Some(2), 3), 12);
    }
}
