//! Using a trained model outside training: its outputs on a dataset, and a CSV of its
//! predictions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::train::{InferenceStep, ItemLazy};

use crate::data::DataError;
use crate::error::FitError;
use crate::history::Split;
use crate::inference::evaluate::inference;
use crate::output::atomic::replace_file;

/// The inference step's output for every batch of `dataset`, in order, with the model in
/// inference mode on its device's non-autodiff twin (as validation runs it).
pub fn predict<M, I>(
    model: &M,
    dataset: Arc<dyn Dataset<I>>,
    batcher: Arc<dyn Batcher<I, <M as InferenceStep>::Input>>,
    batch_size: usize,
) -> Result<Vec<<M as InferenceStep>::Output>, FitError>
where
    M: InferenceStep + Module,
    I: Send + Sync + 'static,
    <M as InferenceStep>::Input: Send + 'static,
{
    let (model, loader) = inference(model, Split::Test, dataset, batcher, batch_size)?;
    let mut outputs = Vec::new();
    for (index, batch) in loader.epoch(1, None).enumerate() {
        let batch = batch.map_err(|source: DataError| FitError::Data {
            split: Split::Test,
            epoch: 1,
            batch: index + 1,
            source,
        })?;
        outputs.push(InferenceStep::step(&model, batch).sync()?);
    }
    Ok(outputs)
}

/// Writes `outputs` as `predictions.csv` in `run_dir`, replacing any earlier one whole. The
/// outputs are those of [`predict`], in dataset order, so the first column, `index`, is each
/// item's index in the dataset (`Dataset::get(index)`): rows join with the inputs on it.
pub fn write_predictions<O: crate::model::contract::StepOutput>(
    run_dir: &Path,
    outputs: &[O],
) -> Result<PathBuf, FitError> {
    let mut csv = String::new();
    let mut row = 0;
    for output in outputs {
        let table = output.predictions().map_err(|source| FitError::Metric {
            split: Split::Test,
            metric: "predictions".to_owned(),
            source,
        })?;
        let Some(table) = table else {
            return Err(FitError::InvalidOption {
                option: "predict",
                message: format!(
                    "`{}` has no table form: `--predict` writes ClassificationOutput, MultiLabelClassificationOutput and RegressionOutput; call the experiment's `predict` for the outputs themselves",
                    std::any::type_name::<O>()
                ),
            });
        };
        if csv.is_empty() {
            csv = format!("index,{}\n", table.header.join(","));
        }
        for cells in table.rows {
            csv.push_str(&format!("{row},{}\n", cells.join(",")));
            row += 1;
        }
    }
    let path = run_dir.join("predictions.csv");
    replace_file(&path, csv.as_bytes()).map_err(|source| FitError::RunDir {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}
