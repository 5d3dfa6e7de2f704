//! Step outputs as tensors that can travel between ranks.
//!
//! Every rank feeds the training metrics every rank's step output, so an output must be taken
//! apart into its tensors' values and put together again on another process. Burn's outputs
//! are written here; `#[derive(StepOutput)]` writes it for an output whose fields all have a
//! role.

use burn::tensor::kind::Basic;
use burn::tensor::{Device, Tensor, TensorData};
use burn::train::{ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput};

/// A step output whose values can be sent to another rank and rebuilt there.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent between the ranks of `data_parallel`",
    label = "every rank feeds the metrics every rank's output, so it must travel",
    note = "derive `StepOutput` with every field marked `#[loss]`, `#[logits]` or `#[targets]`, or implement `burn_experiment::parallel::Portable` for it"
)]
pub trait Portable: Sized {
    /// The values of its tensors, in a fixed order.
    fn parts(&self) -> Vec<TensorData>;
    /// The output again from [`Portable::parts`]' values, on `device`.
    fn from_parts(
        parts: &mut dyn Iterator<Item = TensorData>,
        device: &Device,
    ) -> Result<Self, String>;
}

/// One field of a [`Portable`] output.
pub trait PortablePart: Sized {
    /// Its values.
    fn part(&self) -> TensorData;
    /// The field again from the next values of `parts`.
    fn from_part(
        parts: &mut dyn Iterator<Item = TensorData>,
        device: &Device,
    ) -> Result<Self, String>;
}

impl<const D: usize, K: Basic> PortablePart for Tensor<D, K> {
    fn part(&self) -> TensorData {
        self.to_data()
    }

    fn from_part(
        parts: &mut dyn Iterator<Item = TensorData>,
        device: &Device,
    ) -> Result<Self, String> {
        let data = parts.next().ok_or("fewer tensors than the output has")?;
        let rank = data.shape().num_dims();
        if rank != D {
            return Err(format!(
                "a tensor of rank {rank} where the output has rank {D}"
            ));
        }
        let dtype = data.dtype();
        Ok(Tensor::from_data(data, (device, dtype)))
    }
}

/// Burn's outputs, each a loss, an output and targets.
macro_rules! portable_burn_output {
    ($($ty:ty),*) => {$(
        impl Portable for $ty {
            fn parts(&self) -> Vec<TensorData> {
                vec![self.loss.part(), self.output.part(), self.targets.part()]
            }

            fn from_parts(
                parts: &mut dyn Iterator<Item = TensorData>,
                device: &Device,
            ) -> Result<Self, String> {
                Ok(Self {
                    loss: PortablePart::from_part(parts, device)?,
                    output: PortablePart::from_part(parts, device)?,
                    targets: PortablePart::from_part(parts, device)?,
                })
            }
        }
    )*};
}

portable_burn_output!(
    ClassificationOutput,
    MultiLabelClassificationOutput,
    RegressionOutput
);

/// How the fit loop sends and rebuilds step outputs of type `T`: plain function pointers, so
/// that the loop's code does not depend on `T` being [`Portable`] (only an experiment with
/// `data_parallel` asks for it).
pub struct ItemCodec<T> {
    pub(crate) parts: fn(&T) -> Vec<TensorData>,
    pub(crate) from_parts: fn(&mut dyn Iterator<Item = TensorData>, &Device) -> Result<T, String>,
}

impl<T> Clone for ItemCodec<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ItemCodec<T> {}

impl<T: Portable> ItemCodec<T> {
    /// The codec of a [`Portable`] output.
    pub fn of() -> Self {
        Self {
            parts: T::parts,
            from_parts: T::from_parts,
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Int, Tensor};
    use burn::train::ClassificationOutput;

    use super::Portable;

    #[test]
    fn a_classification_output_is_rebuilt_with_the_same_values_and_types() {
        let device = Device::default();
        let output = ClassificationOutput {
            loss: Tensor::from_data([0.25f32], &device),
            output: Tensor::from_data([[1.0f32, -2.5], [0.5, 3.0]], &device),
            targets: Tensor::<1, Int>::from_data([1i64, 0], &device),
        };
        let parts = output.parts();
        let rebuilt = ClassificationOutput::from_parts(&mut parts.clone().into_iter(), &device)
            .expect("rebuilt");
        assert_eq!(rebuilt.parts(), parts);
        assert_eq!(rebuilt.targets.to_data(), output.targets.to_data());
        // A list cut short is an error, not a panic.
        let mut short = parts.into_iter().take(2);
        let err = ClassificationOutput::from_parts(&mut short, &device).err();
        assert_eq!(err.as_deref(), Some("fewer tensors than the output has"));
    }
}
