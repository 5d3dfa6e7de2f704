//! `engine: burn` and several devices: the same experiment run by Burn's `SupervisedTraining`.
//!
//! Our fit loop is single-device by design. For several devices (or to compare with Burn's own
//! Learner, TUI included), `training!` hands the pieces it generated — the `TrainStep` /
//! `InferenceStep` wrapper, datasets and batcher, optimizer, learning-rate schedule, metrics,
//! checkpoint and early-stopping rules — to Burn with the matching `ExecutionStrategy`; nothing
//! here reimplements Burn's multi-device or distributed engine.
//!
//! What changes on this path: batches come from Burn's `DataLoaderBuilder` (with workers, their
//! order follows thread scheduling), the epoch `loss` is Burn's `LossMetric` (the mean of batch
//! losses, not sample-weighted), checkpoints are Burn's files (`checkpoint/{model,optim,
//! scheduler}-N.bpk`, without our digests), and `resume` maps onto `SupervisedTraining::checkpoint`.

use std::path::{Path, PathBuf};

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataloader::batcher::Batcher;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::optim::ModuleOptimizer;
use burn::tensor::Device;
use burn::train::checkpoint::{
    CheckpointingAction, CheckpointingStrategy, ComposedCheckpointingStrategy,
    KeepLastNCheckpoints, MetricCheckpointingStrategy,
};
use burn::train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn::train::metric::store::{Aggregate, Direction, EventStoreClient, Split as BurnSplit};
use burn::train::metric::{Metric, MetricAttributes};
use burn::train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};
use burn::train::{
    ExecutionStrategy, InferenceStep, Learner, LearnerModel, MetricEarlyStoppingStrategy,
    MultiDeviceOptim, StoppingCondition, SupervisedTraining, TrainStep,
};
use serde::{Deserialize, Serialize};

use crate::checkpoint::Resume;
use crate::config::spec::GradClip;
use crate::error::SettingError;
use crate::fit::{Data, FitReport};
use crate::history::{History, Split};
use crate::{config::options::FitOptions, error::FitError};

/// Which loop runs the experiment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// Our fit loop (single device).
    #[default]
    Ours,
    /// Burn's `SupervisedTraining`.
    Burn,
}

/// Burn's execution strategy for the devices of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// One device.
    #[default]
    Single,
    /// Burn's `MultiDevice`: batches spread over the devices, gradients summed on the first.
    Multi,
    /// Burn's `DistributedDataParallel`: a model per device, gradients all-reduced.
    Ddp,
}

/// Whether a run with these settings goes to Burn rather than to our loop.
pub fn uses_burn(engine: Engine, strategy: Strategy, devices: usize) -> bool {
    engine == Engine::Burn || strategy != Strategy::Single || devices > 1
}

fn burn_split(split: Split) -> BurnSplit {
    match split {
        Split::Train => BurnSplit::Train,
        // Test metrics are measured after Burn's Learner returns, never registered with it.
        Split::Valid | Split::Test => BurnSplit::Valid,
    }
}

fn direction<Me: Metric>(metric: &Me) -> Direction {
    match metric.attributes() {
        MetricAttributes::Numeric(a) if !a.higher_is_better => Direction::Lowest,
        _ => Direction::Highest,
    }
}

/// `best(split.metric)` as Burn's `MetricCheckpointingStrategy`, its direction from the metric.
fn best<Me: Metric>(metric: &Me, split: Split) -> MetricCheckpointingStrategy {
    MetricCheckpointingStrategy::new(
        metric,
        Aggregate::Mean,
        direction(metric),
        burn_split(split),
    )
}

/// `keep_last(n)` as Burn's `KeepLastNCheckpoints`.
fn keep_last(n: usize) -> KeepLastNCheckpoints {
    KeepLastNCheckpoints::new(n)
}

/// `every(k)`: keeps every epoch divisible by `k` and the newest. Burn has no such strategy.
struct EveryK {
    k: usize,
    last: Option<usize>,
}

/// `every(k)` for Burn's checkpointer.
fn every(k: usize) -> EveryK {
    EveryK { k, last: None }
}

impl CheckpointingStrategy for EveryK {
    fn checkpointing(&mut self, epoch: usize, _: &EventStoreClient) -> Vec<CheckpointingAction> {
        let mut actions = vec![CheckpointingAction::Save];
        if let Some(last) = self.last.replace(epoch)
            && !last.is_multiple_of(self.k.max(1))
        {
            actions.push(CheckpointingAction::Delete(last));
        }
        actions
    }
}

/// `patience(n, split.metric)` as Burn's `MetricEarlyStoppingStrategy`.
fn patience<Me: Metric>(metric: &Me, split: Split, epochs: usize) -> MetricEarlyStoppingStrategy {
    MetricEarlyStoppingStrategy::new(
        metric,
        Aggregate::Mean,
        direction(metric),
        burn_split(split),
        StoppingCondition::NoImprovementSince { n_epochs: epochs },
    )
}

/// `n` devices of the kind of `device`. On the CPU backend these are `n` handles of the one
/// `Flex` device, each trained on its share of every batch.
pub fn devices(device: &Device, n: usize) -> Vec<Device> {
    vec![device.clone(); n.max(1)]
}

/// A metric the run records: how Burn names its log file, and how to watch it with Burn's
/// strategies, so `best(..)` and `patience(..)` come from the run's options (`--set`,
/// `--config`) like on our loop, not from the macro's tokens.
pub struct Recorded {
    /// Split of the metric.
    pub split: Split,
    /// Our key (`loss`, `accuracy`, ...).
    pub key: String,
    /// Burn's name of the metric (`Loss`, `Accuracy`, ...).
    pub burn_name: String,
    /// Whether larger values are better.
    pub higher_is_better: bool,
    best: Box<dyn Fn() -> MetricCheckpointingStrategy>,
    patience: Box<dyn Fn(usize) -> MetricEarlyStoppingStrategy>,
}

impl Recorded {
    /// Describes `metric` recorded on `split` under `key`.
    pub fn new<Me: Metric + 'static>(split: Split, key: &str, metric: Me) -> Self {
        let for_patience = metric.clone();
        Self {
            split,
            key: key.to_owned(),
            burn_name: metric.name().to_string(),
            higher_is_better: matches!(direction(&metric), Direction::Highest),
            best: Box::new(move || best(&metric, split)),
            patience: Box::new(move |n| patience(&for_patience, split, n)),
        }
    }
}

/// The recorded metric `split.key`, which `FitOptions::validate`'s caller has checked exists.
fn watched<'a>(
    recorded: &'a [Recorded],
    split: Split,
    key: &str,
) -> Result<&'a Recorded, FitError> {
    recorded
        .iter()
        .find(|r| r.split == split && r.key == key)
        .ok_or_else(|| {
            FitError::Setting(SettingError {
                option: "checkpoint",
                message: format!(
                    "watches {split}.{key}, which is not recorded: add it to the metrics"
                ),
            })
        })
}

/// The run's checkpoint policies as Burn's composed strategy.
fn checkpointing(
    policies: &[crate::checkpoint::Policy],
    recorded: &[Recorded],
) -> Result<ComposedCheckpointingStrategy, FitError> {
    use crate::checkpoint::Policy;
    let mut builder = ComposedCheckpointingStrategy::builder();
    for policy in policies {
        builder = match policy {
            Policy::KeepLast { n } => builder.add(keep_last(*n)),
            Policy::Every { k } => builder.add(every(*k)),
            Policy::Best { split, metric } => {
                builder.add((watched(recorded, *split, metric)?.best)())
            }
        };
    }
    Ok(builder.build())
}

/// ExperimentRuns an experiment with Burn's `SupervisedTraining` on `devices` with `strategy`.
/// `register` adds the metrics, checkpointing and early-stopping rules (typed, generated by
/// `training!`); `recorded` describes the metrics so their values come back in the report.
#[allow(clippy::too_many_arguments)]
pub fn fit_with_burn<M, I, B>(
    model: M,
    optimizer: ModuleOptimizer,
    lr_scheduler: ModuleLrScheduler,
    options: FitOptions,
    devices: Vec<Device>,
    strategy: Strategy,
    data: Data<I, B>,
    register: impl FnOnce(SupervisedTraining<M>) -> SupervisedTraining<M>,
    recorded: Vec<Recorded>,
) -> Result<FitReport<M>, FitError>
where
    M: LearnerModel,
    I: Clone + Send + Sync + std::fmt::Debug + 'static,
    <M as TrainStep>::Input: Clone + std::fmt::Debug,
    <M as InferenceStep>::Input: Clone + std::fmt::Debug,
    B: Batcher<I, <M as TrainStep>::Input>
        + Batcher<I, <M as InferenceStep>::Input>
        + Clone
        + 'static,
{
    options.validate()?;
    let invalid = |option: &'static str, message: &str| {
        FitError::Setting(SettingError {
            option,
            message: message.to_owned(),
        })
    };
    // Set from the command line (`training!` refuses them with an engine key at compile time);
    // callbacks and a test split are code, which the macro alone sees.
    let set = |key: &str| match key {
        "init_from" => options.init_from.is_some(),
        "freeze" => !options.freeze.is_empty(),
        "lora" => options.lora.is_some(),
        "ema" => options.ema.is_some(),
        "gradient_checkpointing" => options.gradient_checkpointing,
        "precision" => !options.precision.is_f32(),
        "lr_schedule" => options.plateau.is_some(),
        "augment" => data.augment.is_some(),
        // Code too: the macro refuses `data_parallel` beside an engine key.
        "callbacks" | "test" | "data_parallel" | "after_step" | "at_epoch_end" => false,
        other => unreachable!("`{other}` of OURS_ONLY is not looked up here"),
    };
    if let Some(feature) = burn_experiment_vocabulary::engine::OURS_ONLY
        .iter()
        .find(|feature| set(feature.key))
    {
        return Err(invalid(
            feature.key,
            "is a setting of this crate's fit loop, which Burn's engine does not honour: unset it, or train with `engine = ours` on one device",
        ));
    }
    let devices: Vec<Device> = devices.into_iter().map(|d| d.autodiff()).collect();
    let execution = match (strategy, devices.len()) {
        (Strategy::Single, 1) => ExecutionStrategy::single(devices[0].clone()),
        (Strategy::Single, n) => {
            return Err(invalid(
                "strategy",
                &format!(
                    "`single` runs on one device, not {n}: use `multi` or `ddp`, or one device"
                ),
            ));
        }
        (_, n) if n < 2 => {
            return Err(invalid(
                "strategy",
                "`multi` and `ddp` need at least two devices: set `devices` to 2 or more",
            ));
        }
        (Strategy::Multi, _) => {
            ExecutionStrategy::multi(devices, MultiDeviceOptim::OptimMainDevice)
        }
        (Strategy::Ddp, _) => {
            // Burn 0.22.1 has collective operations only on CUDA (and its remote backend):
            // for any other device `DistributedContext::init` panics in burn-dispatch
            // (src/ops/distributed.rs, "Distributed operations are not supported for device").
            if !devices.iter().all(|d| format!("{d:?}").contains("Cuda")) {
                return Err(invalid(
                    "strategy",
                    "`ddp` needs devices with collective operations, which Burn 0.22.1 has on CUDA only; on the CPU use `multi`",
                ));
            }
            ExecutionStrategy::ddp(
                devices,
                burn::tensor::distributed::DistributedConfig {
                    all_reduce_op: burn::tensor::distributed::ReduceOperation::Mean,
                },
            )
        }
    };
    let optimizer = match options.grad_clip {
        Some(GradClip::Value(max)) => optimizer
            .with_grad_clipping(burn::grad_clipping::GradientClippingConfig::Value(max).init()),
        Some(GradClip::ParamNorm(max)) => optimizer
            .with_grad_clipping(burn::grad_clipping::GradientClippingConfig::Norm(max).init()),
        Some(GradClip::Norm(_)) => {
            return Err(invalid(
                "grad_clip",
                "norm(..) is our global-norm clipping, which Burn's engine does not run: use value(..), or the default engine",
            ));
        }
        None => optimizer,
    };
    if options
        .early_stopping
        .as_ref()
        .is_some_and(|e| e.min_delta != 0.0)
    {
        return Err(invalid(
            "early_stopping",
            "Burn's early stopping has no min_delta: drop it, or use the default engine",
        ));
    }

    // Burn's Learner always writes its logs and checkpoints to a folder: a run that should
    // leave nothing (`--fast-dev-run`) gets a temporary one, removed at the end.
    let run_dir = if options.write_files {
        options.resolve_run_dir()?
    } else {
        std::env::temp_dir().join(format!("dsl-burn-{}-{}", std::process::id(), options.name))
    };
    std::fs::create_dir_all(&run_dir).map_err(|source| FitError::RunDir {
        path: run_dir.clone(),
        source,
    })?;
    let _scratch = (!options.write_files).then(|| Scratch(run_dir.clone()));
    let Data {
        train,
        valid,
        batcher,
        augment: _,
    } = data;
    let mut train_loader = DataLoaderBuilder::new(batcher.clone()).batch_size(options.batch_size);
    if let Some(seed) = options.shuffle {
        train_loader = train_loader.shuffle(seed);
    }
    let mut valid_loader = DataLoaderBuilder::new(batcher).batch_size(options.batch_size);
    if options.workers > 0 {
        train_loader = train_loader.num_workers(options.workers);
        valid_loader = valid_loader.num_workers(options.workers);
    }
    // `limit_*_batches`: the first `n` batches' worth of items, taken before Burn shuffles.
    let limit = |n: Option<usize>, items: usize| n.map(|n| (n * options.batch_size).min(items));
    let mut train_loader = train_loader.build(train);
    if let Some(end) = limit(options.limit_train_batches, train_loader.num_items()) {
        train_loader = train_loader.slice(0, end);
    }
    let mut valid_loader = valid_loader.build(valid);
    if let Some(end) = limit(options.limit_valid_batches, valid_loader.num_items()) {
        valid_loader = valid_loader.slice(0, end);
    }
    let mut training = SupervisedTraining::new(&run_dir, train_loader, valid_loader)
        .num_epochs(options.epochs)
        .with_training_strategy(execution.into())
        // Burn's default installs a global tracing subscriber and a panic hook that outlive the
        // run; the process keeps its own.
        .with_application_logger(None);
    training = register(training);
    if let Some(policies) = &options.checkpoint {
        training = training
            .with_default_checkpointers()
            .with_checkpointing_strategy(checkpointing(policies, &recorded)?);
    }
    if let Some(rule) = &options.early_stopping {
        let watched = watched(&recorded, rule.split, &rule.metric)?;
        training = training.early_stopping((watched.patience)(rule.patience));
    }
    if let Some(n) = options.grad_accumulation {
        training = training.grads_accumulation(n);
    }
    if let Some(resume) = options.resume {
        let epoch = match resume {
            Resume::Epoch(n) => Some(n),
            Resume::Latest => newest_burn_checkpoint(&run_dir.join("checkpoint")),
        };
        if let Some(epoch) = epoch {
            training = training.checkpoint(epoch);
        }
    }
    if options.quiet {
        training = training.renderer(Box::new(Silent));
    } else {
        // Burn's default renderer: its TUI when the `tui` feature is on and stdout is a
        // terminal, its CLI renderer otherwise.
        training = training.summary();
    }
    let result = training.launch(Learner::new(model, optimizer.clone(), lr_scheduler.clone()));
    if let Some(error) = result.error {
        return Err(FitError::Engine(error));
    }
    let history = read_history(&run_dir, &recorded);
    let last_epoch = history
        .series()
        .iter()
        .flat_map(|s| s.epochs.iter().map(|(e, _)| *e))
        .max()
        .unwrap_or(0);
    Ok(FitReport {
        model: result.model,
        optimizer,
        lr_scheduler,
        history,
        last_epoch,
        run_dir,
        test: None,
        stopped: None,
        averaged: None,
        config: serde_json::Value::Null,
        // Burn's Learner reads inside its own metrics: not counted.
        host_reads: Vec::new(),
        measured_together: None,
    })
}

/// The temporary folder Burn's Learner writes to in a run that leaves no file; removed when the
/// run ends, however it ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The newest epoch of Burn's checkpoint files in `dir`.
fn newest_burn_checkpoint(dir: &Path) -> Option<usize> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("model-")?
                .strip_suffix(".bpk")?
                .parse()
                .ok()
        })
        .max()
}

/// Reads Burn's metric logs (`<split>/epoch-N/<Name>.log`: one `value,weight` line per batch,
/// then `value,final`) back into a history.
fn read_history(run_dir: &Path, recorded: &[Recorded]) -> History {
    let mut history = History::default();
    for metric in recorded {
        let index = history.declare(metric.split, &metric.key, metric.higher_is_better);
        let file = format!("{}.log", metric.burn_name.replace(' ', "_"));
        for epoch in 1.. {
            let path = run_dir
                .join(metric.split.as_str())
                .join(format!("epoch-{epoch}"))
                .join(&file);
            let Ok(text) = crate::read::text(&path, crate::read::SMALL) else {
                break;
            };
            for line in text.lines() {
                let Some((value, tag)) = line.split_once(',') else {
                    continue;
                };
                let Ok(value) = value.parse::<f64>() else {
                    continue;
                };
                if tag == "final" {
                    history.record_epoch(index, epoch, value);
                } else if metric.split == Split::Train {
                    history.record_step(index, value);
                }
            }
        }
    }
    history
}

/// A renderer that shows nothing, for `quiet` runs: Burn's CLI renderer prints every step's
/// progress and Burn offers no silent one.
struct Silent;

impl MetricsRendererTraining for Silent {
    fn update_train(&mut self, _: MetricState) {}
    fn update_valid(&mut self, _: MetricState) {}
}

impl TrainingProgressLogger for Silent {
    fn start(&mut self, _: usize, _: usize, _: Option<usize>, _: Option<&str>) {}
    fn start_split(&mut self, _: &str, _: usize) {}
    fn update_split(&mut self, _: usize) {}
    fn update_epoch(&mut self, _: usize) {}
    fn end_split(&mut self) {}
    fn end(&mut self) {}
    fn log_event_training(&mut self, _: String) {}
}

impl EvaluationProgressLogger for Silent {
    fn start_global_progress(&mut self, _: usize) {}
    fn start_test(&mut self, _: &str, _: usize) {}
    fn update_test_progress(&mut self, _: usize) {}
    fn end_test(&mut self) {}
    fn end_global_progress(&mut self) {}
    fn log_event_evaluation(&mut self, _: String) {}
}

impl MetricsRendererEvaluation for Silent {
    fn update_test(&mut self, _: EvaluationName, _: MetricState) {}
}

impl MetricsRenderer for Silent {
    fn manual_close(&mut self) {}
    fn register_metric(&mut self, _: burn::train::metric::MetricDefinition) {}
}
