//! Using a trained experiment: load a checkpoint, measure a test set.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::tensor::FloatDType;
use burn::train::metric::MetricMetadata;
use burn::train::{InferenceStep, ItemLazy};
use serde::de::DeserializeOwned;

use crate::checkpoint::{CheckpointDir, CheckpointError, Slot};
use crate::data::{CastFn, EpochBatches, Loader, Shard};
use crate::erased::AnyModule;
use crate::error::FitError;
use crate::history::Split;
use crate::interrupt;
use crate::metric::SplitMetric;
use crate::output::runs::ExperimentRuns;
use crate::parallel::step::Outputs;
use crate::parallel::{Collective, ItemCodec};

/// The values of an experiment's metrics on a dataset other than the training split's.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// `(metric key, value)` in declaration order.
    pub values: Vec<(String, f64)>,
    /// The checkpoint measured, for the test split; `None` for a model passed in.
    pub epoch: Option<usize>,
}

impl Evaluation {
    /// The value of metric `key`.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// The run directory `load`/`load_best` read: run `run` of experiment `name` (`run-3` or `3`),
/// else the newest.
pub fn find_run(artifacts: &str, name: &str, run: Option<&str>) -> Result<PathBuf, FitError> {
    let runs = ExperimentRuns::new(Path::new(artifacts), name);
    let found = match run {
        Some(id) => runs.named(id).filter(|path| path.is_dir()),
        None => runs.newest().map_err(|source| FitError::RunDir {
            path: runs.path().to_owned(),
            source,
        })?,
    };
    found.ok_or_else(|| FitError::NoRun {
        dir: runs.path().to_owned(),
        run: run.map(str::to_owned),
    })
}

/// The config the run in `run_dir` was trained with (`hyperparameters` of its `config.json`),
/// so that its model is rebuilt with the run's own hyperparameters, whatever the caller's
/// config says; `given` for a run without the file (one that wrote no files).
pub fn run_config<C: DeserializeOwned + Clone>(run_dir: &Path, given: &C) -> Result<C, FitError> {
    let Some((path, saved)) = saved_hyperparameters(run_dir)? else {
        return Ok(given.clone());
    };
    serde_json::from_value(saved).map_err(|e| FitError::SavedConfig {
        path,
        message: e.to_string(),
    })
}

/// The `hyperparameters` of `run_dir`'s `config.json` with the file's path; `None` without the
/// file. Parsed here, once in this crate, rather than in the generic [`run_config`].
fn saved_hyperparameters(
    run_dir: &Path,
) -> Result<Option<(std::path::PathBuf, serde_json::Value)>, FitError> {
    let path = run_dir.join("config.json");
    let failed = |path, message: String| FitError::SavedConfig { path, message };
    match crate::read::config(&path) {
        Ok(mut value) => Ok(Some((path, value["hyperparameters"].take()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(failed(path, e.to_string())),
    }
}

/// `model` with the parameters of epoch `epoch` of the run in `run_dir`: their moving average
/// for a run with `ema`, as the run validated them.
pub fn load_checkpoint<M: Module + 'static>(
    run_dir: &Path,
    epoch: usize,
    model: M,
) -> Result<M, FitError> {
    let checkpoints = CheckpointDir::new(run_dir);
    let loaded = checkpoints.load(epoch)?;
    // The moving average where the run kept one: it is what the run validated.
    let record = loaded.ema.unwrap_or(loaded.model);
    let loaded = AnyModule::new(model).load(record).map_err(|e| {
        FitError::Checkpoint(CheckpointError::Mismatch {
            file: checkpoints.model_file(Slot::Epoch(epoch)),
            reason: e.to_string(),
        })
    })?;
    Ok(loaded.into_inner())
}

/// The checkpointed epoch of `run_dir` where `split.metric` was best; the newest checkpoint
/// when `watch` is `None`.
pub fn best_checkpoint(run_dir: &Path, watch: Option<(Split, &str)>) -> Result<usize, FitError> {
    let checkpoints = CheckpointDir::new(run_dir);
    let epochs = checkpoints.epochs()?;
    let Some(&newest) = epochs.last() else {
        return Err(FitError::Checkpoint(CheckpointError::NoneSaved {
            dir: checkpoints.path().to_owned(),
        }));
    };
    let Some((split, metric)) = watch else {
        return Ok(newest);
    };
    let history = checkpoints.load(newest)?.state.history;
    let series = history
        .get(split, metric)
        .ok_or_else(|| FitError::InvalidOption {
            option: "load_best",
            message: format!("the run did not record {split}.{metric}"),
        })?;
    let checkpointed = epochs
        .iter()
        .filter_map(|&epoch| Some((epoch, series.at(epoch)?)));
    let best = crate::history::best_of(checkpointed, series.higher_is_better);
    Ok(best.map_or(newest, |(epoch, _)| epoch))
}

/// ExperimentRuns `model` in inference mode over `dataset` and reduces `metrics`, as a validation epoch.
pub fn evaluate<M, I, B>(
    model: &M,
    dataset: impl Dataset<I> + 'static,
    batcher: B,
    batch_size: usize,
    metrics: Vec<Box<dyn SplitMetric<<M as InferenceStep>::Output>>>,
) -> Result<Evaluation, FitError>
where
    M: InferenceStep + Module,
    I: Send + Sync + 'static,
    B: Batcher<I, <M as InferenceStep>::Input> + 'static,
    <M as InferenceStep>::Input: Send + 'static,
{
    let values = measure(
        model,
        Split::Valid,
        Arc::new(dataset),
        Arc::new(batcher),
        batch_size,
        metrics,
        None,
    )?;
    Ok(Evaluation {
        values,
        epoch: None,
    })
}

/// `model` in inference mode, and a loader of `dataset` in order on the non-autodiff twin of
/// the model's device, as validation runs them; an empty dataset is refused naming `split`.
pub(crate) fn inference<M, I>(
    model: &M,
    split: Split,
    dataset: Arc<dyn Dataset<I>>,
    batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>>,
    batch_size: usize,
) -> Result<(M, Loader<I, <M as InferenceStep>::Input>), FitError>
where
    M: InferenceStep + Module,
    I: Send + Sync + 'static,
    <M as InferenceStep>::Input: Send + 'static,
{
    if dataset.is_empty() {
        return Err(FitError::EmptyDataset { split });
    }
    let model = model.valid();
    let device = inner_device(&model);
    let loader = Loader::new(
        split.as_str(),
        dataset,
        batcher,
        device,
        batch_size,
        None,
        0,
    )
    .map_err(FitError::Workers)?;
    Ok((model, loader))
}

/// The non-autodiff device of `model`'s parameters, where batches for inference go.
fn inner_device<M: Module>(model: &M) -> burn::tensor::Device {
    model
        .collect_devices(Vec::new())
        .into_iter()
        .next()
        .unwrap_or_default()
        .inner()
}

/// The values of `metrics` for `model` (put in inference mode) over `dataset`, one pass in
/// order; errors name `split`. With `together` (the ranks of a data-parallel run and how the
/// outputs travel between them), each rank measures its share of the batches
/// ([`infer_together`]) and every rank gets the one-process values.
pub(crate) fn measure<M, I>(
    model: &M,
    split: Split,
    dataset: Arc<dyn Dataset<I>>,
    batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>>,
    batch_size: usize,
    mut metrics: Vec<Box<dyn SplitMetric<<M as InferenceStep>::Output>>>,
    together: Option<Together<<M as InferenceStep>::Output>>,
) -> Result<Vec<(String, f64)>, FitError>
where
    M: InferenceStep + Module,
    I: Send + Sync + 'static,
    <M as InferenceStep>::Input: Send + 'static,
{
    let (model, loader) = inference(model, split, dataset, batcher, batch_size)?;
    match together {
        Some((group, codec)) => {
            let mut outputs = Outputs::new(group, codec, inner_device(&model));
            let mut batches = loader.epoch_shard(1, None, 0, (group.rank(), group.size()));
            infer_together(&model, &mut batches, (split, 1), &mut metrics, &mut outputs)?;
        }
        None => {
            infer(
                &model,
                loader.epoch(1, None),
                (split, 1),
                &mut metrics,
                (false, None),
            )?;
        }
    }
    metrics
        .iter_mut()
        .map(|m| {
            let value = m.finish_epoch().map_err(|source| FitError::Metric {
                split,
                metric: m.key().to_owned(),
                source,
            })?;
            Ok((m.key().to_owned(), value))
        })
        .collect()
}

/// The ranks of a data-parallel run, and how step outputs of type `O` travel between them.
pub(crate) type Together<O> = (&'static dyn Collective, ItemCodec<O>);

/// [`infer`] as one rank of a data-parallel run: rank `r` measures batches `r`, `r + N`, ...
/// of the epoch; every rank receives the outputs of each group of `N` batches in batch order
/// and feeds its metrics all of them, so that every metric (and early stopping, plateaus and
/// `best(..)` after validation) has the one-process values on every rank.
pub(crate) fn infer_together<M: InferenceStep>(
    model: &M,
    batches: &mut dyn Shard<<M as InferenceStep>::Input>,
    (split, epoch): (Split, usize),
    metrics: &mut [Box<dyn SplitMetric<<M as InferenceStep>::Output>>],
    outputs: &mut Outputs<<M as InferenceStep>::Output>,
) -> Result<(), FitError> {
    let (rank, size) = (outputs.group.rank(), outputs.group.size());
    let positions = batches.positions();
    let mut position = 0;
    while position < positions {
        let group = size.min(positions - position);
        let mine = match (rank < group).then(|| batches.next_batch()).flatten() {
            None => None,
            Some(Ok(batch)) => Some(InferenceStep::step(model, batch).sync()?),
            Some(Err(source)) => {
                return Err(FitError::Data {
                    split,
                    epoch,
                    batch: position + rank + 1,
                    source,
                });
            }
        };
        let items = outputs.gather(mine.as_ref(), group)?;
        for (k, item) in items.iter().enumerate() {
            let metadata = MetricMetadata {
                progress: batches.progress_at(position + k),
                iteration: Some(position + k + 1),
                lr: None,
            };
            for metric in metrics.iter_mut() {
                feed(split, metric.as_mut(), item, &metadata)?;
            }
        }
        position += group;
    }
    Ok(())
}

/// ExperimentRuns `model` (already in inference mode) over `batches` of `split` in `epoch`, feeding every
/// metric: the shared body of a validation epoch and of evaluating a test set. `false` when a
/// run holding the Ctrl-C/SIGTERM handler (`interruptible`) was interrupted before the last
/// batch.
pub(crate) fn infer<M, I>(
    model: &M,
    mut batches: EpochBatches<'_, I, <M as InferenceStep>::Input>,
    (split, epoch): (Split, usize),
    metrics: &mut [Box<dyn SplitMetric<<M as InferenceStep>::Output>>],
    (interruptible, to_f32): (bool, Option<CastFn<<M as InferenceStep>::Output>>),
) -> Result<bool, FitError>
where
    M: InferenceStep,
{
    let mut index = 0;
    while let Some(batch) = batches.next() {
        index += 1;
        if interruptible && interrupt::raised() {
            return Ok(false);
        }
        let batch = batch.map_err(|source| FitError::Data {
            split,
            epoch,
            batch: index,
            source,
        })?;
        let item = InferenceStep::step(model, batch).sync()?;
        // A 16-bit run's outputs reach the metrics in f32 (`Fit::output_casts`).
        let item = match to_f32 {
            Some(cast) => cast(item, FloatDType::F32),
            None => item,
        };
        let metadata = MetricMetadata {
            progress: batches.progress(),
            iteration: Some(index),
            lr: None,
        };
        for metric in metrics.iter_mut() {
            feed(split, metric.as_mut(), &item, &metadata)?;
        }
    }
    Ok(true)
}

/// Feeds one step output to one metric, naming the metric if its tensors cannot be read.
pub(crate) fn feed<O>(
    split: Split,
    metric: &mut dyn SplitMetric<O>,
    item: &O,
    metadata: &MetricMetadata,
) -> Result<Option<f64>, FitError> {
    metric
        .update(item, metadata)
        .map_err(|source| FitError::Metric {
            split,
            metric: metric.key().to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_without_checkpoints_says_so_and_how_to_keep_one() {
        let dir = tempfile::tempdir().unwrap();
        let err = super::best_checkpoint(dir.path(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("the run saved none"), "{err}");
        assert!(err.contains("keep_last(1)"), "{err}");
        assert!(!err.contains("epoch 0"), "{err}");
    }
}
