//! The fit loop: Burn's training step order, our data order, outputs a person can read.

pub mod callback;
mod clip;
mod deferred;
mod draws;
mod early_stop;
mod ema;
pub mod engine;
pub(crate) mod epoch;
mod finite;
mod freeze;
mod hooks;
mod mixed_types;
pub mod model_hooks;
pub mod precision;
mod recompute;
mod resume;
pub(crate) use resume::changes as setting_changes;
mod run;
mod saving;
pub mod steps;
mod test_split;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::grad_clipping::GradientClippingConfig;
use burn::lr_scheduler::module_lr_scheduler::{ModuleLearningRate, ModuleLrScheduler};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Device;
use burn::train::{InferenceStep, LearnerModel, TrainStep};
use serde::Serialize;

use crate::{config::options::FitOptions, error::FitError};

use crate::checkpoint::{CheckpointDir, Policy};
use crate::config::spec::GradClip;
use crate::data::Loader;
use crate::erased::{AnyModule, ModelRef};
use crate::fit::callback::{Callback, Callbacks};
use crate::history::{History, Split};
use crate::interrupt::Interrupt;
use crate::metric::SplitMetric;
use crate::output::progress::Progress;
use crate::output::run_writer::RunWriter;
use crate::parallel::mirror::Mirror;
use crate::parallel::step::{Outputs, Parallel};
use crate::parallel::{ItemCodec, ParallelError, Sharding};
use crate::provenance::Provenance;
use early_stop::EarlyStop;
use ema::Ema;
use epoch::{DataParallel, OutputCasts, ParallelCode, TrainState};
use freeze::Freeze;
use hooks::Features;
use precision::{CastFn, LowPrecision};
use run::ActiveRun;
use saving::Saving;
use steps::Steps;
pub use test_split::{TestPlan, TestSplit, test_line};

/// The output of the model's training step.
pub type TrainOutputOf<M> = <M as TrainStep>::Output;
/// The output of the model's inference (validation) step.
pub type ValidOutputOf<M> = <M as InferenceStep>::Output;

pub use crate::data::Data;

/// A configured run: model, optimizer, learning-rate schedule, options and metrics.
///
/// See `dsl-runtime/tests/runtime/seed_classification.rs` for a complete run next to the hand-written
/// Burn loop it reproduces.
pub struct Fit<M: LearnerModel> {
    model: M,
    optimizer: ModuleOptimizer,
    lr_scheduler: ModuleLrScheduler,
    options: FitOptions,
    train_metrics: Vec<Box<dyn SplitMetric<TrainOutputOf<M>>>>,
    valid_metrics: Vec<Box<dyn SplitMetric<ValidOutputOf<M>>>>,
    callbacks: Vec<Box<dyn Callback>>,
    hyperparameters: serde_json::Value,
    provenance: Option<Provenance>,
    parallel: Option<ParallelSetup<M>>,
    sharding: Sharding,
    optimize: Optimize<M>,
    steps: Option<Steps<M>>,
    casts: BatchCasts<M>,
    to_f32: OutputCasts<M>,
    after_step: model_hooks::AfterSteps<M>,
    at_epoch_end: Vec<model_hooks::AtEpochEnd<M>>,
}

/// How the training and the validation batches are cast to a 16-bit precision, where the
/// batch types can be ([`Fit::batch_casts`]).
struct BatchCasts<M: LearnerModel> {
    train: Option<CastFn<<M as TrainStep>::Input>>,
    valid: Option<CastFn<<M as InferenceStep>::Input>>,
}

/// What [`Fit::data_parallel`] was given: how step outputs travel, and the code for it.
struct ParallelSetup<M: LearnerModel> {
    train: ItemCodec<TrainOutputOf<M>>,
    valid: ItemCodec<ValidOutputOf<M>>,
    code: ParallelCode<M>,
}

/// How an optimizer step updates the model: `TrainStep::optimize`, the model's own.
pub(crate) type Optimize<M> = fn(M, &mut ModuleOptimizer, ModuleLearningRate, GradientsParams) -> M;

/// What a finished run hands back.
pub struct FitReport<M> {
    /// The trained model in inference mode (`Module::valid`), as Burn's `LearningResult` gives
    /// it. To train it further call `.train()` on it first; see [`FitReport::resume`].
    pub model: M,
    /// With `ema`, the moving average of the weights, in inference mode: what validation,
    /// `best(..)`, checkpoints loaded for evaluation and the test split use. `model` keeps the
    /// raw weights. [`FitReport::resume`] starts a new average.
    pub averaged: Option<M>,
    /// The optimizer with its state (Adam moments, ...), to continue training. On Burn's engine
    /// (`engine: burn`, several devices) the optimizer as given: Burn's Learner does not hand
    /// its state back, so continue such a run from its checkpoints (`resume`). On a rank of a
    /// data-parallel run, the state of the parameters that rank owns; its checkpoints hold
    /// all of it.
    pub optimizer: ModuleOptimizer,
    /// The learning-rate schedule at the step it reached, to continue training (on Burn's
    /// engine, as given; see `optimizer`).
    pub lr_scheduler: ModuleLrScheduler,
    /// Every metric value, per epoch and per training step.
    pub history: History,
    /// The last epoch trained.
    pub last_epoch: usize,
    /// Where `config.json` and `metrics.csv` were written.
    pub run_dir: std::path::PathBuf,
    /// The test split's values, once [`FitReport::test`] has measured them.
    pub test: Option<crate::inference::evaluate::Evaluation>,
    /// Why a callback stopped the run, if one did.
    pub stopped: Option<String>,
    /// `config.json` as this run wrote it (or would have, writing no file): what `--verify`
    /// compares with a recorded run's. `Null` on Burn's engine.
    pub config: serde_json::Value,
    /// Host reads of each epoch this process trained (`summary.md` says them too): the loss
    /// is read `read_every` steps at a time, Burn's metrics on each update.
    pub host_reads: Vec<u64>,
    /// On a rank of a data-parallel run, how the inference step's outputs travel between
    /// ranks (an `ItemCodec` of them, its type erased here, where `M` has no bound), so that
    /// [`FitReport::test`] measures the test split with the other ranks.
    pub(crate) measured_together: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl<M: LearnerModel> FitReport<M> {
    /// A [`Fit`] that continues this run where it stopped: the model back in training mode, the
    /// optimizer and schedule with their state, and the same options with `first_epoch` set to
    /// the next epoch, so shuffling continues as if the run had never stopped, in the same run
    /// directory. Set `epochs` on it and add the metrics again before calling [`Fit::run`].
    pub fn resume(self, options: FitOptions) -> Fit<M> {
        let run = self
            .run_dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        Fit::new(self.model.train(), self.optimizer, self.lr_scheduler).options(FitOptions {
            first_epoch: self.last_epoch + 1,
            run,
            ..options
        })
    }
}

#[derive(Serialize)]
struct ConfigJson<'a> {
    #[serde(flatten)]
    options: &'a FitOptions,
    metrics: MetricKeys,
    hyperparameters: &'a serde_json::Value,
    provenance: &'a Provenance,
    /// Settings that differ from the checkpoint this run resumed from (`resume_changed`).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    resumed_with_changes: &'a [String],
}

impl ConfigJson<'_> {
    /// `config.json`'s bytes, serialized here rather than in the generic [`Fit::run`], whose
    /// code is compiled again in every experiment crate.
    fn to_json(&self) -> std::io::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(std::io::Error::other)
    }

    /// `config.json`'s value, for the report (non-generic, like [`ConfigJson::to_json`]).
    fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[derive(Serialize)]
struct MetricKeys {
    train: Vec<String>,
    valid: Vec<String>,
}

impl<M: LearnerModel> Fit<M> {
    /// A run of `model` with `optimizer` (e.g. `AdamConfig::new().init()`) and a learning-rate
    /// schedule: a number for a constant rate, or any of Burn's `LrScheduler`s.
    /// An override of `TrainStep::optimize` in the model is what each optimizer step calls.
    pub fn new(
        model: M,
        optimizer: impl Into<ModuleOptimizer>,
        lr_schedule: impl Into<ModuleLrScheduler>,
    ) -> Self {
        let optimize: Optimize<M> =
            |model, optimizer, lr, grads| model.optimize(optimizer, lr, grads);
        Self::with_optimize(model, optimizer.into(), lr_schedule.into(), optimize)
    }

    /// [`Fit::new`] for a model whose `TrainStep::optimize` is Burn's default, as
    /// `training!` generates it: the step is `ModuleOptimizer::step` on the erased model
    /// ([`crate::erased`]), compiled once in this crate rather than in the experiment's.
    #[doc(hidden)]
    pub fn generated(model: M, optimizer: ModuleOptimizer, lr_schedule: ModuleLrScheduler) -> Self {
        let optimize: Optimize<M> = |model, optimizer, lr, grads| {
            AnyModule::new(model)
                .optimizer_step(optimizer, lr, grads)
                .into_inner()
        };
        Self::with_optimize(model, optimizer, lr_schedule, optimize)
    }

    fn with_optimize(
        model: M,
        optimizer: ModuleOptimizer,
        lr_scheduler: ModuleLrScheduler,
        optimize: Optimize<M>,
    ) -> Self {
        Self {
            model,
            optimizer,
            lr_scheduler,
            options: FitOptions::default(),
            train_metrics: Vec::new(),
            valid_metrics: Vec::new(),
            callbacks: Vec::new(),
            hyperparameters: serde_json::Value::Null,
            provenance: None,
            parallel: None,
            sharding: Sharding::default(),
            optimize,
            steps: None,
            casts: BatchCasts {
                train: None,
                valid: None,
            },
            to_f32: OutputCasts::default(),
            after_step: model_hooks::AfterSteps::default(),
            at_epoch_end: Vec::new(),
        }
    }

    /// Runs `hook` on the model after every optimizer step (weight clipping, as Burn's wgan
    /// clips its critic): what it returns is what the next batch trains. Hooks run in the
    /// order given, after the update and before the moving average (`ema`) follows it.
    pub fn after_step(mut self, hook: model_hooks::AfterStep<M>) -> Self {
        self.after_step.push(None, hook);
        self
    }

    /// [`Fit::after_step`] after the steps of the optimizer `optimizer` alone, in a
    /// several-optimizer experiment ([`Fit::steps`]).
    pub fn after_step_of(
        mut self,
        optimizer: &'static str,
        hook: model_hooks::AfterStep<M>,
    ) -> Self {
        self.after_step.push(Some(optimizer), hook);
        self
    }

    /// Runs `hook` at each epoch's end with the model as validation sees it (with `ema`, the
    /// moving average) and the run's directory: samples, images, anything written there. It
    /// runs after validation and before the epoch's checkpoint, on the process that writes the
    /// run directory (rank 0), and not in a run that writes no file (`--fast-dev-run`); its
    /// error stops the run.
    pub fn at_epoch_end(mut self, hook: model_hooks::AtEpochEnd<M>) -> Self {
        self.at_epoch_end.push(hook);
        self
    }

    /// Replaces every scalar option at once.
    pub fn options(mut self, options: FitOptions) -> Self {
        self.options = options;
        self
    }

    /// Changes the options in place: `fit.with_options(|o| o.epochs = 3)`.
    pub fn with_options(mut self, change: impl FnOnce(&mut FitOptions)) -> Self {
        change(&mut self.options);
        self
    }

    /// Records a metric on the training split. The step output must be able to feed it
    /// (`TrainStep::Output: Adaptor<Metric::Input>`), which the compiler checks.
    pub fn train_metric(mut self, metric: impl SplitMetric<TrainOutputOf<M>> + 'static) -> Self {
        self.train_metrics.push(Box::new(metric));
        self
    }

    /// Records a metric on the validation split (see [`Fit::train_metric`]).
    pub fn valid_metric(mut self, metric: impl SplitMetric<ValidOutputOf<M>> + 'static) -> Self {
        self.valid_metrics.push(Box::new(metric));
        self
    }

    /// Adds a callback; its hooks run after those of the callbacks added before it.
    pub fn callback(mut self, callback: impl Callback + 'static) -> Self {
        self.callbacks.push(Box::new(callback));
        self
    }

    /// Extra values saved under `hyperparameters` in `config.json` (the experiment's own config).
    pub fn hyperparameters(mut self, value: &impl Serialize) -> Self {
        self.hyperparameters = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self
    }

    /// What `config.json` records of how this run can be reproduced: versions, git state and
    /// data fingerprints (`training!` fills it in). Without it, the versions and the git state
    /// of the working directory.
    pub fn provenance(mut self, provenance: Provenance) -> Self {
        self.provenance = Some(provenance);
        self
    }

    /// Trains data-parallel when this process is one of several ranks of a job
    /// ([`crate::parallel`], `data_parallel: mpi`): the run equals one process's with
    /// `grad_accumulation` set to the number of ranks. `codecs` send the training and the
    /// validation step outputs between ranks (`(ItemCodec::of(), ItemCodec::of())`). Alone,
    /// the run is as without this call.
    pub fn data_parallel(
        mut self,
        (train, valid): (ItemCodec<TrainOutputOf<M>>, ItemCodec<ValidOutputOf<M>>),
    ) -> Self {
        self.parallel = Some(ParallelSetup {
            train,
            valid,
            code: ParallelCode::of(),
        });
        self
    }

    /// How the ranks of a data-parallel run split the parameters between them (whole tensors
    /// unless set): `Sharding::Ranges` only for an optimizer whose step is elementwise, such as
    /// `OptimizerSpec::sharding` says (`training!` sets it so). The optimizer step, a model's
    /// own `TrainStep::optimize` included, then receives tensors of shape `[1, …, 1, n]` holding
    /// a range of a parameter's values. Clipping by the global norm keeps whole tensors.
    pub fn sharding(mut self, sharding: Sharding) -> Self {
        self.sharding = sharding;
        self
    }

    /// Plays `steps` on each batch in place of `TrainStep::step`: a several-optimizer
    /// experiment ([`steps::several`] builds them with the optimizer and schedule this `Fit`
    /// must be given). Not with `grad_accumulation` or data-parallel training.
    pub fn steps(mut self, steps: Steps<M>) -> Self {
        self.steps = Some(steps);
        self
    }

    /// How the training and the validation batches are cast to the run's 16-bit precision
    /// (`FitOptions::precision`): a run in bf16 or f16 needs both, e.g.
    /// `fit.batch_casts(Some(cast), Some(cast))` with `fn cast(b: Batch, dtype: FloatDType) -> Batch`
    /// casting each float tensor of the batch; `training!` passes the batch's
    /// [`CastFloats`](crate::model::contract::CastFloats) where it has one.
    pub fn batch_casts(
        mut self,
        train: Option<CastFn<<M as TrainStep>::Input>>,
        valid: Option<CastFn<<M as InferenceStep>::Input>>,
    ) -> Self {
        self.casts = BatchCasts { train, valid };
        self
    }

    /// How a 16-bit run casts its step outputs back to f32 before the metrics see them, where
    /// the output types can be (`fn(O, FloatDType) -> O` casting each float tensor; `training!`
    /// passes the output's [`CastFloats`](crate::model::contract::CastFloats), which Burn's
    /// outputs and `#[derive(StepOutput)]` have). Burn computes some metrics only in f32: its
    /// F1, precision and recall build an f32 mask beside the predictions, and panic on 16-bit
    /// ones.
    pub fn output_casts(
        mut self,
        train: Option<CastFn<TrainOutputOf<M>>>,
        valid: Option<CastFn<ValidOutputOf<M>>>,
    ) -> Self {
        self.to_f32 = OutputCasts { train, valid };
        self
    }

    /// Trains on `device` (wrapped in autodiff if it is not already), validating on its
    /// non-autodiff twin after each epoch.
    ///
    /// Per batch, in the order of Burn's Learner and of a hand-written loop: training step
    /// (forward and backward), learning-rate step, optimizer step, metric updates. With gradient
    /// accumulation the two middle steps happen every `n` batches and after the last batch of
    /// an epoch, on gradients summed by Burn's `GradientsAccumulator`. With
    /// [`FitOptions::checkpoint`] set, each epoch ends with a checkpoint; with
    /// [`FitOptions::resume`] set, the run continues from one.
    pub fn run<I, B>(self, device: &Device, data: Data<I, B>) -> Result<FitReport<M>, FitError>
    where
        I: Send + Sync + 'static,
        B: Batcher<I, <M as TrainStep>::Input> + Batcher<I, <M as InferenceStep>::Input> + 'static,
    {
        let Fit {
            model,
            optimizer,
            lr_scheduler,
            options,
            mut train_metrics,
            mut valid_metrics,
            callbacks,
            hyperparameters,
            provenance,
            parallel,
            sharding,
            optimize,
            steps,
            casts,
            to_f32,
            after_step,
            at_epoch_end,
        } = self;
        let mut callbacks = Callbacks::new(callbacks, options.watch.clone());

        // 1. Everything that can be checked before a file is read or written.
        let (options, parallel) = checked_options(options, parallel)?;
        after_step.check(steps.as_ref())?;
        if steps.is_some() {
            for (option, given) in [
                ("grad_accumulation", options.grad_accumulation.is_some()),
                ("data_parallel", parallel.is_some()),
            ] {
                if given {
                    return Err(FitError::InvalidOption {
                        option,
                        message: "is not supported with several optimizers yet".to_owned(),
                    });
                }
            }
        }
        let castable = casts.train.is_some() && casts.valid.is_some();
        precision_supported(
            &options,
            (device, hyperparameters["device"].as_str()),
            parallel.is_some(),
            (castable, std::any::type_name::<<M as TrainStep>::Input>()),
        )?;
        let group = parallel.as_ref().map(|(group, _)| *group);
        let keys = MetricKeys {
            train: train_metrics.iter().map(|m| m.key().to_owned()).collect(),
            valid: valid_metrics.iter().map(|m| m.key().to_owned()).collect(),
        };
        keys.check_watched(&options)?;
        for (split, dataset) in [(Split::Train, &data.train), (Split::Valid, &data.valid)] {
            if dataset.is_empty() {
                return Err(FitError::EmptyDataset { split });
            }
        }
        let mut history = History::default();
        let series = Series {
            train: declare(&mut history, Split::Train, &train_metrics),
            valid: declare(&mut history, Split::Valid, &valid_metrics),
        };

        // 2. The model as the run starts it: pretrained weights, adapters, what is frozen; with
        // several optimizers, every parameter owned by one unless frozen for good.
        let (model, freeze) = starting_model(model, &options)?;
        if let Some(steps) = &steps {
            steps.all_owned(ModelRef::new(&model), |id, path| {
                freeze.as_ref().is_some_and(|f| f.holds_for_good(id, path))
            })?;
        }

        // 3. The run directory, and what a resume restores from its checkpoint.
        let (path, mut mirror) = run_dir_of(&options, group)?;
        let checkpoints = CheckpointDir::new(&path);
        let restored = resume::restore(
            &checkpoints,
            &options,
            &hyperparameters,
            (model, optimizer, lr_scheduler),
            history,
            &mut train_metrics,
            &mut callbacks,
        );
        if let Some(group) = group {
            // A refused resume reaches every rank alike, and rank 0's abort ends the others:
            // each removes its copy of rank 0's files, then all meet, before anyone reports.
            if restored.is_err() {
                drop(mirror.take());
            }
            group.all_gather(&[u8::from(restored.is_err())], Vec::new());
        }
        let mut start = restored?;
        if let Some(group) = group {
            start.model = crate::parallel::step::same_ids(group, start.model);
        }

        // 4. What the run writes: `config.json`, checkpoints, and the signal handler that lets
        // an interrupted step finish and be saved.
        let provenance = provenance.unwrap_or_else(|| Provenance::new(Path::new(".")));
        let files = RunFiles::open(
            path,
            &checkpoints,
            &options,
            ConfigSources {
                metrics: keys,
                hyperparameters: &hyperparameters,
                provenance: &provenance,
                changes: &start.changes,
            },
            Resumed {
                first_epoch: start.first_epoch,
                last_step: start.within.as_ref().map(|w| w.step),
                metrics: start.metrics,
                history: &mut start.history,
            },
            group,
        )?;

        // 5. The devices and the loaders.
        let train_device = training_device(device, &options);
        let loaders = Loaders::new(&options, data, &train_device, group.is_some(), casts)?;

        // 6. The training state: the model on its device, the optimizer and its clipping, the
        // moving average, and the exchange with the other ranks.
        let (optimizer, clip_norm) = clipped(start.optimizer, options.grad_clip);
        let model = on_device(
            start.model,
            &train_device,
            freeze.as_ref(),
            options.gradient_checkpointing,
            start.first_epoch,
        );
        let ema = moving_average(&model, options.ema, start.ema)?
            .map(|ema| Ok::<_, FitError>(ema.only(averaged(&model, &options.ema_on)?)))
            .transpose()?;
        // The norm of the gradients adds each tensor's squares, in one piece.
        let sharding = match clip_norm {
            Some(_) => Sharding::Tensors,
            None => sharding,
        };
        let parallel = parallel.map(|(group, setup)| DataParallel {
            exchange: Parallel::new(
                group,
                setup.train,
                train_device.clone().inner(),
                ModelRef::new(&model),
                sharding,
            ),
            valid: Outputs::new(group, setup.valid, train_device.clone().inner()),
            code: setup.code,
        });
        let optimizer = match &parallel {
            Some(parallel) => {
                crate::parallel::state::keep_own(optimizer, parallel.exchange.owners())?
            }
            None => optimizer,
        };
        let mut state = TrainState::new(
            model,
            optimize,
            optimizer,
            start.lr_scheduler,
            options.grad_accumulation,
            clip_norm,
            files.interrupt.is_some(),
        );
        state.ema = ema;
        state.parallel = parallel;
        state.draws = draws::Draws::new(&train_device, options.seed, options.ranks.is_some());
        state.steps = steps.map(|steps| steps.own(&state.model));
        state.after_step = after_step;
        state.at_epoch_end = at_epoch_end;
        state.precision = LowPrecision::new(options.precision, start.loss_scale);
        state.to_f32 = to_f32;

        // 7. The epochs, then the summary and the report.
        let mut run = ActiveRun {
            options: &options,
            hyperparameters: &hyperparameters,
            state,
            history: start.history,
            run_dir: files.run_dir,
            progress: Progress::new(options.quiet),
            features: Features {
                freeze,
                plateau: options.plateau.clone(),
                callbacks,
                saving: files.saving,
                early_stop: options.early_stopping.clone().map(EarlyStop::new),
            },
            config: files.config,
            host_reads: Vec::new(),
        };
        let last_epoch = run.epochs(
            start.first_epoch,
            start.within,
            &loaders,
            (&mut train_metrics, &mut valid_metrics),
            &series,
        );
        match last_epoch {
            Ok(last_epoch) => run.finish(last_epoch),
            Err(error) => {
                // An interrupted run was already told apart (`KILLED`).
                run.run_dir.fail_tracking(&error);
                Err(error)
            }
        }
    }
}

/// The options once checked, and the job this process trains in when it is one rank of a
/// data-parallel run (whose options it adjusts: see [`parallel_options`]).
#[allow(clippy::type_complexity)]
fn checked_options<S>(
    mut options: FitOptions,
    parallel: Option<S>,
) -> Result<
    (
        FitOptions,
        Option<(&'static dyn crate::parallel::Collective, S)>,
    ),
    FitError,
> {
    options.validate()?;
    if let Some(target) = &mut options.mlflow {
        target.forget_credentials("the MLflow tracking URI");
    }
    let parallel = parallel.and_then(|setup| crate::parallel::group().map(|g| (g, setup)));
    let options = match &parallel {
        Some((group, _)) => parallel_options(options, *group)?,
        None => options,
    };
    Ok((options, parallel))
}

/// Refuses a 16-bit `precision` the run cannot train in: on a device without the type's
/// arithmetic, data-parallel (not supported yet), or with a batch
/// type (named `batch`) the run cannot cast (`castable`).
fn precision_supported(
    options: &FitOptions,
    (device, spelled): (&Device, Option<&str>),
    parallel: bool,
    (castable, batch): (bool, &str),
) -> Result<(), FitError> {
    let precision = options.precision;
    if precision.low().is_none() {
        return Ok(());
    }
    let refuse = |message: String| {
        Err(FitError::Setting(crate::error::SettingError {
            option: "precision",
            message,
        }))
    };
    let name = precision.name();
    if parallel {
        return refuse(format!(
            "is {name}, which is not supported with data_parallel yet; use f32"
        ));
    }
    if !castable {
        return refuse(format!(
            "is {name}, which casts each batch's float tensors, and the batch type `{batch}` \
             cannot be cast: build it with #[derive(Batch)] or implement \
             burn_experiment::CastFloats for it"
        ));
    }
    precision.check(device, spelled).map_err(FitError::Setting)
}

/// The model before a resume loads into it: its lazy parameters drawn, then `init_from`'s
/// weights, then the LoRA adapters (part of the checkpoint's record), and what `freeze` holds.
fn starting_model<M: LearnerModel>(
    model: M,
    options: &FitOptions,
) -> Result<(M, Option<Freeze>), FitError> {
    crate::model::placement::draw(ModelRef::new(&model));
    let model = match &options.init_from {
        Some(file) => crate::model::weights::load_weights(model, file)?,
        None => model,
    };
    let model = match &options.lora {
        Some(lora) => crate::model::tuning::apply_lora(model, lora)?,
        None => model,
    };
    let freeze = Freeze::new(ModelRef::new(&model), options)?;
    Ok((model, freeze))
}

/// The autodiff device the training steps run on (with activation recomputation when
/// `gradient_checkpointing` is set); validation runs on its inner device.
fn training_device(device: &Device, options: &FitOptions) -> Device {
    let device = if device.is_autodiff() {
        device.clone()
    } else {
        device.clone().autodiff()
    };
    if options.gradient_checkpointing {
        device.gradient_checkpointing()
    } else {
        device
    }
}

/// Clipping by value and by each parameter's norm is Burn's, inside the optimizer; clipping by
/// the global norm is ours (`clip.rs`), so it is handed to the training state instead.
fn clipped(optimizer: ModuleOptimizer, clip: Option<GradClip>) -> (ModuleOptimizer, Option<f64>) {
    match clip {
        Some(GradClip::Value(max)) => (
            optimizer.with_grad_clipping(GradientClippingConfig::Value(max).init()),
            None,
        ),
        Some(GradClip::ParamNorm(max)) => (
            optimizer.with_grad_clipping(GradientClippingConfig::Norm(max).init()),
            None,
        ),
        Some(GradClip::Norm(max)) => (optimizer, Some(max)),
        None => (optimizer, None),
    }
}

/// The model forked onto the training device, with activation recomputation and its frozen
/// parameters marked (as of `first_epoch`, for an `unfreeze` schedule).
fn on_device<M: LearnerModel>(
    model: M,
    train_device: &Device,
    freeze: Option<&Freeze>,
    recompute: bool,
    first_epoch: usize,
) -> M {
    let model = model.fork(train_device);
    if freeze.is_none() && !recompute {
        return model;
    }
    let mut model = AnyModule::new(model);
    if recompute {
        model = recompute::recompute_activations(model);
    }
    if let Some(freeze) = freeze {
        model = freeze.start(model, first_epoch);
    }
    model.into_inner()
}

/// `ema`'s moving average: the checkpoint's when resuming, else started from the model.
fn moving_average<M: LearnerModel>(
    model: &M,
    decay: Option<f64>,
    saved: Option<burn::store::ModuleRecord>,
) -> Result<Option<Ema<M>>, FitError> {
    match (decay, saved) {
        (Some(decay), Some(record)) => {
            Ema::restored(model, decay, record)
                .map(Some)
                .map_err(|message| FitError::InvalidOption {
                    option: "resume",
                    message: format!(
                        "the checkpoint's moving average does not fit the model: {message}"
                    ),
                })
        }
        (Some(decay), None) => Ok(Some(Ema::new(model, decay))),
        (None, _) => Ok(None),
    }
}

/// The parameters of `model` under `paths` (`ema: .. on [..]`); `None` without paths: every one.
fn averaged<M: LearnerModel>(
    model: &M,
    paths: &[String],
) -> Result<Option<std::collections::HashSet<burn::module::ParamId>>, FitError> {
    if paths.is_empty() {
        return Ok(None);
    }
    let model = crate::erased::ModelRef::new(model);
    let group = crate::model::tuning::group(model, "ema", paths)?;
    Ok(Some(steps::owned_by(model, &group).into_iter().collect()))
}

/// The history indices of each split's metrics.
struct Series {
    train: Vec<usize>,
    valid: Vec<usize>,
}

fn declare<O>(
    history: &mut History,
    split: Split,
    metrics: &[Box<dyn SplitMetric<O>>],
) -> Vec<usize> {
    metrics
        .iter()
        .map(|m| history.declare(split, m.key(), m.higher_is_better()))
        .collect()
}

/// The changed settings every resume of this run accepted (`resume_changed`), the earlier ones
/// read from the `config.json` being replaced, then `now`'s: a later unchanged resume must not
/// erase from the record that the run was once continued with other settings.
fn earlier_changes(run_dir: &Path, options: &FitOptions, now: &[String]) -> Vec<String> {
    use std::io::ErrorKind;
    let path = run_dir.join("config.json");
    let saved = match options.resume {
        Some(_) => crate::read::config(&path),
        None => Err(ErrorKind::NotFound.into()),
    };
    let mut changes: Vec<String> = match saved {
        Ok(config) => {
            serde_json::from_value(config["resumed_with_changes"].clone()).unwrap_or_default()
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
        // The checkpoint, not this file, is what the run continues from; the file is written anew.
        Err(e) => {
            say!(
                "warning: the run's {} is unreadable ({e}); it is written anew from this run's settings",
                path.display()
            );
            Vec::new()
        }
    };
    changes.extend(
        now.iter()
            .filter(|c| !changes.contains(c))
            .cloned()
            .collect::<Vec<_>>(),
    );
    changes
}

/// What `config.json` records besides the options.
struct ConfigSources<'a> {
    metrics: MetricKeys,
    hyperparameters: &'a serde_json::Value,
    provenance: &'a Provenance,
    /// Settings that differ from the checkpoint this run resumed from (`resume_changed`).
    changes: &'a [String],
}

/// Where the run starts, as the files it writes need it.
struct Resumed<'a> {
    first_epoch: usize,
    /// The last step of the epoch an interrupted run stopped in, when the run continues within it.
    last_step: Option<usize>,
    /// The checkpoint's record of `metrics.csv`, for a run continuing from one.
    metrics: Option<crate::digest::Digest>,
    /// The restored history, given its per-step values back from `metrics.csv`.
    history: &'a mut History,
}

/// What a run writes, opened before its first step. Non-generic, so compiled once here rather
/// than in every experiment.
struct RunFiles {
    run_dir: RunWriter,
    /// `config.json`'s value, handed back in the report.
    config: serde_json::Value,
    /// Checkpoints (rank 0 alone writes them).
    saving: Option<Saving>,
    /// Installed when there is a checkpoint to save on a signal, and on every rank of a
    /// data-parallel run (the ranks stop together).
    interrupt: Option<Interrupt>,
}

impl RunFiles {
    fn open(
        path: PathBuf,
        checkpoints: &CheckpointDir,
        options: &FitOptions,
        sources: ConfigSources<'_>,
        resumed: Resumed<'_>,
        group: Option<&dyn crate::parallel::Collective>,
    ) -> Result<Self, FitError> {
        let changes = earlier_changes(&path, options, sources.changes);
        let config = ConfigJson {
            options,
            metrics: sources.metrics,
            hyperparameters: sources.hyperparameters,
            provenance: sources.provenance,
            resumed_with_changes: &changes,
        };
        let run_dir = if options.write_files {
            let csv = path.join("metrics.csv");
            let continues = match resumed.metrics {
                Some(mark) => {
                    crate::output::metrics_csv::resume(&csv, mark, resumed.history)?;
                    Some(mark)
                }
                // A finished run continued in this process (`FitReport::resume`): its file is
                // complete, and this run's rows follow its own.
                None if resumed.first_epoch > 1 => crate::output::metrics_csv::as_it_is(&csv)?,
                None => None,
            };
            config
                .to_json()
                .and_then(|json| RunWriter::create(&path, &json, continues, resumed.history))
                .map_err(|source| FitError::RunDir {
                    path: path.clone(),
                    source,
                })?
        } else {
            RunWriter::disabled(&path)
        };
        let mut run_dir = run_dir;
        // Rank 0 alone tracks a data-parallel run, as it alone writes its files.
        if let Some(target) = &options.mlflow
            && options.write_files
            && group.is_none_or(|group| group.rank() == 0)
        {
            let config = config.to_value();
            let info = crate::output::mlflow::RunInfo {
                run_dir: path.clone(),
                name: crate::output::mlflow::tracked_name(&path),
                experiment: target
                    .experiment
                    .clone()
                    .unwrap_or_else(|| options.name.clone()),
                parent_run: target.parent_run.clone(),
                tags: crate::output::mlflow::tags_of(&config, &path),
                config,
            };
            // A URI this runtime cannot speak to (`https://`, `databricks`, left in the
            // environment for another tool) costs the run nothing either: one line, no tracking.
            match crate::output::mlflow::Tracker::start(target, info) {
                Ok(tracker) => run_dir.track(tracker),
                Err(message) => {
                    say!("warning: MLflow tracking is off for this run: {message}")
                }
            }
        }
        let saving = match group {
            Some(group) if group.rank() != 0 => None,
            _ => Saving::open(
                checkpoints,
                options,
                resumed.last_step.is_some(),
                resumed.history,
            )?,
        };
        let interrupt = match (&saving, group) {
            (None, None) => None,
            _ => Some(Interrupt::install().map_err(FitError::Signals)?),
        };
        Ok(Self {
            run_dir,
            config: config.to_value(),
            saving,
            interrupt,
        })
    }
}

/// The two loaders of a run: training batches on the autodiff device, validation batches on
/// its inner device, both from one batcher.
struct Loaders<I, M: LearnerModel> {
    train: Loader<I, <M as TrainStep>::Input>,
    valid: Loader<I, <M as InferenceStep>::Input>,
}

impl<I, M> Loaders<I, M>
where
    I: Send + Sync + 'static,
    M: LearnerModel,
{
    fn new<B>(
        options: &FitOptions,
        data: Data<I, B>,
        train_device: &Device,
        parallel: bool,
        casts: BatchCasts<M>,
    ) -> Result<Self, FitError>
    where
        B: Batcher<I, <M as TrainStep>::Input> + Batcher<I, <M as InferenceStep>::Input> + 'static,
    {
        let batcher = Arc::new(data.batcher);
        let low = options.precision.low();
        let train_batcher: Arc<dyn Batcher<I, <M as TrainStep>::Input>> = batcher.clone();
        let train_batcher = crate::data::casting(train_batcher, casts.train, low);
        let valid_batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>> = batcher;
        let valid_batcher = crate::data::casting(valid_batcher, casts.valid, low);
        let train = Loader::new(
            "train",
            data.train,
            train_batcher,
            train_device.clone(),
            options.batch_size,
            options.shuffle,
            options.workers,
        )
        .map_err(FitError::Workers)?;
        let train = match data.augment {
            Some(augment) => train.augment(augment, options.shuffle.unwrap_or(0)),
            None => train,
        };
        let valid = Loader::new(
            "valid",
            data.valid,
            valid_batcher,
            train_device.clone().inner(),
            options.batch_size,
            None,
            options.workers,
        )
        .map_err(FitError::Workers)?;
        if parallel {
            // The ranks stop together, at a step they agree on: none may give up a batch early.
            return Ok(Self {
                train: train.patient(),
                valid: valid.patient(),
            });
        }
        Ok(Self { train, valid })
    }
}

impl MetricKeys {
    /// Early stopping and `best(..)` policies may only watch recorded metrics.
    fn check_watched(&self, options: &FitOptions) -> Result<(), FitError> {
        let recorded = |split: Split, metric: &str| match split {
            Split::Train => self.train.iter().any(|k| k == metric),
            Split::Valid => self.valid.iter().any(|k| k == metric),
            Split::Test => false,
        };
        let watched = options
            .early_stopping
            .iter()
            .map(|s| ("early_stopping", s.split, s.metric.as_str()))
            .chain(options.checkpoint.iter().flatten().filter_map(|p| match p {
                Policy::Best { split, metric } => Some(("checkpoint", *split, metric.as_str())),
                _ => None,
            }))
            .chain(
                options
                    .plateau
                    .iter()
                    .map(|p| ("lr_schedule", p.split, p.metric.as_str())),
            );
        for (option, split, metric) in watched {
            if !recorded(split, metric) {
                return Err(FitError::InvalidOption {
                    option,
                    message: format!(
                        "watches {split}.{metric}, which is not recorded: add it to the {split} metrics"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The run directory, and on a rank other than 0 of a data-parallel run the private copy of
/// rank 0's a resume reads (none without a resume: that rank writes nothing). Non-generic, so
/// compiled once here rather than in every experiment.
fn run_dir_of(
    options: &FitOptions,
    group: Option<&dyn crate::parallel::Collective>,
) -> Result<(PathBuf, Option<Mirror>), FitError> {
    let Some(group) = group else {
        return Ok((options.resolve_run_dir()?, None));
    };
    let own = match group.rank() {
        0 => options.resolve_run_dir()?,
        rank => Mirror::private(rank),
    };
    if options.resume.is_none() {
        return Ok((own, None));
    }
    let mirror =
        Mirror::share(group, &own).map_err(|source| FitError::RunDir { path: own, source })?;
    Ok((mirror.path().to_owned(), Some(mirror)))
}

/// `options` for one rank of a data-parallel run: the number of ranks recorded, and only rank 0
/// writing files or printing.
fn parallel_options(
    mut options: FitOptions,
    group: &dyn crate::parallel::Collective,
) -> Result<FitOptions, FitError> {
    if options.grad_accumulation.is_some_and(|n| n > 1) {
        return Err(ParallelError::Unsupported {
            setting: "grad_accumulation",
            fix: "each optimizer step already sums one batch per rank; launch more ranks instead",
        }
        .into());
    }
    if matches!(options.grad_clip, Some(GradClip::ParamNorm(_))) {
        return Err(ParallelError::Unsupported {
            setting: "grad_clip",
            fix: "param_norm(..) needs each parameter's whole gradient, which a data-parallel run holds in slices across ranks: use norm(..) (one global norm, exact across ranks) or value(..)",
        }
        .into());
    }
    options.ranks = Some(group.size());
    if group.rank() != 0 {
        options.write_files = false;
        options.quiet = true;
    }
    Ok(options)
}
