//! A run in progress: the epoch loop, an interrupt, and the end of a run.

use std::time::Instant;

use burn::train::LearnerModel;

use super::deferred::Deferred;
use super::ema::Ema;
use super::epoch::{EpochOutcome, EpochSink, TrainState};
use super::finite::non_finite_weights;
use super::hooks::{Edge, EpochHook, Features};
use super::{FitReport, Loaders, Series, TrainOutputOf, ValidOutputOf};
use crate::checkpoint::Within;
use crate::erased::ModelRef;
use crate::fit::callback::{Control, RunEnd, RunStart};
use crate::history::{History, Split};
use crate::metric::{SplitMetric, reads};
use crate::output::progress::Progress;
use crate::output::run_writer::RunWriter;
use crate::output::{console, plot};
use crate::{config::options::FitOptions, error::FitError};

/// A run in progress: what the epochs change, and where their results go.
pub(super) struct ActiveRun<'a, M: LearnerModel> {
    pub options: &'a FitOptions,
    pub hyperparameters: &'a serde_json::Value,
    pub state: TrainState<M>,
    pub history: History,
    pub run_dir: RunWriter,
    pub progress: Progress,
    /// Freezing, the plateau schedule, callbacks, saving and early stopping.
    pub features: Features,
    /// `config.json`'s value, handed back in the report.
    pub config: serde_json::Value,
    /// Host reads of each epoch this process trained and validated.
    pub host_reads: Vec<u64>,
}

/// A run's training metrics.
type TrainMetrics<M> = [Box<dyn SplitMetric<TrainOutputOf<M>>>];

pub(super) type Metrics<'m, M> = (
    &'m mut Vec<Box<dyn SplitMetric<TrainOutputOf<M>>>>,
    &'m mut Vec<Box<dyn SplitMetric<ValidOutputOf<M>>>>,
);

impl<M: LearnerModel> ActiveRun<'_, M> {
    /// Trains and validates from `first_epoch` (inside it after `within`, for a run interrupted
    /// there) until the last epoch or early stopping; returns the last epoch completed.
    pub fn epochs<I: Send + Sync + 'static>(
        &mut self,
        first_epoch: usize,
        mut within: Option<Within>,
        loaders: &Loaders<I, M>,
        (train_metrics, valid_metrics): Metrics<'_, M>,
        series: &Series,
    ) -> Result<usize, FitError> {
        let options = self.options;
        // A resumed run replays the epochs it restored, so patience counts across the restart;
        // a run whose restored epochs already triggered early stopping trains no further.
        let replayed = (options.first_epoch..first_epoch).any(|epoch| {
            self.features
                .early_stop
                .as_mut()
                .is_some_and(|s| s.should_stop(&self.history, epoch))
        });
        let mut last_epoch = first_epoch - 1;
        if replayed {
            return Ok(last_epoch);
        }
        let start = RunStart {
            first_epoch,
            last_epoch: options.epochs,
            run_dir: self.run_dir.path(),
        };
        self.features.callbacks.each(|c| c.run_start(&start));
        if self.features.callbacks.stop().is_some() {
            return Ok(last_epoch);
        }
        let steps_per_epoch = loaders.train.num_items().div_ceil(options.batch_size);
        let read_every = self.read_every();
        for metric in train_metrics.iter_mut() {
            metric.defer(read_every);
        }
        for metric in valid_metrics.iter_mut() {
            metric.defer(read_every);
        }
        for epoch in first_epoch..=options.epochs {
            let started = Instant::now();
            let reads_before = reads::so_far();
            self.features.epoch_start(&mut Edge {
                epoch,
                state: &mut self.state,
                history: &self.history,
                metrics: self.run_dir.written(),
                hyperparameters: self.hyperparameters,
                callback_states: Vec::new(),
            });
            let mut sink = EpochSink {
                epoch,
                last_epoch: options.epochs,
                history: &mut self.history,
                run_dir: &mut self.run_dir,
                progress: &mut self.progress,
                limits: (options.limit_train_batches, options.limit_valid_batches),
                callbacks: &mut self.features.callbacks,
                deferred: Deferred::new(read_every),
            };
            let done = within.take().map_or(0, |within| within.batches);
            let trained = self.state.train_epoch(
                &loaders.train,
                (epoch - 1) * steps_per_epoch,
                done,
                train_metrics,
                &series.train,
                &mut sink,
            )?;
            check_weights(ModelRef::new(&self.state.model), epoch)?;
            let step = match trained {
                EpochOutcome::Completed { step } => {
                    let state = &mut self.state;
                    if let Some(parallel) = &mut state.parallel {
                        (parallel.code.check)(&mut parallel.exchange, &state.model, epoch)?;
                    }
                    state.gather_state()?;
                    step
                }
                EpochOutcome::Interrupted { batches, step } => {
                    self.state.gather_state()?;
                    return Err(self.interrupted(epoch, step, Some((batches, train_metrics))));
                }
                EpochOutcome::Abandoned { step } => return Err(self.interrupted(epoch, step, None)),
            };
            let validated =
                self.state
                    .validate(&loaders.valid, valid_metrics, &series.valid, &mut sink)?;
            if !validated {
                return Err(self.interrupted(epoch, step, None));
            }
            self.host_reads.push(reads::so_far() - reads_before);
            self.flush()?;
            self.progress.epoch_end(|| {
                console::epoch_line(&self.history, epoch, options.epochs, started.elapsed())
            });
            if self.run_dir.enabled() && !self.state.at_epoch_end.is_empty() {
                let model = self.state.evaluated().valid();
                let at = super::model_hooks::EpochAt {
                    epoch,
                    run_dir: self.run_dir.path(),
                };
                for hook in &self.state.at_epoch_end {
                    hook(&model, &at).map_err(|message| FitError::EpochHook { epoch, message })?;
                }
            }
            let stop = self.features.epoch_end(&mut Edge {
                epoch,
                state: &mut self.state,
                history: &self.history,
                metrics: self.run_dir.written(),
                hyperparameters: self.hyperparameters,
                callback_states: Vec::new(),
            })?;
            last_epoch = epoch;
            if stop {
                break;
            }
        }
        Ok(last_epoch)
    }

    /// Ends a run stopped by Ctrl-C/SIGTERM inside `epoch` after global step `step`, and says
    /// where the next run continues from. With `within` (the batches of the epoch trained, and
    /// the training metrics) the run saves that position when it can; without it (stopped
    /// while validating, or with gradients half accumulated) it continues from the last
    /// checkpoint.
    fn interrupted(
        &mut self,
        epoch: usize,
        step: usize,
        within: Option<(usize, &TrainMetrics<M>)>,
    ) -> FitError {
        if let Err(err) = self.flush() {
            return err;
        }
        let newest = self
            .features
            .saving
            .as_ref()
            .and_then(|s| s.saved.last().copied());
        let saved_here = match (self.features.saving.take(), within) {
            (Some(mut saving), Some((batches, train_metrics))) => {
                saving.callbacks = self.features.callbacks.states();
                let within = Within {
                    batches,
                    step,
                    carried: Vec::new(),
                };
                let record = super::saving::Record {
                    history: &self.history,
                    metrics: self.run_dir.written(),
                };
                saving.interrupted(
                    epoch,
                    within,
                    train_metrics,
                    &self.state,
                    record,
                    self.hyperparameters,
                )
            }
            (Some(saving), None) => saving.writer.finish().map(|()| false).map_err(Into::into),
            (None, _) => Ok(false),
        };
        self.run_dir.end_tracking("KILLED");
        match saved_here {
            Ok(saved_here) => FitError::Interrupted {
                epoch,
                step,
                saved_here,
                checkpoint: newest,
            },
            Err(err) => err,
        }
    }

    fn flush(&mut self) -> Result<(), FitError> {
        self.run_dir.flush().map_err(|source| FitError::RunDir {
            path: self.run_dir.path().to_owned(),
            source,
        })
    }

    /// Waits for the checkpoint writes, writes the summary and the curves, and hands the
    /// trained model back.
    pub fn finish(mut self, last_epoch: usize) -> Result<FitReport<M>, FitError> {
        // The checkpoint writer syncs the last checkpoint while the summary and the plot are
        // written; it is waited for only after them, and its failure is the one reported first:
        // a checkpoint matters more than a summary.
        let saving = self.features.saving.take();
        let stop_line = self.features.callbacks.stop_line();
        let stop = self.features.callbacks.take_stop();
        let end = RunEnd {
            last_epoch,
            history: &self.history,
            stopped: stop.as_deref(),
        };
        self.features.callbacks.each(|c| {
            c.run_end(&end);
            Control::Continue
        });
        let mut summary = console::summary_table(&self.history);
        if let Some(line) = stop_line {
            summary.push_str(&format!("\n{line}\n"));
        }
        if let Some(scale) = self.state.precision.as_ref().and_then(|low| low.scale) {
            summary.push_str(&format!(
                "\nf16 loss scale: {} at the end; {} optimizer step{} skipped over the run (gradients not finite)\n",
                scale.scale,
                scale.skipped,
                if scale.skipped == 1 { "" } else { "s" }
            ));
        }
        if let Some(parallel) = &mut self.state.parallel {
            summary.push_str(&format!(
                "\n{}; {}\n",
                parallel.exchange.summary(),
                parallel.valid.summary()
            ));
        }
        if crate::terminal::dropped() {
            summary.push_str(
                "\noutput to the terminal was dropped: stdout or stderr was closed (a closed pipe); metrics.csv holds every value\n",
            );
        }
        let written = self.write_summary(&format!("{summary}{}", self.reads_line()));
        if let Some(saving) = saving {
            saving.writer.finish()?;
        }
        written?;
        self.run_dir.end_tracking("FINISHED");
        if !self.options.quiet {
            if let Some(early_stop) = &self.features.early_stop
                && early_stop.stopped()
            {
                say!("early stopping: {}", early_stop.reason());
            }
            say_part!("{summary}");
        }
        let averaged = self.state.ema.take().map(Ema::into_average);
        Ok(FitReport {
            model: self.state.model.valid(),
            averaged,
            optimizer: self.state.optimizer,
            lr_scheduler: self.state.lr_scheduler,
            history: self.history,
            last_epoch,
            run_dir: self.run_dir.path().to_owned(),
            test: None,
            stopped: stop,
            config: std::mem::take(&mut self.config),
            host_reads: std::mem::take(&mut self.host_reads),
            measured_together: self.state.parallel.as_ref().map(|parallel| {
                Box::new(parallel.valid.codec()) as Box<dyn std::any::Any + Send + Sync>
            }),
        })
    }

    /// Training steps read at a time: `read_every`, or each step when a callback must hear
    /// of it before the next is trained.
    fn read_every(&self) -> usize {
        match self.features.callbacks.is_empty() {
            true => self.options.read_every,
            false => 1,
        }
    }

    /// `summary.md`'s line on host reads: each epoch's, and how many steps one read takes.
    fn reads_line(&self) -> String {
        let Some(most) = self.host_reads.iter().max() else {
            return String::new();
        };
        let least = self.host_reads.iter().min().unwrap_or(most);
        let every = self.read_every();
        let per_epoch = match least == most {
            true => format!("{most}"),
            false => format!("{least} to {most}"),
        };
        format!(
            "\nhost reads: {per_epoch} per epoch (losses read {every} step{} at a time: `--read-every`)\n",
            if every == 1 { "" } else { "s" }
        )
    }

    /// `summary.md` and `curves.svg`.
    fn write_summary(&self, summary: &str) -> Result<(), FitError> {
        let path = self.run_dir.path().to_owned();
        let io = |source| FitError::RunDir { path, source };
        let markdown = format!("# {}\n\n{summary}", self.options.name);
        let write = || -> std::io::Result<()> {
            self.run_dir.write_file("summary.md", markdown.as_bytes())?;
            if self.run_dir.enabled() {
                let svg = plot::curves_svg(&self.history).map_err(std::io::Error::other)?;
                self.run_dir.write_file("curves.svg", svg.as_bytes())?;
            }
            Ok(())
        };
        write().map_err(io)
    }
}

/// Stops a run whose weights diverged before anything is validated or checkpointed.
fn check_weights(model: ModelRef<'_>, epoch: usize) -> Result<(), FitError> {
    let count = non_finite_weights(model).map_err(|source| FitError::Metric {
        split: Split::Train,
        metric: "weights".to_owned(),
        source,
    })?;
    if count > 0 {
        return Err(FitError::NonFiniteWeights { epoch, count });
    }
    Ok(())
}
