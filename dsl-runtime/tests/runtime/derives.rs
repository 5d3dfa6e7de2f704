//! `#[derive(Batch)]` and `#[derive(StepOutput)]` against the hand-written seed types: the same
//! experiment with derived types trains to the same bits and reports the same metrics.

use crate::common::*;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::AdamConfig;
use burn::tensor::{Int, Tensor};
use burn::train::{InferenceStep, TrainOutput, TrainStep};
use burn_experiment::prelude::*;

/// The seed sample with derived batching: an array of features and a class index.
#[derive(Clone, Debug, Batch)]
struct Point {
    x: [f32; 4],
    class: usize,
    weight: f64,
    extra: Vec<f32>,
}

fn points(range: std::ops::Range<usize>) -> burn::data::dataset::InMemDataset<Point> {
    burn::data::dataset::InMemDataset::new(
        range
            .map(|k| {
                let s = sample(k);
                Point {
                    x: s.x,
                    class: s.class as usize,
                    weight: 1.0,
                    extra: vec![s.target; 2],
                }
            })
            .collect(),
    )
}

/// A custom output: the roles marked, plus a field of its own.
#[derive(StepOutput)]
struct Scored {
    #[loss]
    loss: Tensor<1>,
    #[logits]
    scores: Tensor<2>,
    #[targets]
    classes: Tensor<1, Int>,
    #[allow(dead_code)]
    note: &'static str,
}

#[derive(burn::module::Module, Debug)]
struct Derived {
    mlp: Mlp,
}

impl Derived {
    fn forward(&self, batch: PointBatch) -> Scored {
        assert_eq!(batch.weight.dims(), [batch.class.dims()[0]]);
        assert_eq!(batch.extra.dims()[1], 2);
        let scores = self.mlp.forward(batch.x);
        let loss = CrossEntropyLossConfig::new()
            .init(&scores.device())
            .forward(scores.clone(), batch.class.clone());
        Scored {
            loss,
            scores,
            classes: batch.class,
            note: "derived",
        }
    }
}

impl TrainStep for Derived {
    type Input = PointBatch;
    type Output = Scored;

    fn step(&self, batch: PointBatch) -> TrainOutput<Scored> {
        burn_experiment::__private::train_output(self, self.forward(batch))
    }
}

impl InferenceStep for Derived {
    type Input = PointBatch;
    type Output = Scored;

    fn step(&self, batch: PointBatch) -> Scored {
        self.forward(batch)
    }
}

#[test]
fn derived_batch_and_output_train_and_measure_like_the_hand_written_ones() {
    let dir = tempfile::tempdir().unwrap();
    let options = FitOptions {
        artifacts: dir.path().to_owned(),
        epochs: 3,
        batch_size: 16,
        shuffle: Some(5),
        quiet: true,
        ..FitOptions::default()
    };
    let derived = Fit::new(Derived { mlp: mlp(3) }, AdamConfig::new().init(), 1e-2)
        .options(options.clone())
        .train_metric(metric::loss())
        .valid_metric(metric::accuracy())
        .valid_metric(metric::f1())
        .valid_metric(metric::auroc())
        .valid_metric(metric::top_k(2))
        .run(
            &device(),
            Data::new(points(0..96), points(96..120), PointBatcher),
        )
        .unwrap();
    let hand = Fit::new(classifier(), AdamConfig::new().init(), 1e-2)
        .options(options)
        .train_metric(metric::loss())
        .valid_metric(metric::accuracy())
        .valid_metric(metric::f1())
        .valid_metric(metric::auroc())
        .valid_metric(metric::top_k(2))
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap();
    assert_bit_identical(
        &derived.history.train_losses(),
        &hand.history.train_losses(),
    );
    for key in ["accuracy", "f1", "auroc", "top_k(2)"] {
        assert_eq!(
            derived.history.get(Split::Valid, key).unwrap().values(),
            hand.history.get(Split::Valid, key).unwrap().values(),
            "{key}"
        );
    }
}

/// An image sample and a text sample, as `#[derive(Batch)]` stacks them.
#[derive(Clone, Debug, Batch)]
struct Shapes {
    image: [[f32; 3]; 2],
    volume: [[[u8; 2]; 2]; 2],
    #[pad(9)]
    tokens: Vec<usize>,
    label: i64,
}

#[test]
fn nested_arrays_stack_as_images_and_token_lists_pad_with_a_mask() {
    use burn::data::dataloader::batcher::Batcher;
    let shapes = |k: u8, length: usize| Shapes {
        image: [[k as f32, 1.0, 2.0], [3.0, 4.0, 5.0]],
        volume: [[[k, 1], [2, 3]], [[4, 5], [6, 7]]],
        tokens: (1..=length).collect(),
        label: k.into(),
    };
    let batch = ShapesBatcher.batch(vec![shapes(10, 3), shapes(20, 1)], &device().inner());
    assert_eq!(batch.image.dims(), [2, 2, 3]);
    assert_eq!(
        batch.image.into_data().iter::<f32>().collect::<Vec<_>>(),
        [10.0, 1.0, 2.0, 3.0, 4.0, 5.0, 20.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
    assert_eq!(batch.volume.dims(), [2, 2, 2, 2]);
    assert_eq!(
        batch.volume.into_data().iter::<i64>().collect::<Vec<_>>(),
        [10, 1, 2, 3, 4, 5, 6, 7, 20, 1, 2, 3, 4, 5, 6, 7]
    );
    assert_eq!(batch.tokens.dims(), [2, 3]);
    assert_eq!(
        batch.tokens.into_data().iter::<i64>().collect::<Vec<_>>(),
        [1, 2, 3, 1, 9, 9],
        "padded with #[pad(9)]"
    );
    assert_eq!(
        batch
            .tokens_mask
            .into_data()
            .iter::<bool>()
            .collect::<Vec<_>>(),
        [true, true, true, true, false, false]
    );
    assert_eq!(
        batch
            .tokens_lengths
            .into_data()
            .iter::<i64>()
            .collect::<Vec<_>>(),
        [3, 1]
    );
    assert_eq!(
        batch.label.into_data().iter::<i64>().collect::<Vec<_>>(),
        [10, 20]
    );
}

/// A 16-bit run's cast (`precision: bf16`, or f16 on a device without bf16 arithmetic, as
/// lavapipe): the float tensors take the type, the integer ones, the mask and the lengths stay
/// as built, and the values are the nearest 16-bit ones.
#[test]
fn a_derived_batch_casts_its_float_tensors_only() {
    use burn::data::dataloader::batcher::Batcher;
    use burn::tensor::{DType, FloatDType};
    let sample = Shapes {
        image: [[1.0, 1.0 + 1.0 / 4096.0, 2.0], [3.0, 4.0, 5.0]],
        volume: [[[1, 1], [2, 3]], [[4, 5], [6, 7]]],
        tokens: vec![1, 2],
        label: 1,
    };
    let batch = ShapesBatcher.batch(vec![sample], &device().inner());
    let ints = (
        batch.volume.dtype(),
        batch.tokens.dtype(),
        batch.tokens_mask.dtype(),
        batch.tokens_lengths.dtype(),
        batch.label.dtype(),
    );
    let supported = [
        (FloatDType::BF16, DType::BF16),
        (FloatDType::F16, DType::F16),
    ]
    .into_iter()
    .find(|(low, _)| device().inner().supports_dtype(*low));
    // A device with neither (ndarray) refuses a 16-bit run before any batch is cast:
    // `precision.rs` asserts that refusal.
    let Some((low, dtype)) = supported else {
        return;
    };
    let cast = burn_experiment::CastFloats::cast_floats(batch, low);
    assert_eq!(cast.image.dtype(), dtype);
    assert_eq!(
        (
            cast.volume.dtype(),
            cast.tokens.dtype(),
            cast.tokens_mask.dtype(),
            cast.tokens_lengths.dtype(),
            cast.label.dtype(),
        ),
        ints
    );
    // 1 + 2^-12 is below bf16's and f16's resolution at 1 (2^-7, 2^-10): it rounds to 1.
    let values: Vec<f32> = cast
        .image
        .into_data()
        .convert::<f32>()
        .try_to_vec()
        .unwrap();
    assert_eq!(values, [1.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

/// A series of readings of any length: `#[pad(..)]` on a `Vec<f32>`; and one without it.
#[derive(Clone, Debug, Batch)]
struct Readings {
    #[pad(-1.5)]
    values: Vec<f32>,
    fixed: Vec<f32>,
}

#[test]
fn float_series_pad_with_a_mask_and_unpadded_ones_of_varying_length_name_the_fix() {
    use burn::data::dataloader::batcher::Batcher;
    let readings = |values: &[f32], fixed: &[f32]| Readings {
        values: values.to_vec(),
        fixed: fixed.to_vec(),
    };
    let batch = ReadingsBatcher.batch(
        vec![
            readings(&[1.0], &[5.0, 6.0]),
            readings(&[2.0, 3.0, 4.0], &[7.0, 8.0]),
        ],
        &device().inner(),
    );
    assert_eq!(
        batch.values.into_data().iter::<f32>().collect::<Vec<_>>(),
        [1.0, -1.5, -1.5, 2.0, 3.0, 4.0],
        "padded with #[pad(-1.5)]"
    );
    assert_eq!(
        batch
            .values_mask
            .into_data()
            .iter::<bool>()
            .collect::<Vec<_>>(),
        [true, false, false, true, true, true]
    );
    assert_eq!(
        batch
            .values_lengths
            .into_data()
            .iter::<i64>()
            .collect::<Vec<_>>(),
        [1, 3]
    );
    assert_eq!(batch.fixed.dims(), [2, 2]);

    let varying = std::panic::catch_unwind(|| {
        ReadingsBatcher.batch(
            vec![
                readings(&[1.0], &[5.0, 6.0]),
                readings(&[1.0], &[5.0, 6.0]),
                readings(&[1.0], &[7.0]),
            ],
            &device().inner(),
        )
    })
    .expect_err("a batch of varying lengths without #[pad] is refused");
    let message = varying.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with(
            "`fixed` has length 2 in a batch's first sample and 1 in its sample 2: a `Vec<f32>` field of `#[derive(Batch)]` has one length; to batch samples of varying length, add `#[pad(0.0)]` to the field"
        ),
        "{message}"
    );
}

#[derive(Clone, Debug, Batch)]
struct Tokens {
    ids: Vec<u32>,
}

#[test]
fn a_token_id_too_large_for_the_device_names_the_field_and_the_value() {
    use burn::data::dataloader::batcher::Batcher;
    let batch = TokensBatcher.batch(
        vec![Tokens {
            ids: vec![1, 70_000],
        }],
        &device(),
    );
    let ids = batch.ids.into_data().convert::<i64>();
    assert_eq!(ids.try_to_vec::<i64>().unwrap(), [1, 70_000]);
    // 3e9 fits the integer tensors of a 64-bit device (ndarray) and no 32-bit one (flex, wgpu).
    let big = 3_000_000_000_i64;
    let caught = std::panic::catch_unwind(|| {
        TokensBatcher.batch(
            vec![Tokens {
                ids: vec![1, big as u32],
            }],
            &device(),
        )
    });
    match device().settings().int_dtype {
        burn::tensor::IntDType::I64 | burn::tensor::IntDType::U64 => {
            let ids = caught.unwrap().ids.into_data().convert::<i64>();
            assert_eq!(ids.try_to_vec::<i64>().unwrap(), [1, big]);
        }
        dtype => {
            let message = caught.expect_err(&format!("{dtype:?} holds {big}"));
            let message = message.downcast_ref::<String>().unwrap();
            assert!(
                message.contains("`#[derive(Batch)]` field `ids` holds 3000000000"),
                "{message}"
            );
        }
    }
}
