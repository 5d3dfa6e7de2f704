//! The fit loop: Burn's training step order, our data order, outputs a person can read.

pub mod callback;
mod clip;
mod draws;
mod early_stop;
mod ema;
pub mod engine;
pub(crate) mod epoch;
mod finite;
mod freeze;
mod hooks;
mod recompute;
mod resume;
pub(crate) use resume::changes as setting_changes;
mod run;
mod saving;
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

use crate::{FitError, FitOptions};

use crate::callback::{Callback, Callbacks};
use crate::checkpoint::{CheckpointDir, Policy};
use crate::data::Loader;
use crate::erased::{AnyModule, ModelRef};
use crate::history::{History, Split};
use crate::interrupt::Interrupt;
use crate::metric::SplitMetric;
use crate::output::progress::Progress;
use crate::output::run_writer::RunWriter;
use crate::parallel::mirror::Mirror;
use crate::parallel::step::{Outputs, Parallel};
use crate::parallel::{ItemCodec, ParallelError};
use crate::provenance::Provenance;
use crate::spec::GradClip;
use early_stop::EarlyStop;
use ema::Ema;
use epoch::{DataParallel, ParallelCode, TrainState};
use freeze::Freeze;
use hooks::Features;
use run::ActiveRun;
use saving::Saving;
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
    optimize: Optimize<M>,
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
    pub test: Option<crate::evaluate::Evaluation>,
    /// Why a callback stopped the run, if one did.
    pub stopped: Option<String>,
    /// `config.json` as this run wrote it (or would have, writing no file): what `--verify`
    /// compares with a recorded run's. `Null` on Burn's engine.
    pub config: serde_json::Value,
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
            optimize,
        }
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
        I: Clone + Send + Sync + 'static,
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
            optimize,
        } = self;
        let mut callbacks = Callbacks::new(callbacks);
        options.validate()?;
        crate::model::placement::draw(ModelRef::new(&model));
        let parallel = parallel.and_then(|code| crate::parallel::group().map(|g| (g, code)));
        let options = match &parallel {
            Some((group, _)) => parallel_options(options, *group)?,
            None => options,
        };
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

        let model = match &options.init_from {
            Some(file) => crate::weights::load_weights(model, file)?,
            None => model,
        };
        // Before a resume loads its checkpoint: the adapters are part of the model's record.
        let model = match &options.lora {
            Some(lora) => crate::tuning::apply_lora(model, lora)?,
            None => model,
        };
        let freeze = Freeze::new(ModelRef::new(&model), &options)?;
        let (path, _mirror) = run_dir_of(&options, parallel.as_ref().map(|(group, _)| *group))?;
        let checkpoints = CheckpointDir::new(&path);
        let mut start = resume::restore(
            &checkpoints,
            &options,
            &hyperparameters,
            (model, optimizer, lr_scheduler),
            history,
            &mut train_metrics,
            &mut callbacks,
        )?;
        if let Some((group, _)) = &parallel {
            start.model = crate::parallel::step::same_ids(*group, start.model);
        }
        let provenance = provenance.unwrap_or_else(|| Provenance::new(Path::new(".")));
        let changes = earlier_changes(&path, &options, &start.changes);
        let config = ConfigJson {
            options: &options,
            metrics: keys,
            hyperparameters: &hyperparameters,
            provenance: &provenance,
            resumed_with_changes: &changes,
        };
        let run_dir = open_run_dir(path, &options, &config, &start)?;
        let config = config.to_value();
        // Rank 0 alone writes checkpoints.
        let saving = match &parallel {
            Some((group, _)) if group.rank() != 0 => None,
            _ => Saving::open(
                &checkpoints,
                &options,
                start.within.is_some(),
                &start.history,
            )?,
        };
        // Every rank of a data-parallel run holds it: the ranks stop together (`parallel`).
        let interrupt = match (&saving, &parallel) {
            (None, None) => None,
            _ => Some(Interrupt::install().map_err(FitError::Signals)?),
        };

        let train_device = if device.is_autodiff() {
            device.clone()
        } else {
            device.clone().autodiff()
        };
        let train_device = if options.gradient_checkpointing {
            train_device.gradient_checkpointing()
        } else {
            train_device
        };
        let mut loaders = Loaders::new(&options, data, &train_device)?;
        if parallel.is_some() {
            loaders.train = loaders.train.patient();
            loaders.valid = loaders.valid.patient();
        }
        let (optimizer, clip_norm) = match options.grad_clip {
            Some(GradClip::Value(max)) => (
                start
                    .optimizer
                    .with_grad_clipping(GradientClippingConfig::Value(max).init()),
                None,
            ),
            Some(GradClip::Norm(max)) => (start.optimizer, Some(max)),
            None => (start.optimizer, None),
        };
        let model = start.model.fork(&train_device);
        let model = match (&freeze, options.gradient_checkpointing) {
            (None, false) => model,
            (freeze, recompute) => {
                let mut model = AnyModule::new(model);
                if recompute {
                    model = recompute::recompute_activations(model);
                }
                if let Some(freeze) = freeze {
                    model = freeze.start(model, start.first_epoch);
                }
                model.into_inner()
            }
        };
        let ema = match (options.ema, start.ema) {
            (Some(decay), Some(record)) => {
                Some(Ema::restored(&model, decay, record).map_err(|message| {
                    FitError::InvalidOption {
                        option: "resume",
                        message: format!(
                            "the checkpoint's moving average does not fit the model: {message}"
                        ),
                    }
                })?)
            }
            (Some(decay), None) => Some(Ema::new(&model, decay)),
            (None, _) => None,
        };
        let parallel = parallel.map(|(group, setup)| DataParallel {
            exchange: Parallel::new(
                group,
                setup.train,
                train_device.clone().inner(),
                ModelRef::new(&model),
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
            interrupt.is_some(),
        );
        state.ema = ema;
        state.parallel = parallel;
        state.draws = draws::Draws::new(&train_device, options.seed, options.ranks.is_some());
        let mut run = ActiveRun {
            options: &options,
            hyperparameters: &hyperparameters,
            state,
            history: start.history,
            run_dir,
            progress: Progress::new(options.quiet),
            features: Features {
                freeze,
                plateau: options.plateau.clone(),
                callbacks,
                saving,
                early_stop: options.early_stopping.clone().map(EarlyStop::new),
            },
            config,
        };
        let last_epoch = run.epochs(
            start.first_epoch,
            start.within,
            &loaders,
            (&mut train_metrics, &mut valid_metrics),
            &series,
        )?;
        run.finish(last_epoch)
    }
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
    let mut changes: Vec<String> = match options.resume {
        Some(_) => std::fs::read(run_dir.join("config.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|config| serde_json::from_value(config["resumed_with_changes"].clone()).ok())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    changes.extend(
        now.iter()
            .filter(|c| !changes.contains(c))
            .cloned()
            .collect::<Vec<_>>(),
    );
    changes
}

/// `config.json` and the run directory, or a disabled one when no file should be written.
fn open_run_dir<M>(
    path: PathBuf,
    options: &FitOptions,
    config: &ConfigJson,
    start: &resume::Start<M>,
) -> Result<RunWriter, FitError> {
    if !options.write_files {
        return Ok(RunWriter::disabled(&path));
    }
    let last_step = start.within.as_ref().map(|w| w.step);
    config
        .to_json()
        .and_then(|json| {
            RunWriter::create(
                &path,
                &json,
                start.first_epoch - 1,
                last_step,
                &start.history,
            )
        })
        .map_err(|source| FitError::RunDir { path, source })
}

/// The two loaders of a run: training batches on the autodiff device, validation batches on
/// its inner device, both from one batcher.
struct Loaders<I, M: LearnerModel> {
    train: Loader<I, <M as TrainStep>::Input>,
    valid: Loader<I, <M as InferenceStep>::Input>,
}

impl<I, M> Loaders<I, M>
where
    I: Clone + Send + Sync + 'static,
    M: LearnerModel,
{
    fn new<B>(
        options: &FitOptions,
        data: Data<I, B>,
        train_device: &Device,
    ) -> Result<Self, FitError>
    where
        B: Batcher<I, <M as TrainStep>::Input> + Batcher<I, <M as InferenceStep>::Input> + 'static,
    {
        let batcher = Arc::new(data.batcher);
        let train_batcher: Arc<dyn Batcher<I, <M as TrainStep>::Input>> = batcher.clone();
        let valid_batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>> = batcher;
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
    options.ranks = Some(group.size());
    if group.rank() != 0 {
        options.write_files = false;
        options.quiet = true;
    }
    Ok(options)
}
