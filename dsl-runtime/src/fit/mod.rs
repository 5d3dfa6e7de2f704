//! The fit loop: Burn's training step order, our data order, outputs a person can read.

mod clip;
mod early_stop;
pub(crate) mod epoch;
mod error;
mod interrupt;
mod options;
mod resume;

use std::sync::Arc;
use std::time::Instant;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::grad_clipping::GradientClippingConfig;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::optim::ModuleOptimizer;
use burn::tensor::Device;
use burn::train::{InferenceStep, LearnerModel, TrainStep};
use serde::Serialize;

pub use error::FitError;
pub use options::FitOptions;

use crate::checkpoint::{
    CheckpointDir, CheckpointError, EpochState as CheckpointState, Policy, Slot, Within, Writer,
    retained,
};
use crate::data::Loader;
use crate::history::{History, Split};
use crate::metric::SplitMetric;
use crate::output::progress::Progress;
use crate::output::run_dir::RunDir;
use crate::output::{console, plot};
use crate::spec::GradClip;
use early_stop::Plateau;
use epoch::{EpochEnd, EpochState, TrainState};
use interrupt::Interrupt;

/// The output of the model's training step.
pub type TrainOutputOf<M> = <M as TrainStep>::Output;
/// The output of the model's inference (validation) step.
pub type ValidOutputOf<M> = <M as InferenceStep>::Output;

/// Train and valid datasets of items `I`, and the batcher turning items into the model's inputs.
pub struct Data<I, B> {
    pub(crate) train: Arc<dyn Dataset<I>>,
    pub(crate) valid: Arc<dyn Dataset<I>>,
    pub(crate) batcher: B,
}

impl<I, B> Data<I, B> {
    /// Any two Burn datasets and a Burn batcher.
    pub fn new(
        train: impl Dataset<I> + 'static,
        valid: impl Dataset<I> + 'static,
        batcher: B,
    ) -> Self {
        Self {
            train: Arc::new(train),
            valid: Arc::new(valid),
            batcher,
        }
    }

    /// Datasets already behind shared handles.
    pub fn from_shared(train: Arc<dyn Dataset<I>>, valid: Arc<dyn Dataset<I>>, batcher: B) -> Self {
        Self {
            train,
            valid,
            batcher,
        }
    }
}

/// A configured run: model, optimizer, learning-rate schedule, options and metrics.
///
/// See `dsl-runtime/tests/seed_classification.rs` for a complete run next to the hand-written
/// Burn loop it reproduces.
pub struct Fit<M: LearnerModel> {
    model: M,
    optimizer: ModuleOptimizer,
    lr_scheduler: ModuleLrScheduler,
    options: FitOptions,
    train_metrics: Vec<Box<dyn SplitMetric<TrainOutputOf<M>>>>,
    valid_metrics: Vec<Box<dyn SplitMetric<ValidOutputOf<M>>>>,
    hyperparameters: serde_json::Value,
}

/// What a finished run hands back.
pub struct FitReport<M> {
    /// The trained model in inference mode (`Module::valid`), as Burn's `LearningResult` gives
    /// it. To train it further call `.train()` on it first; see [`FitReport::resume`].
    pub model: M,
    /// The optimizer with its state (Adam moments, ...), to continue training. On Burn's engine
    /// (`engine: burn`, several devices) the optimizer as given: Burn's Learner does not hand
    /// its state back, so continue such a run from its checkpoints (`resume`).
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
}

impl<M: LearnerModel> FitReport<M> {
    /// A [`Fit`] that continues this run where it stopped: the model back in training mode, the
    /// optimizer and schedule with their state, and the same options with `first_epoch` set to
    /// the next epoch, so shuffling continues as if the run had never stopped. Set `epochs` on it
    /// and add the metrics again before calling [`Fit::run`].
    pub fn resume(self, options: FitOptions) -> Fit<M> {
        Fit::new(self.model.train(), self.optimizer, self.lr_scheduler).options(FitOptions {
            first_epoch: self.last_epoch + 1,
            ..options
        })
    }
}

#[derive(Serialize)]
struct RunConfig<'a> {
    #[serde(flatten)]
    options: &'a FitOptions,
    metrics: MetricKeys,
    hyperparameters: &'a serde_json::Value,
}

impl RunConfig<'_> {
    /// `config.json`'s bytes, serialized here rather than in the generic [`Fit::run`], whose
    /// code is compiled again in every experiment crate.
    fn to_json(&self) -> std::io::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(std::io::Error::other)
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
    pub fn new(
        model: M,
        optimizer: impl Into<ModuleOptimizer>,
        lr_schedule: impl Into<ModuleLrScheduler>,
    ) -> Self {
        Self {
            model,
            optimizer: optimizer.into(),
            lr_scheduler: lr_schedule.into(),
            options: FitOptions::default(),
            train_metrics: Vec::new(),
            valid_metrics: Vec::new(),
            hyperparameters: serde_json::Value::Null,
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

    /// Extra values saved under `hyperparameters` in `config.json` (the experiment's own config).
    pub fn hyperparameters(mut self, value: &impl Serialize) -> Self {
        self.hyperparameters = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
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
            mut model,
            mut optimizer,
            mut lr_scheduler,
            options,
            mut train_metrics,
            mut valid_metrics,
            hyperparameters,
        } = self;
        options.validate()?;
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
        let train_series: Vec<usize> = train_metrics
            .iter()
            .map(|m| history.declare(Split::Train, m.key(), m.higher_is_better()))
            .collect();
        let valid_series: Vec<usize> = valid_metrics
            .iter()
            .map(|m| history.declare(Split::Valid, m.key(), m.higher_is_better()))
            .collect();

        let path = options.run_dir();
        let checkpoints = CheckpointDir::new(&path);
        let mut first_epoch = options.first_epoch;
        // Where a run interrupted inside an epoch stopped in it.
        let mut within: Option<Within> = None;
        match options.resume {
            Some(resume) => {
                if let Some(loaded) = resume::load(&checkpoints, resume, options.quiet)? {
                    history = resume::history(loaded.state.history, &history)?;
                    model = model.try_load_record(loaded.model).map_err(|e| {
                        CheckpointError::Mismatch {
                            file: checkpoints.model_file(loaded.slot),
                            reason: e.to_string(),
                        }
                    })?;
                    optimizer = optimizer.load_record(loaded.optimizer);
                    lr_scheduler = lr_scheduler.load_record(loaded.scheduler);
                    first_epoch = loaded.state.epoch + 1;
                    within = loaded.state.within;
                }
            }
            None if options.checkpoint.is_some() && options.write_files && first_epoch == 1 => {
                checkpoints.clear()?
            }
            None => {}
        }

        let config = RunConfig {
            options: &options,
            metrics: keys,
            hyperparameters: &hyperparameters,
        };
        let mut run_dir = if options.write_files {
            let last_step = within.as_ref().map(|w| w.step);
            config
                .to_json()
                .and_then(|json| RunDir::create(&path, &json, first_epoch - 1, last_step))
                .map_err(|source| FitError::RunDir { path, source })?
        } else {
            RunDir::disabled(&path)
        };
        let mut progress = Progress::new(options.quiet);
        let mut saving = match &options.checkpoint {
            Some(policies) => Some(Saving {
                writer: checkpoints.writer()?,
                saved: checkpoints.epochs()?,
                policies: policies.clone(),
                interrupted_on_disk: checkpoints.has_interrupted(),
            }),
            None => None,
        };
        if let Some(saving) = &mut saving
            && saving.interrupted_on_disk
            && within.is_none()
        {
            // Not continuing from an interrupted run's checkpoint makes it stale.
            saving.writer.delete(Slot::Interrupted)?;
            saving.interrupted_on_disk = false;
        }
        if let Some(within) = &within {
            if within.carried.len() != train_metrics.len() {
                return Err(FitError::InvalidOption {
                    option: "resume",
                    message: "the interrupted run recorded other training metrics: resume with the same metrics".to_owned(),
                });
            }
            for (metric, carried) in train_metrics.iter_mut().zip(&within.carried) {
                metric
                    .restore(carried)
                    .map_err(|message| FitError::InvalidOption {
                        option: "resume",
                        message,
                    })?;
            }
        }
        let interrupt = match saving {
            Some(_) => Some(Interrupt::install().map_err(FitError::Signals)?),
            None => None,
        };

        let train_device = if device.is_autodiff() {
            device.clone()
        } else {
            device.clone().autodiff()
        };
        let valid_device = train_device.clone().inner();
        let batcher = Arc::new(data.batcher);
        let train_batcher: Arc<dyn Batcher<I, <M as TrainStep>::Input>> = batcher.clone();
        let valid_batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>> = batcher;
        let train_loader = Loader::new(
            "train",
            data.train,
            train_batcher,
            train_device.clone(),
            options.batch_size,
            options.shuffle,
            options.workers,
        )
        .map_err(FitError::Workers)?;
        let valid_loader = Loader::new(
            "valid",
            data.valid,
            valid_batcher,
            valid_device,
            options.batch_size,
            None,
            options.workers,
        )
        .map_err(FitError::Workers)?;

        let (optimizer, clip_norm) = match options.grad_clip {
            Some(GradClip::Value(max)) => (
                optimizer.with_grad_clipping(GradientClippingConfig::Value(max).init()),
                None,
            ),
            Some(GradClip::Norm(max)) => (optimizer, Some(max)),
            None => (optimizer, None),
        };
        let mut state = TrainState::new(
            model.fork(&train_device),
            optimizer,
            lr_scheduler,
            options.grad_accumulation,
            clip_norm,
            interrupt.as_ref().map(Interrupt::flag),
        );
        let mut stopper = options.early_stopping.clone().map(Plateau::new);
        // A resumed run replays the epochs it restored, so patience counts across the restart.
        let mut stopped = (options.first_epoch..first_epoch).any(|epoch| {
            stopper
                .as_mut()
                .is_some_and(|s| s.should_stop(&history, epoch))
        });
        let mut last_epoch = first_epoch - 1;
        let steps_per_epoch = train_loader.num_items().div_ceil(options.batch_size);
        // A run whose restored epochs already triggered early stopping trains no further.
        let last = if stopped { last_epoch } else { options.epochs };
        for epoch in first_epoch..=last {
            let started = Instant::now();
            let mut ctx = EpochState {
                epoch,
                last_epoch: options.epochs,
                history: &mut history,
                run_dir: &mut run_dir,
                progress: &mut progress,
                limits: (options.limit_train_batches, options.limit_valid_batches),
            };
            let done = within.take().map_or(0, |within| within.batches);
            let trained = state.train_epoch(
                &train_loader,
                (epoch - 1) * steps_per_epoch,
                done,
                &mut train_metrics,
                &train_series,
                &mut ctx,
            )?;
            if let EpochEnd::Interrupted { batches, step } = trained {
                run_dir.flush().map_err(|source| FitError::RunDir {
                    path: run_dir.path().to_owned(),
                    source,
                })?;
                let newest = saving.as_ref().and_then(|s| s.saved.last().copied());
                let saved_here = match saving {
                    Some(saving) => saving.interrupted(
                        epoch,
                        Within {
                            batches,
                            step,
                            carried: Vec::new(),
                        },
                        &train_metrics,
                        &state,
                        &history,
                        (&options, &hyperparameters),
                    )?,
                    None => false,
                };
                return Err(FitError::Interrupted {
                    epoch,
                    step,
                    saved_here,
                    checkpoint: newest,
                });
            }
            epoch::valid_epoch(
                &state.model,
                &valid_loader,
                &mut valid_metrics,
                &valid_series,
                &mut ctx,
            )?;
            run_dir.flush().map_err(|source| FitError::RunDir {
                path: run_dir.path().to_owned(),
                source,
            })?;
            progress.epoch_end(|| {
                console::epoch_line(&history, epoch, options.epochs, started.elapsed())
            });
            if let Some(saving) = &mut saving {
                saving.epoch_done(epoch, &state, &history, (&options, &hyperparameters))?;
            }
            last_epoch = epoch;
            stopped = stopper
                .as_mut()
                .is_some_and(|s| s.should_stop(&history, epoch));
            if stopped {
                break;
            }
        }
        if let Some(saving) = saving {
            saving.writer.finish()?;
        }
        let summary = console::summary_table(&history);
        let io = |source| FitError::RunDir {
            path: run_dir.path().to_owned(),
            source,
        };
        run_dir
            .write_file(
                "summary.md",
                format!("# {}\n\n{summary}", options.name).as_bytes(),
            )
            .map_err(io)?;
        if run_dir.enabled() {
            let svg = plot::curves_svg(&history).map_err(|e| io(std::io::Error::other(e)))?;
            run_dir
                .write_file("curves.svg", svg.as_bytes())
                .map_err(io)?;
        }
        if !options.quiet {
            if stopped && let Some(stopper) = &stopper {
                eprintln!("early stopping: {}", stopper.reason());
            }
            eprint!("{summary}");
        }

        Ok(FitReport {
            model: state.model.valid(),
            optimizer: state.optimizer,
            lr_scheduler: state.lr_scheduler,
            history,
            last_epoch,
            run_dir: run_dir.path().to_owned(),
        })
    }
}

impl MetricKeys {
    /// Early stopping and `best(..)` policies may only watch recorded metrics.
    fn check_watched(&self, options: &FitOptions) -> Result<(), FitError> {
        let recorded = |split: Split, metric: &str| match split {
            Split::Train => self.train.iter().any(|k| k == metric),
            Split::Valid => self.valid.iter().any(|k| k == metric),
        };
        let watched = options
            .early_stopping
            .iter()
            .map(|s| ("early_stopping", s.split, s.metric.as_str()))
            .chain(options.checkpoint.iter().flatten().filter_map(|p| match p {
                Policy::Best { split, metric } => Some(("checkpoint", *split, metric.as_str())),
                _ => None,
            }));
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

/// The checkpoint side of a run: the writer, the epochs on disk and the keep rules.
struct Saving {
    writer: Writer,
    saved: Vec<usize>,
    policies: Vec<Policy>,
    /// Whether an interrupted run's checkpoint is still there, to delete once an epoch ends.
    interrupted_on_disk: bool,
}

impl Saving {
    /// Queues `epoch`'s checkpoint, then the deletion of epochs no policy keeps any more and of
    /// the checkpoint an interrupted run left inside this epoch, if any.
    fn epoch_done<M: LearnerModel>(
        &mut self,
        epoch: usize,
        state: &TrainState<M>,
        history: &History,
        run: (&FitOptions, &serde_json::Value),
    ) -> Result<(), FitError> {
        self.write(Slot::Epoch(epoch), epoch, None, state, history, run)?;
        if self.interrupted_on_disk {
            self.writer.delete(Slot::Interrupted)?;
            self.interrupted_on_disk = false;
        }
        self.saved.retain(|&e| e != epoch);
        self.saved.push(epoch);
        let keep = retained(&self.policies, &self.saved, epoch, history);
        for &old in self.saved.iter().filter(|e| !keep.contains(e)) {
            self.writer.delete(Slot::Epoch(old))?;
        }
        self.saved = keep;
        Ok(())
    }

    /// Ends a run interrupted inside an epoch: writes where it got to when every training
    /// metric can carry its state over (otherwise the epoch is trained again on resume, which
    /// keeps every metric exact), then waits for all writes. Returns whether it wrote.
    fn interrupted<M: LearnerModel>(
        self,
        epoch: usize,
        mut within: Within,
        train_metrics: &[Box<dyn SplitMetric<TrainOutputOf<M>>>],
        state: &TrainState<M>,
        history: &History,
        run: (&FitOptions, &serde_json::Value),
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
                    history,
                    run,
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
        history: &History,
        (options, hyperparameters): (&FitOptions, &serde_json::Value),
    ) -> Result<(), FitError> {
        self.writer.write(
            slot,
            CheckpointState {
                epoch,
                files: Default::default(),
                history: history.clone(),
                options: options.clone(),
                hyperparameters: hyperparameters.clone(),
                within,
            },
            state.model.clone().into_record(),
            state.optimizer.to_record(),
            state.lr_scheduler.to_record(),
        )?;
        Ok(())
    }
}
