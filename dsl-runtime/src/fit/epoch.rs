//! One training epoch and one validation epoch.

use burn::lr_scheduler::module_lr_scheduler::{ModuleLearningRate, ModuleLrScheduler};
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer, OptimizerRecord};
use burn::tensor::FloatDType;
use burn::train::metric::MetricMetadata;
use burn::train::{InferenceStep, ItemLazy, LearnerModel, TrainStep};

use super::clip::{clip_error, clip_global_norm, clip_sharded};
use super::deferred::{self, Cell, Deferred};
use super::draws::Draws;
use super::ema::Ema;
use super::precision::LowPrecision;
use super::steps::Steps;
use super::{TrainOutputOf, ValidOutputOf};
use crate::data::{CastFn, DataError, Loader, Shard};
use crate::erased::{AnyModule, ModelRef};
use crate::error::FitError;
use crate::fit::callback::{Callbacks, StepEnd};
use crate::history::{History, Split};
use crate::inference::evaluate::{feed, infer, infer_together};
use crate::interrupt;
use crate::metric::SplitMetric;
use crate::output::progress::Progress;
use crate::output::run_writer::RunWriter;
use crate::parallel::ParallelError;
use crate::parallel::step::{Outputs, Parallel};

/// Where an epoch's values go.
pub(super) struct EpochSink<'a> {
    pub epoch: usize,
    pub last_epoch: usize,
    pub history: &'a mut History,
    pub run_dir: &'a mut RunWriter,
    pub progress: &'a mut Progress,
    /// Batch limits of the training and validation splits.
    pub limits: (Option<usize>, Option<usize>),
    pub callbacks: &'a mut Callbacks,
    /// Training steps whose values are still on the device.
    pub deferred: Deferred,
}

impl EpochSink<'_> {
    fn io(&self, source: std::io::Error) -> FitError {
        FitError::RunDir {
            path: self.run_dir.path().to_owned(),
            source,
        }
    }

    /// Reads the deferred training steps' values in one transfer per metric, then writes each
    /// step as it was trained: its rows, the loss's finiteness, the progress bar, callbacks.
    fn flush<O>(
        &mut self,
        metrics: &mut [Box<dyn SplitMetric<O>>],
        series: &[usize],
    ) -> Result<(), FitError> {
        if self.deferred.steps.is_empty() {
            return Ok(());
        }
        let mut read = Vec::with_capacity(metrics.len());
        for metric in metrics.iter_mut() {
            let values = metric.take_deferred().map_err(|source| FitError::Metric {
                split: Split::Train,
                metric: metric.key().to_owned(),
                source,
            })?;
            read.push(values.into_iter());
        }
        for step in std::mem::take(&mut self.deferred.steps) {
            let deferred::Step {
                epoch,
                step,
                stepped,
                lr,
                cells,
            } = step;
            let mut step_loss = None;
            for (j, cell) in cells.into_iter().enumerate() {
                let value = match cell {
                    Cell::Absent => continue,
                    Cell::Now(value) => value,
                    Cell::Later => read[j].next().expect("a value for each deferred batch"),
                };
                let key = metrics[j].key();
                let is_loss = is_loss(key);
                if is_loss {
                    step_loss = Some(value);
                }
                self.history.record_step(series[j], value);
                self.run_dir
                    .step_row(step, epoch, Split::Train, key, value)
                    .map_err(|e| self.io(e))?;
                if is_loss && !value.is_finite() {
                    self.deferred.steps.clear();
                    return Err(FitError::NonFiniteLoss {
                        epoch,
                        step,
                        value: value as f32,
                    });
                }
            }
            self.progress.step(step_loss);
            if stepped && !self.callbacks.is_empty() {
                let end = StepEnd {
                    epoch,
                    step,
                    loss: step_loss,
                    lr,
                };
                self.callbacks.each(|c| c.step_end(&end));
            }
        }
        Ok(())
    }

    /// Reduces every metric of a split to its epoch value and records it.
    fn finish<O>(
        &mut self,
        split: Split,
        metrics: &mut [Box<dyn SplitMetric<O>>],
        series: &[usize],
    ) -> Result<(), FitError> {
        if split == Split::Train {
            self.flush(metrics, series)?;
        }
        for (metric, &index) in metrics.iter_mut().zip(series) {
            let value = metric.finish_epoch().map_err(|source| FitError::Metric {
                split,
                metric: metric.key().to_owned(),
                source,
            })?;
            self.history.record_epoch(index, self.epoch, value);
            self.run_dir
                .epoch_row(self.epoch, split, metric.key(), value)
                .map_err(|e| self.io(e))?;
        }
        Ok(())
    }
}

/// Burn's `GradientsAccumulator`, on the erased model: compiled here once (`crate::erased`).
#[derive(Default)]
struct Accumulator(GradientsAccumulator<AnyModule>);

impl Accumulator {
    fn add(&mut self, model: AnyModule, grads: GradientsParams) {
        self.0.accumulate(&model, grads);
    }

    fn take(&mut self) -> GradientsParams {
        self.0.grads()
    }
}

/// How a training epoch ended, when no error stopped it.
pub(super) enum EpochOutcome {
    /// Every batch was trained and the metrics reduced; the last was global step `step`.
    Completed { step: usize },
    /// Ctrl-C or SIGTERM: stopped after `batches` batches of the epoch, the last being global
    /// step `step`, with no gradient left waiting to be applied.
    Interrupted { batches: usize, step: usize },
    /// Ctrl-C or SIGTERM while a batch was awaited with gradients still being accumulated:
    /// the run stops after global step `step` and continues from its last checkpoint.
    Abandoned { step: usize },
}

/// The model and what moves it: the optimizer and the learning-rate schedule.
pub(super) struct TrainState<M: LearnerModel> {
    pub model: M,
    /// How an optimizer step updates `model`.
    optimize: super::Optimize<M>,
    pub optimizer: ModuleOptimizer,
    pub lr_scheduler: ModuleLrScheduler,
    /// The rate of the last optimizer step; Burn's Learner also starts it at 0.
    lr: ModuleLearningRate,
    /// Batches per optimizer step, when accumulating gradients.
    grad_accumulation: Option<usize>,
    /// Maximum global gradient norm, when clipping by norm.
    clip_norm: Option<f64>,
    /// Whether this run holds the Ctrl-C/SIGTERM handler; the flag is then polled after
    /// every step.
    pub interruptible: bool,
    /// The moving average of the weights, for a run with `ema`.
    pub ema: Option<Ema<M>>,
    /// The factor a plateau schedule puts on the scheduler's rate in this epoch.
    pub lr_scale: f64,
    /// The other ranks, in a data-parallel run.
    pub parallel: Option<DataParallel<M>>,
    /// The random numbers of each step, seeded per batch.
    pub draws: Option<Draws>,
    /// The steps of a several-optimizer experiment, played on each batch in place of
    /// `TrainStep::step`.
    pub steps: Option<Steps<M>>,
    /// A run in bf16 or f16: the steps run on a 16-bit copy of `model`.
    pub precision: Option<LowPrecision>,
    /// How the outputs of such a run are cast to f32 for the metrics, where their types can
    /// be: Burn computes some metrics only in f32 (its confusion statistics, behind F1,
    /// precision and recall, build an f32 mask).
    pub to_f32: OutputCasts<M>,
    /// Hooks on the model after optimizer steps.
    pub after_step: super::model_hooks::AfterSteps<M>,
    /// Hooks reading the model at each epoch's end.
    pub at_epoch_end: Vec<super::model_hooks::AtEpochEnd<M>>,
}

/// Casts of the training and the validation outputs ([`crate::fit::Fit::output_casts`]).
pub(crate) struct OutputCasts<M: LearnerModel> {
    pub train: Option<CastFn<TrainOutputOf<M>>>,
    pub valid: Option<CastFn<ValidOutputOf<M>>>,
}

impl<M: LearnerModel> Default for OutputCasts<M> {
    fn default() -> Self {
        Self {
            train: None,
            valid: None,
        }
    }
}

/// A data-parallel run's exchanges (training steps, validation outputs), and its generic code.
pub(super) struct DataParallel<M: LearnerModel> {
    pub exchange: Parallel<TrainOutputOf<M>>,
    pub valid: Outputs<ValidOutputOf<M>>,
    pub code: ParallelCode<M>,
}

/// The data-parallel epoch and the check of the ranks' weights, as pointers that only
/// `Fit::data_parallel` creates: an experiment without the key compiles neither.
pub(super) struct ParallelCode<M: LearnerModel> {
    epoch: ParallelEpoch<M>,
    valid: ParallelValid<M>,
    pub check: WeightCheck<M>,
}

/// [`valid_epoch_parallel`].
type ParallelValid<M> = fn(
    &M,
    &mut dyn Shard<<M as InferenceStep>::Input>,
    &mut Outputs<ValidOutputOf<M>>,
    &mut [Box<dyn SplitMetric<ValidOutputOf<M>>>],
    &[usize],
    &mut EpochSink<'_>,
) -> Result<(), FitError>;

/// `Parallel::same_weights`.
type WeightCheck<M> = fn(&mut Parallel<TrainOutputOf<M>>, &M, usize) -> Result<(), ParallelError>;

/// [`TrainState::train_epoch_parallel`].
type ParallelEpoch<M> = fn(
    &mut TrainState<M>,
    &mut dyn Shard<<M as TrainStep>::Input>,
    usize,
    usize,
    &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
    &[usize],
    &mut EpochSink<'_>,
) -> Result<EpochOutcome, FitError>;

impl<M: LearnerModel> ParallelCode<M> {
    pub fn of() -> Self {
        Self {
            epoch: TrainState::<M>::train_epoch_parallel,
            valid: valid_epoch_parallel::<M>,
            check: |parallel, model, epoch| parallel.same_weights(ModelRef::new(model), epoch),
        }
    }
}

impl<M: LearnerModel> TrainState<M> {
    pub fn new(
        model: M,
        optimize: super::Optimize<M>,
        optimizer: ModuleOptimizer,
        lr_scheduler: ModuleLrScheduler,
        grad_accumulation: Option<usize>,
        clip_norm: Option<f64>,
        interruptible: bool,
    ) -> Self {
        Self {
            model,
            optimize,
            optimizer,
            lr_scheduler,
            lr: 0.0.into(),
            grad_accumulation,
            clip_norm,
            interruptible,
            ema: None,
            lr_scale: 1.0,
            parallel: None,
            draws: None,
            steps: None,
            precision: None,
            to_f32: OutputCasts::default(),
            after_step: super::model_hooks::AfterSteps::default(),
            at_epoch_end: Vec::new(),
        }
    }

    /// At a point where rank 0 of a data-parallel run may write a checkpoint: every rank's
    /// share of the optimizer state to rank 0. Every rank calls it at the same point.
    pub fn gather_state(&mut self) -> Result<(), FitError> {
        if let Some(parallel) = &mut self.parallel {
            let own = crate::parallel::state::own_bytes(&self.optimizer)?;
            parallel.exchange.gather_state(&own)?;
        }
        Ok(())
    }

    /// The optimizer state a checkpoint holds: in a data-parallel run, every rank's, as
    /// [`TrainState::gather_state`] last brought it to rank 0.
    pub fn optimizer_record(&self) -> Result<OptimizerRecord, FitError> {
        match self
            .parallel
            .as_ref()
            .and_then(|p| p.exchange.gathered_state())
        {
            Some(bytes) => OptimizerRecord::from_bytes(bytes.clone())
                .map_err(|e| ParallelError::State(e.to_string()).into()),
            None => Ok(self.optimizer.to_record()),
        }
    }

    /// One pass over the validation split (`valid_epoch`); on a rank of a data-parallel run,
    /// its share of the batches, the outputs measured together. `false` when Ctrl-C/SIGTERM
    /// stopped it.
    pub fn validate<I>(
        &mut self,
        loader: &Loader<I, <M as InferenceStep>::Input>,
        metrics: &mut [Box<dyn SplitMetric<ValidOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<bool, FitError>
    where
        I: Send + Sync + 'static,
    {
        let Some(mut parallel) = self.parallel.take() else {
            return valid_epoch(
                self.evaluated(),
                self.precision.as_ref().map(|low| (low, self.to_f32.valid)),
                loader,
                metrics,
                series,
                ctx,
                self.interruptible,
            );
        };
        let group = parallel.valid.group;
        let mut batches =
            loader.epoch_shard(ctx.epoch, ctx.limits.1, 0, (group.rank(), group.size()));
        let valid = parallel.code.valid;
        let measured = valid(
            self.evaluated(),
            &mut batches,
            &mut parallel.valid,
            metrics,
            series,
            ctx,
        );
        self.parallel = Some(parallel);
        measured.map(|()| true)
    }

    /// Seeds the step of batch `batch` (1-based) of `epoch`.
    fn before_step(&self, epoch: usize, batch: usize) {
        if let Some(draws) = &self.draws {
            draws.before_step(epoch, batch);
        }
    }

    /// The model validation measures: the moving average when there is one.
    pub fn evaluated(&self) -> &M {
        self.ema.as_ref().map_or(&self.model, Ema::average)
    }

    /// One pass over the training split, or its rest after the first `done` batches (a run
    /// interrupted inside the epoch). `steps_before` is the global step count at the start of
    /// the epoch, so step numbers do not depend on where a run was resumed.
    pub fn train_epoch<I>(
        &mut self,
        loader: &Loader<I, <M as TrainStep>::Input>,
        steps_before: usize,
        done: usize,
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<EpochOutcome, FitError>
    where
        I: Send + Sync + 'static,
    {
        let trained = self.train_batches(loader, steps_before, done, metrics, series, ctx);
        // The steps trained before an interruption or a failure are written as if each had
        // been read at once; a non-finite loss among them came before the failure.
        match (trained, ctx.flush(metrics, series)) {
            (Err(err), Ok(())) => Err(err),
            (_, Err(err @ FitError::NonFiniteLoss { .. })) => Err(err),
            (Err(err), Err(_)) => Err(err),
            (Ok(_), Err(err)) => Err(err),
            (Ok(outcome), Ok(())) => Ok(outcome),
        }
    }

    /// [`TrainState::train_epoch`]'s batches.
    fn train_batches<I>(
        &mut self,
        loader: &Loader<I, <M as TrainStep>::Input>,
        steps_before: usize,
        done: usize,
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<EpochOutcome, FitError>
    where
        I: Send + Sync + 'static,
    {
        let epoch = ctx.epoch;
        if done > 0 {
            // Read from an interrupted run's checkpoint: it must lie inside this epoch.
            let total = loader.epoch(epoch, ctx.limits.0).len();
            if done > total {
                return Err(FitError::InvalidOption {
                    option: "resume",
                    message: format!(
                        "the checkpoint says {done} batches of epoch {epoch} were trained, but the epoch has {total}: resume from an epoch checkpoint (`resume: epoch(n)`)"
                    ),
                });
            }
        }
        if let Some(parallel) = &self.parallel {
            let (group, epoch_fn) = (parallel.exchange.group, parallel.code.epoch);
            let mut batches =
                loader.epoch_shard(epoch, ctx.limits.0, done, (group.rank(), group.size()));
            return epoch_fn(self, &mut batches, steps_before, done, metrics, series, ctx);
        }
        let mut batches = loader.epoch_after(epoch, ctx.limits.0, done);
        let num_batches = done + batches.len();
        ctx.progress
            .epoch_start(epoch, ctx.last_epoch, batches.len());
        let mut accumulator = Accumulator::default();
        let mut accumulated = 0;
        let mut index = done;
        while let Some(batch) = batches.next() {
            index += 1;
            let step = steps_before + index;
            let batch = match batch {
                Ok(batch) => batch,
                Err(DataError::Interrupted) if accumulated == 0 => {
                    return Ok(EpochOutcome::Interrupted {
                        batches: index - 1,
                        step: step - 1,
                    });
                }
                Err(DataError::Interrupted) => {
                    return Ok(EpochOutcome::Abandoned { step: step - 1 });
                }
                Err(source) => {
                    return Err(FitError::Data {
                        split: Split::Train,
                        epoch,
                        batch: index,
                        source,
                    });
                }
            };

            self.before_step(epoch, index);
            if self.steps.is_some() {
                let metadata = MetricMetadata {
                    progress: batches.progress(),
                    iteration: Some(index),
                    lr: None,
                };
                self.play(&batch, metadata, (epoch, step), metrics, series, ctx)?;
                if self.interruptible && interrupt::raised() {
                    return Ok(EpochOutcome::Interrupted {
                        batches: index,
                        step,
                    });
                }
                continue;
            }
            let output = match &self.precision {
                Some(low) => low.step(&self.model, batch).map_err(FitError::Setting)?,
                None => TrainStep::step(&self.model, batch),
            };
            let grads = match self.grad_accumulation {
                None => Some(output.grads),
                Some(n) => {
                    accumulator.add(AnyModule::new(self.model.clone()), output.grads);
                    accumulated += 1;
                    (accumulated == n || index == num_batches).then(|| {
                        accumulated = 0;
                        accumulator.take()
                    })
                }
            };
            let stepped = match grads {
                Some(grads) => self.apply(grads, None)?,
                None => false,
            };
            let item = self.for_metrics(output.item.sync()?);
            let metadata = MetricMetadata {
                progress: batches.progress(),
                iteration: Some(index),
                lr: Some(self.lr.clone()),
            };
            self.record(
                &item,
                &metadata,
                (epoch, step, stepped),
                metrics,
                series,
                ctx,
            )?;
            // Only between optimizer steps: accumulated gradients are not part of a checkpoint.
            if accumulated == 0 && self.interruptible && interrupt::raised() {
                return Ok(EpochOutcome::Interrupted {
                    batches: index,
                    step,
                });
            }
        }
        ctx.finish(Split::Train, metrics, series)?;
        Ok(EpochOutcome::Completed {
            step: steps_before + index,
        })
    }

    /// One optimizer step with `grads`: clipping, the learning-rate step, the update, the
    /// moving average. On a rank of a data-parallel run (`parallel`), `grads` are those of the
    /// parameters it owns, which it alone steps and then sends to the other ranks. `false`
    /// when an f16 run skips the step because its gradients overflowed.
    fn apply(
        &mut self,
        grads: GradientsParams,
        parallel: Option<&mut Parallel<TrainOutputOf<M>>>,
    ) -> Result<bool, FitError> {
        if !self.admitted(&grads)? {
            return Ok(false);
        }
        self.next_lr();
        self.update(grads, parallel, None)?;
        if let Some(ema) = &mut self.ema {
            ema.update(&self.model);
        }
        Ok(true)
    }

    /// Whether an optimizer step takes `grads`: always, but in f16 only when they are all
    /// finite (the loss scale updated either way).
    fn admitted(&mut self, grads: &GradientsParams) -> Result<bool, FitError> {
        let Some(low) = &mut self.precision else {
            return Ok(true);
        };
        low.admits(ModelRef::new(&self.model), grads)
            .map_err(|source| FitError::Metric {
                split: Split::Train,
                metric: "precision".to_owned(),
                source,
            })
    }

    /// A training output as the metrics read it: in f32 in a 16-bit run, where its type can
    /// be cast.
    fn for_metrics(&self, item: TrainOutputOf<M>) -> TrainOutputOf<M> {
        match (&self.precision, self.to_f32.train) {
            (Some(_), Some(cast)) => cast(item, FloatDType::F32),
            _ => item,
        }
    }

    /// The rate of the next optimizer step: the scheduler's, times a plateau's factor.
    fn next_lr(&mut self) {
        self.lr = self.lr_scheduler.step();
        if self.lr_scale != 1.0 {
            self.lr = (self.lr.base() * self.lr_scale).into();
        }
    }

    /// The model after one optimizer step with `grads`, clipped, at the current rate (on a
    /// rank of a data-parallel run, `parallel`: the clipping's norm is the ranks' together),
    /// then after the hooks of a step of optimizer `of` (`None`: the run's one optimizer).
    fn update(
        &mut self,
        grads: GradientsParams,
        parallel: Option<&mut Parallel<TrainOutputOf<M>>>,
        of: Option<&str>,
    ) -> Result<(), FitError> {
        self.step_model(grads, parallel)?;
        if !self.after_step.is_empty() {
            self.model = self.after_step.run(self.model.clone(), of);
        }
        Ok(())
    }

    /// [`TrainState::update`]'s optimizer step.
    fn step_model(
        &mut self,
        mut grads: GradientsParams,
        mut parallel: Option<&mut Parallel<TrainOutputOf<M>>>,
    ) -> Result<(), FitError> {
        if let Some(max) = self.clip_norm {
            let model = ModelRef::new(&self.model);
            match parallel {
                Some(ref mut parallel) => {
                    clip_sharded(model, &mut grads, max, parallel).map(drop)?
                }
                None => clip_global_norm(model, &mut grads, max)
                    .map(drop)
                    .map_err(clip_error)?,
            }
        }
        let Some(parallel) = parallel else {
            self.model = (self.optimize)(
                self.model.clone(),
                &mut self.optimizer,
                self.lr.clone(),
                grads,
            );
            return Ok(());
        };
        // A rank steps the values it owns (whole tensors, or ranges of them cut out of the
        // model), then puts the model together from every rank's new values.
        let started = std::time::Instant::now();
        let pieces = parallel.pieces(self.model.clone());
        let stepped = (self.optimize)(pieces, &mut self.optimizer, self.lr.clone(), grads);
        parallel.traffic.stepped += started.elapsed();
        self.model = parallel.share_weights(stepped)?;
        Ok(())
    }

    /// The steps of a several-optimizer experiment on one batch, global step `step` of
    /// `epoch`: the schedule moves once, then each due step in order plays on the weights the
    /// one before it moved, is clipped by its own gradients' norm and stepped, and feeds its
    /// metrics (those of other steps skip its output); the moving average follows the batch.
    fn play(
        &mut self,
        batch: &<M as TrainStep>::Input,
        mut metadata: MetricMetadata,
        (epoch, step): (usize, usize),
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<(), FitError> {
        let steps = self.steps.take().expect("a several-optimizer run");
        self.next_lr();
        metadata.lr = Some(self.lr.clone());
        let played = self.play_due(
            &steps,
            batch,
            &metadata,
            (epoch, step),
            metrics,
            series,
            ctx,
        );
        self.steps = Some(steps);
        played?;
        if let Some(ema) = &mut self.ema {
            ema.update(&self.model);
        }
        Ok(())
    }

    /// [`TrainState::play`]'s steps due at global step `step`.
    #[allow(clippy::too_many_arguments)]
    fn play_due(
        &mut self,
        steps: &Steps<M>,
        batch: &<M as TrainStep>::Input,
        metadata: &MetricMetadata,
        (epoch, step): (usize, usize),
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<(), FitError> {
        let batch_in_epoch = metadata.iteration.expect("the batch's index in its epoch");
        let due: Vec<_> = steps.due(step, batch_in_epoch).collect();
        for (k, turn) in due.iter().enumerate() {
            let (grads, output) = match &self.precision {
                Some(low) => low
                    .run(&self.model, |copy| turn.play(copy, batch))
                    .map_err(FitError::Setting)?,
                None => turn.play(&self.model, batch),
            };
            // An f16 step whose gradients overflowed is skipped, as in a one-optimizer run.
            if self.admitted(&grads)? {
                self.update(grads, None, Some(turn.name()))?;
            }
            let item = self.for_metrics(output.sync()?);
            let last = k + 1 == due.len();
            self.record(&item, metadata, (epoch, step, last), metrics, series, ctx)?;
        }
        Ok(())
    }

    /// Feeds one batch's output to the training metrics, to be recorded at global step
    /// `step` once their values are read (every `read_every` steps, see `deferred`); after an
    /// optimizer step (`stepped`), the callbacks hear of it then.
    fn record(
        &self,
        item: &TrainOutputOf<M>,
        metadata: &MetricMetadata,
        (epoch, step, stepped): (usize, usize, bool),
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<(), FitError> {
        let mut cells = Vec::with_capacity(metrics.len());
        for metric in metrics.iter_mut() {
            let before = metric.deferred();
            let value = feed(Split::Train, metric.as_mut(), item, metadata)?;
            cells.push(match value {
                _ if metric.deferred() > before => Cell::Later,
                Some(value) => Cell::Now(value),
                None => Cell::Absent,
            });
        }
        ctx.deferred.steps.push(deferred::Step {
            epoch,
            step,
            stepped,
            lr: self.lr.base(),
            cells,
        });
        let interrupted = self.interruptible && interrupt::raised();
        if ctx.deferred.due(!ctx.callbacks.is_empty(), interrupted) {
            ctx.flush(metrics, series)?;
        }
        Ok(())
    }

    /// [`TrainState::train_epoch`] as one rank of a data-parallel run: each group of `N`
    /// batches (`N` ranks) is one optimizer step, rank `r` building and stepping the group's
    /// batch `r`; after the exchange every rank applies the same summed gradients and records
    /// every batch's output in order, as one process with `grad_accumulation: N` does.
    fn train_epoch_parallel(
        &mut self,
        batches: &mut dyn Shard<<M as TrainStep>::Input>,
        steps_before: usize,
        done: usize,
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<EpochOutcome, FitError> {
        let started = std::time::Instant::now();
        let mut data_parallel = self.parallel.take().expect("a data-parallel run");
        let at = (steps_before, done);
        let outcome = self.groups(
            &mut data_parallel.exchange,
            batches,
            at,
            metrics,
            series,
            ctx,
        );
        data_parallel.exchange.traffic.trained += started.elapsed();
        self.parallel = Some(data_parallel);
        match outcome? {
            Some(batches) => Ok(EpochOutcome::Interrupted {
                batches,
                step: steps_before + batches,
            }),
            None => {
                ctx.finish(Split::Train, metrics, series)?;
                Ok(EpochOutcome::Completed {
                    step: steps_before + done + batches.positions(),
                })
            }
        }
    }

    /// The groups of [`TrainState::train_epoch_parallel`] from batch `done` of the epoch on
    /// (`steps_before` steps before it); `Some(batches trained)` when a rank was interrupted.
    fn groups(
        &mut self,
        parallel: &mut Parallel<TrainOutputOf<M>>,
        batches: &mut dyn Shard<<M as TrainStep>::Input>,
        (steps_before, done): (usize, usize),
        metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
        series: &[usize],
        ctx: &mut EpochSink<'_>,
    ) -> Result<Option<usize>, FitError> {
        let epoch = ctx.epoch;
        let (rank, size) = (parallel.group.rank(), parallel.group.size());
        let positions = batches.positions();
        ctx.progress.epoch_start(epoch, ctx.last_epoch, positions);
        let mut position = 0;
        while position < positions {
            let group = size.min(positions - position);
            let mine = match (rank < group).then(|| batches.next_batch()).flatten() {
                None => None,
                Some(Ok(batch)) => {
                    self.before_step(epoch, done + position + rank + 1);
                    let output = TrainStep::step(&self.model, batch);
                    Some((output.grads, output.item.sync()?))
                }
                Some(Err(source)) => {
                    return Err(FitError::Data {
                        split: Split::Train,
                        epoch,
                        batch: done + position + rank + 1,
                        source,
                    });
                }
            };
            let interrupted = self.interruptible && interrupt::raised();
            let (grads, item) = mine.unzip();
            let exchanged = parallel.exchange(
                ModelRef::new(&self.model),
                grads.zip(item.as_ref()),
                group,
                interrupted,
            )?;
            drop(item);
            let last = exchanged.items.len() - 1;
            let mut grads = Some(exchanged.grads);
            for (k, item) in exchanged.items.iter().enumerate() {
                // As in one process: the step after the group's last batch, before its metrics.
                if k == last {
                    // Never skipped: a data-parallel run computes in f32 (`precision_supported`).
                    self.apply(grads.take().expect("once"), Some(&mut *parallel))?;
                }
                let index = done + position + k + 1;
                let metadata = MetricMetadata {
                    progress: batches.progress_at(position + k),
                    iteration: Some(index),
                    lr: Some(self.lr.clone()),
                };
                let step = (epoch, steps_before + index, k == last);
                self.record(item, &metadata, step, metrics, series, ctx)?;
            }
            position += group;
            if exchanged.interrupted {
                return Ok(Some(done + position));
            }
        }
        Ok(None)
    }
}

/// [`valid_epoch`] as one rank of a data-parallel run: its share of the batches, measured
/// together with the other ranks (`infer_together`).
fn valid_epoch_parallel<M: LearnerModel>(
    model: &M,
    batches: &mut dyn Shard<<M as InferenceStep>::Input>,
    outputs: &mut Outputs<ValidOutputOf<M>>,
    metrics: &mut [Box<dyn SplitMetric<ValidOutputOf<M>>>],
    series: &[usize],
    ctx: &mut EpochSink<'_>,
) -> Result<(), FitError> {
    let model = model.valid();
    infer_together(&model, batches, (Split::Valid, ctx.epoch), metrics, outputs)?;
    ctx.finish(Split::Valid, metrics, series)
}

/// One pass over the validation split with the model in inference mode, on the non-autodiff
/// device: no graph is recorded; in a 16-bit run (`low`), with its weights in that precision.
/// `false` when Ctrl-C/SIGTERM stopped it (`interruptible`).
fn valid_epoch<M, I>(
    model: &M,
    low: Option<(&LowPrecision, Option<CastFn<ValidOutputOf<M>>>)>,
    loader: &Loader<I, <M as InferenceStep>::Input>,
    metrics: &mut [Box<dyn SplitMetric<ValidOutputOf<M>>>],
    series: &[usize],
    ctx: &mut EpochSink<'_>,
    interruptible: bool,
) -> Result<bool, FitError>
where
    M: LearnerModel,
    I: Send + Sync + 'static,
{
    let batches = loader.epoch(ctx.epoch, ctx.limits.1);
    let model = model.valid();
    let validated = match low {
        Some((low, to_f32)) => {
            let model = low.inference(&model);
            low.catching(|| {
                infer(
                    &model,
                    batches,
                    (Split::Valid, ctx.epoch),
                    metrics,
                    (interruptible, to_f32),
                )
            })
            .map_err(FitError::Setting)??
        }
        None => infer(
            &model,
            batches,
            (Split::Valid, ctx.epoch),
            metrics,
            (interruptible, None),
        )?,
    };
    if !validated {
        return Ok(false);
    }
    ctx.finish(Split::Valid, metrics, series)?;
    Ok(true)
}

/// Whether a training metric is a loss: `loss`, or one step's in a several-optimizer
/// experiment (`critic.loss`); a loss that is not finite stops the run.
fn is_loss(key: &str) -> bool {
    key == "loss" || key.ends_with(".loss")
}
