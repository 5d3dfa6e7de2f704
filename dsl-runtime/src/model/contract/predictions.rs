//! The table form of Burn's outputs: one CSV row per sample, what `--predict` writes.

use burn::tensor::{Int, Tensor, TensorReadError, activation};
use burn::train::{ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput};

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
/// [`StepOutput::predictions`]: super::StepOutput::predictions
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
