//! Using a trained model outside training: its outputs on a dataset, and a CSV of its
//! predictions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::tensor::{Int, Tensor, TensorReadError, activation};
use burn::train::{
    ClassificationOutput, InferenceStep, ItemLazy, MultiLabelClassificationOutput, RegressionOutput,
};

use crate::FitError;
use crate::data::DataError;
use crate::evaluate::inference;
use crate::history::Split;
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
    I: Clone + Send + Sync + 'static,
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

/// A step output as CSV rows, one per sample: what `--predict` writes.
pub struct PredictionRows {
    /// Column names.
    pub header: Vec<String>,
    /// One row per sample, as many cells as `header`.
    pub rows: Vec<Vec<String>>,
}

/// Outputs with a table form: classes and probabilities for classification, values for
/// regression. Implemented for Burn's outputs; [`StepOutput::predictions`] reaches it.
///
/// [`StepOutput::predictions`]: crate::contract::StepOutput::predictions
pub(crate) trait PredictionTable {
    fn table(&self) -> Result<Option<PredictionRows>, TensorReadError>;
}

fn floats<const D: usize>(t: &Tensor<D>) -> Result<Vec<f32>, TensorReadError> {
    let data = t.clone().try_into_data_as::<f32>()?;
    Ok(data.iter::<f32>().collect())
}

fn ints<const D: usize>(t: &Tensor<D, Int>) -> Result<Vec<i64>, TensorReadError> {
    let data = t.clone().try_into_data_as::<i64>()?;
    Ok(data.iter::<i64>().collect())
}

fn numbered(prefix: &str, n: usize) -> impl Iterator<Item = String> + '_ {
    (0..n).map(move |i| format!("{prefix}_{i}"))
}

impl PredictionTable for ClassificationOutput {
    /// `predicted, target, p_0 .. p_k`: the arg-max class, the target, the softmax of the logits.
    fn table(&self) -> Result<Option<PredictionRows>, TensorReadError> {
        let [samples, classes] = self.output.dims();
        let probabilities = floats(&activation::softmax(self.output.clone(), 1))?;
        let targets = ints(&self.targets)?;
        let header = ["predicted", "target"]
            .map(str::to_owned)
            .into_iter()
            .chain(numbered("p", classes))
            .collect();
        let rows = (0..samples)
            .map(|i| {
                let p = &probabilities[i * classes..(i + 1) * classes];
                let predicted = (0..classes)
                    .reduce(|best, c| if p[c] > p[best] { c } else { best })
                    .unwrap_or(0);
                [predicted.to_string(), targets[i].to_string()]
                    .into_iter()
                    .chain(p.iter().map(f32::to_string))
                    .collect()
            })
            .collect();
        Ok(Some(PredictionRows { header, rows }))
    }
}

impl PredictionTable for MultiLabelClassificationOutput {
    /// `p_0 .. p_k, target_0 .. target_k`: the sigmoid of each label's logit and the targets.
    fn table(&self) -> Result<Option<PredictionRows>, TensorReadError> {
        let [samples, labels] = self.output.dims();
        let probabilities = floats(&activation::sigmoid(self.output.clone()))?;
        let targets = ints(&self.targets)?;
        let header = numbered("p", labels)
            .chain(numbered("target", labels))
            .collect();
        let rows = (0..samples)
            .map(|i| {
                let cells = i * labels..(i + 1) * labels;
                probabilities[cells.clone()]
                    .iter()
                    .map(f32::to_string)
                    .chain(targets[cells].iter().map(i64::to_string))
                    .collect()
            })
            .collect();
        Ok(Some(PredictionRows { header, rows }))
    }
}

impl PredictionTable for RegressionOutput {
    /// `prediction_0 .. prediction_k, target_0 .. target_k`.
    fn table(&self) -> Result<Option<PredictionRows>, TensorReadError> {
        let [samples, values] = self.output.dims();
        let predictions = floats(&self.output)?;
        let targets = floats(&self.targets)?;
        let header = numbered("prediction", values)
            .chain(numbered("target", values))
            .collect();
        let rows = (0..samples)
            .map(|i| {
                let cells = i * values..(i + 1) * values;
                predictions[cells.clone()]
                    .iter()
                    .chain(&targets[cells])
                    .map(f32::to_string)
                    .collect()
            })
            .collect();
        Ok(Some(PredictionRows { header, rows }))
    }
}

/// Writes `outputs` as `predictions.csv` in `run_dir`, replacing any earlier one whole. The
/// outputs are those of [`predict`], in dataset order, so the first column, `index`, is each
/// item's index in the dataset (`Dataset::get(index)`): rows join with the inputs on it.
pub fn write_predictions<O: crate::contract::StepOutput>(
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
