//! The test split: measured once, after training, on the checkpoint `best(..)` chose (the
//! last epoch's model when no `best(..)` is set), and written next to the training figures.
//!
//! It runs after either engine has returned its [`FitReport`], so Burn's engine and ours share
//! it; its values join the history as epoch rows of split `test`.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::train::{InferenceStep, LearnerModel};

use burn::module::Module;

use burn::store::ModuleRecord;
use burn::tensor::Bytes;

use super::{FitReport, ValidOutputOf};
use crate::checkpoint::Policy;
use crate::erased::AnyModule;
use crate::history::Split;
use crate::inference::evaluate::{Evaluation, Together, best_checkpoint, load_checkpoint, measure};
use crate::metric::SplitMetric;
use crate::output::atomic::replace_file;
use crate::output::metrics_csv::Line;
use crate::output::tensorboard::{EVENTS_FILE, EventWriter};
use crate::parallel::{Collective, ItemCodec};
use crate::{config::options::FitOptions, error::FitError};

/// What measuring the test split needs of a run's options, taken before the run consumes them.
#[derive(Clone, Debug)]
pub struct TestPlan {
    /// The metric of the first `best(..)` policy, which picks the checkpoint.
    watch: Option<(Split, String)>,
    batch_size: usize,
    write_files: bool,
    quiet: bool,
}

impl TestPlan {
    /// The plan for a run with `options`.
    pub fn new(options: &FitOptions) -> Self {
        let watch = options.checkpoint.iter().flatten().find_map(|p| match p {
            Policy::Best { split, metric } => Some((*split, metric.clone())),
            _ => None,
        });
        Self {
            watch,
            batch_size: options.batch_size,
            write_files: options.write_files,
            quiet: options.quiet,
        }
    }
}

/// The test split of an experiment: its dataset, the batcher, and the `test.*` metrics.
pub struct TestSplit<I, M: InferenceStep> {
    /// The test items.
    pub dataset: Arc<dyn Dataset<I>>,
    /// The experiment's batcher.
    pub batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>>,
    /// The `test.*` metrics, in declaration order.
    pub metrics: Vec<Box<dyn SplitMetric<<M as InferenceStep>::Output>>>,
}

impl<M: LearnerModel> FitReport<M> {
    /// Measures `test` on the checkpoint `best(..)` chose (this report's model when there is
    /// none, or when the run wrote no file), adds the values to the history, `metrics.csv`
    /// and `summary.md`, and prints them.
    pub fn test<I>(mut self, plan: &TestPlan, test: TestSplit<I, M>) -> Result<Self, FitError>
    where
        I: Send + Sync + 'static,
    {
        // The ranks of a data-parallel run measure it together; rank 0 picks the checkpoint,
        // from the files it alone holds, and writes the values.
        let codec = self
            .measured_together
            .take()
            .and_then(|codec| codec.downcast::<ItemCodec<ValidOutputOf<M>>>().ok());
        let together = crate::parallel::group().zip(codec.map(|codec| *codec));
        let rank = crate::parallel::group().map_or(0, |group| group.rank());
        if together.is_none() && rank != 0 {
            return Ok(self);
        }
        let chosen = match &plan.watch {
            Some((split, metric)) if plan.write_files && rank == 0 => {
                best_checkpoint(&self.run_dir, Some((*split, metric)))?
            }
            _ => self.last_epoch,
        };
        let chosen = match together {
            Some((group, _)) => {
                let bytes = group.broadcast((chosen as u64).to_le_bytes().to_vec());
                let epoch = bytes.get(..8).and_then(|b| b.try_into().ok());
                epoch.map_or(chosen, |b| u64::from_le_bytes(b) as usize)
            }
            None => chosen,
        };
        let evaluation = if chosen == self.last_epoch {
            let last = self.averaged.as_ref().unwrap_or(&self.model);
            test.measure_with(last, chosen, plan.batch_size, together)?
        } else {
            let best = match together {
                Some((group, _)) => {
                    shared_checkpoint(group, &self.run_dir, chosen, self.model.clone())?
                }
                None => load_checkpoint(&self.run_dir, chosen, self.model.clone())?,
            };
            test.measure_with(&best, chosen, plan.batch_size, together)?
        };
        if rank != 0 {
            return Ok(self);
        }
        for (key, value) in &evaluation.values {
            let index = self.history.declare(Split::Test, key, true);
            self.history.record_epoch(index, chosen, *value);
        }
        // The record names the split's metrics like the others (what `--verify` compares).
        if let Some(metrics) = self.config.get_mut("metrics") {
            metrics["test"] = evaluation
                .values
                .iter()
                .map(|(key, _)| key.clone())
                .collect();
        }
        let ranks = together.map(|(group, _)| group.size());
        if plan.write_files {
            write_test(&self.run_dir, &evaluation, ranks, &self.config).map_err(|source| {
                FitError::RunDir {
                    path: self.run_dir.clone(),
                    source,
                }
            })?;
        }
        if !plan.quiet {
            // Without files there is no checkpoint: the model measured is the last, in memory.
            let measured = if plan.write_files {
                "checkpoint"
            } else {
                "model"
            };
            say!("{}", line(&evaluation, measured));
        }
        self.test = Some(evaluation);
        Ok(self)
    }
}

impl<I, M> TestSplit<I, M>
where
    I: Send + Sync + 'static,
    M: InferenceStep + Module,
    <M as InferenceStep>::Input: Send + 'static,
{
    /// The test metrics of `model`, the checkpoint of `epoch`.
    pub fn measure(
        self,
        model: &M,
        epoch: usize,
        batch_size: usize,
    ) -> Result<Evaluation, FitError> {
        self.measure_with(model, epoch, batch_size, None)
    }

    /// [`TestSplit::measure`]; with `together`, by the ranks of a data-parallel run together.
    fn measure_with(
        self,
        model: &M,
        epoch: usize,
        batch_size: usize,
        together: Option<Together<ValidOutputOf<M>>>,
    ) -> Result<Evaluation, FitError> {
        let values = measure(
            model,
            Split::Test,
            self.dataset,
            self.batcher,
            batch_size,
            self.metrics,
            together,
        )?;
        Ok(Evaluation {
            values,
            epoch: Some(epoch),
        })
    }
}

/// Rank 0's checkpoint of `epoch` on every rank: rank 0 reads it and sends its weights.
fn shared_checkpoint<M: Module + 'static>(
    group: &dyn Collective,
    run_dir: &Path,
    epoch: usize,
    model: M,
) -> Result<M, FitError> {
    let invalid = |message: String| FitError::InvalidOption {
        option: "test",
        message: format!("the checkpoint of epoch {epoch} cannot be sent between ranks: {message}"),
    };
    if group.rank() == 0 {
        let best = load_checkpoint(run_dir, epoch, model)?;
        let record = AnyModule::new(best.clone()).record();
        let bytes = record.into_bytes().map_err(|e| invalid(e.to_string()))?;
        group.broadcast(bytes.to_vec());
        return Ok(best);
    }
    let bytes = group.broadcast(Vec::new());
    let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(bytes))
        .map_err(|e| invalid(e.to_string()))?;
    let loaded = AnyModule::new(model)
        .load(record)
        .map_err(|e| invalid(e.to_string()))?;
    Ok(loaded.into_inner())
}

/// `test (checkpoint of epoch 3)  test.loss 0.5123  test.accuracy 81.2500`
pub fn test_line(evaluation: &Evaluation) -> String {
    line(evaluation, "checkpoint")
}

/// [`test_line`], naming what was `measured` (a checkpoint, or the model in memory).
fn line(evaluation: &Evaluation, measured: &str) -> String {
    let mut line = match evaluation.epoch {
        Some(epoch) => format!("test ({measured} of epoch {epoch})"),
        None => "test".to_owned(),
    };
    for (key, value) in &evaluation.values {
        line.push_str(&format!("  test.{key} {value:.4}"));
    }
    line
}

/// The test split's rows of `metrics.csv`, at the epoch of the checkpoint measured.
fn test_rows(evaluation: &Evaluation) -> String {
    let epoch = evaluation.epoch.unwrap_or_default();
    evaluation
        .values
        .iter()
        .map(|(key, value)| {
            let line = Line {
                step: None,
                epoch,
                split: "test",
                metric: key,
                value: *value,
            };
            format!("{line}\n")
        })
        .collect()
}

/// Appends the test rows to `metrics.csv` and the event file (epoch = the checkpoint's), names
/// the split's metrics in `config.json`, and adds a section to `summary.md` (saying how many
/// ranks of a data-parallel run measured it).
fn write_test(
    run_dir: &Path,
    evaluation: &Evaluation,
    ranks: Option<usize>,
    config: &serde_json::Value,
) -> std::io::Result<()> {
    let epoch = evaluation.epoch.unwrap_or_default();
    let rows = test_rows(evaluation);
    let together = ranks.map_or_else(String::new, |n| format!(", measured by {n} ranks together"));
    let mut table = format!(
        "\n## Test (checkpoint of epoch {epoch}{together})\n\n| metric | value |\n|---|---|\n"
    );
    let mut events = EventWriter::append(&run_dir.join(EVENTS_FILE))?;
    for (key, value) in &evaluation.values {
        table.push_str(&format!("| {key} | {value:.4} |\n"));
        events.value(None, epoch, Split::Test.as_str(), key, *value)?;
    }
    events.flush()?;
    let append = |name: &str, text: &str| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(run_dir.join(name))?;
        file.write_all(text.as_bytes())?;
        file.sync_data()
    };
    append("metrics.csv", &rows)?;
    let json = serde_json::to_vec_pretty(config).map_err(std::io::Error::other)?;
    replace_file(&run_dir.join("config.json"), &json)?;
    append("summary.md", &table)?;
    // The run's tracker ended with the run: its test rows and new files go now.
    crate::output::mlflow::after_test(run_dir, config);
    Ok(())
}
