//! Mixed precision (`FitOptions::precision`): bf16 and f16 runs against a hand-written Burn
//! loop doing the same casts, bit for bit; how far they are from f32 training; the f16 loss
//! scale across a resume; and the runs refused.

use std::path::Path;

use crate::common::*;
use burn::data::dataloader::DataLoaderBuilder;
use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{DType, FloatDType, Tensor};
use burn::train::metric::{Adaptor, ClassReduction, Metric, MetricMetadata, Numeric};
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use burn_experiment::checkpoint::Resume;
use burn_experiment::config::precision::Precision;
use burn_experiment::fit::precision::backward;
use burn_experiment::prelude::*;

/// [`Classifier`] back-propagating through `precision::backward`, which applies an f16
/// run's loss scale: what a `TrainStep` of one's own does to train in f16.
#[derive(Module, Debug)]
pub struct Scaled {
    pub mlp: Mlp,
}

impl TrainStep for Scaled {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> TrainOutput<ClassificationOutput> {
        let out = self.mlp.forward_classification(batch);
        TrainOutput::new(self, backward(out.loss.clone()), out)
    }
}

impl InferenceStep for Scaled {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> ClassificationOutput {
        self.mlp.forward_classification(batch)
    }
}

/// A model whose step builds a tensor of its own: f32, the device's default type, whatever
/// the run computes in.
#[derive(Module, Debug)]
pub struct OwnZeros {
    pub mlp: Mlp,
}

impl TrainStep for OwnZeros {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> TrainOutput<ClassificationOutput> {
        let out = self.mlp.forward_classification(batch);
        let zeros = Tensor::<1>::zeros([1], &out.loss.device());
        let out = ClassificationOutput {
            loss: out.loss + zeros,
            ..out
        };
        TrainOutput::new(self, backward(out.loss.clone()), out)
    }
}

impl InferenceStep for OwnZeros {
    type Input = Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: Batch) -> ClassificationOutput {
        self.mlp.forward_classification(batch)
    }
}

/// Burn panics when an operation meets a bf16 tensor and an f32 one; a model that builds one
/// itself ends the run with an error naming where such tensors come from and the fix.
#[test]
fn a_model_mixing_float_types_is_stopped_with_the_fix_not_burns_panic() {
    if !computes_in(Precision::Bf16) || !cfg!(debug_assertions) {
        // Burn checks the types of an operation's operands in debug builds only.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let error = fit_of(OwnZeros { mlp: mlp(3) }, dir.path(), Precision::Bf16, 1)
        .run(&device(), data())
        .err()
        .expect("stopped");
    let text = error.to_string();
    assert!(
        text.contains("`precision`")
            && text.contains("is bf16, and the model met a bf16 tensor with an f32 one")
            && text.contains("dtype mismatch")
            && text.contains("`mask.float().cast(x.dtype())`"),
        "{text}"
    );
    // The same model trains in f32.
    let dir = tempfile::tempdir().unwrap();
    fit_of(OwnZeros { mlp: mlp(3) }, dir.path(), Precision::F32, 1)
        .run(&device(), data())
        .unwrap();
}

fn fit(dir: &Path, precision: Precision, epochs: usize) -> Fit<Scaled> {
    fit_of(Scaled { mlp: mlp(3) }, dir, precision, epochs)
}

fn fit_of<M>(model: M, dir: &Path, precision: Precision, epochs: usize) -> Fit<M>
where
    M: burn::train::LearnerModel
        + TrainStep<Input = Batch, Output = ClassificationOutput>
        + InferenceStep<Input = Batch, Output = ClassificationOutput>,
{
    Fit::new(model, AdamConfig::new().init(), 1e-2)
        .with_options(|o| {
            o.name = "precision".into();
            o.artifacts = dir.to_owned();
            o.epochs = epochs;
            o.batch_size = 8;
            o.shuffle = Some(3);
            o.quiet = true;
            o.precision = precision;
            o.checkpoint = Some(Vec::new());
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .batch_casts(Some(Batch::cast_floats), Some(Batch::cast_floats))
}

fn data() -> Data<Sample, SampleBatcher> {
    Data::new(samples(0..96), samples(96..120), SampleBatcher)
}

/// The f32 weights cast to `dtype`: for training each a leaf of its own (`leaves`), as a hand
/// loop keeping f32 master weights writes it.
struct ToLow {
    dtype: FloatDType,
    leaves: bool,
}

impl ModuleMapper for ToLow {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (dtype, leaves) = (self.dtype, self.leaves);
        param.map(|t| match leaves {
            true => t.cast(dtype).detach().require_grad(),
            false => t.cast(dtype),
        })
    }
}

/// The low-precision gradients as f32, divided by the loss scale.
struct Master<'a> {
    grads: &'a mut GradientsParams,
    unscale: f32,
    non_finite: i64,
}

impl ModuleVisitor for Master<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            let grad = grad.cast(FloatDType::F32).mul_scalar(self.unscale);
            self.non_finite += grad
                .clone()
                .is_finite()
                .bool_not()
                .int()
                .sum()
                .into_scalar::<i64>();
            self.grads.register(param.id, grad);
        }
    }
}

/// What the hand loop measured.
struct HandLow {
    losses: Vec<f32>,
    valid_loss: Vec<f64>,
    /// Burn's F1 of each epoch's validation outputs, cast to f32 first.
    valid_f1: Vec<f64>,
    weights: Vec<u32>,
    skipped: usize,
}

/// The loop a Burn user writes for mixed precision: f32 weights cast to `dtype` for each step,
/// the batch cast, the gradients cast back for Adam; with `scale` (f16), the loss scaled
/// before the backward pass and the gradients unscaled, a step with overflowed gradients
/// skipped (the scale halved). Validation on the weights cast to `dtype`.
fn hand_low(dtype: FloatDType, mut scale: Option<f32>, epochs: usize) -> HandLow {
    let device = device();
    let mut model = mlp(3);
    let mut optim: ModuleOptimizer = AdamConfig::new().init();
    let mut lr: ModuleLrScheduler = 1e-2.into();
    let mut out = HandLow {
        losses: Vec::new(),
        valid_loss: Vec::new(),
        valid_f1: Vec::new(),
        weights: Vec::new(),
        skipped: 0,
    };
    let valid = DataLoaderBuilder::new(SampleBatcher)
        .batch_size(8)
        .set_device(device.clone().inner())
        .build(samples(96..120));
    for epoch in 1..=epochs {
        let train = DataLoaderBuilder::new(SampleBatcher)
            .batch_size(8)
            .set_device(device.clone())
            .build(burn::data::dataset::transform::ShuffledDataset::new(
                samples(0..96),
                burn_experiment::data::epoch_seed(3, epoch),
            ));
        for batch in train.iter() {
            let batch = batch.expect("in memory").cast_floats(dtype);
            let low = model.clone().map(&mut ToLow {
                dtype,
                leaves: true,
            });
            let step = low.forward_classification(batch);
            out.losses
                .push(step.loss.clone().cast(FloatDType::F32).into_scalar::<f32>());
            let grads = match scale {
                Some(s) => step.loss.cast(FloatDType::F32).mul_scalar(s).backward(),
                None => step.loss.backward(),
            };
            let mut grads = GradientsParams::from_grads(grads, &low);
            let mut master = Master {
                grads: &mut grads,
                unscale: scale.map_or(1.0, |s| 1.0 / s),
                non_finite: 0,
            };
            model.visit(&mut master);
            if let Some(s) = &mut scale
                && master.non_finite > 0
            {
                *s *= 0.5;
                out.skipped += 1;
                continue;
            }
            model = optim.step(lr.step(), model, grads);
        }
        let eval = model.valid().map(&mut ToLow {
            dtype,
            leaves: false,
        });
        let (mut weighted, mut n) = (0.0f64, 0usize);
        let mut f1 =
            burn::train::metric::FBetaScoreMetric::multiclass(1.0, 1, ClassReduction::Macro);
        for batch in valid.iter() {
            let batch = batch.expect("in memory").cast_floats(dtype);
            let len = batch.x.dims()[0];
            let output = eval.forward_classification(batch);
            let loss = output.loss.clone();
            weighted += f64::from(loss.cast(FloatDType::F32).into_scalar::<f32>()) * len as f64;
            n += len;
            let output = ClassificationOutput {
                output: output.output.cast(FloatDType::F32),
                ..output
            };
            f1.update(&output.adapt(), &metadata()).unwrap();
        }
        out.valid_loss.push(weighted / n as f64);
        f1.compute().unwrap();
        out.valid_f1.push(f1.final_value().current());
    }
    out.weights = model.weights();
    out
}

/// Metadata for a metric fed by hand (Burn's F1 reads none of it).
fn metadata() -> MetricMetadata {
    MetricMetadata {
        progress: burn::data::dataloader::Progress::new(0, 0, None),
        iteration: None,
        lr: None,
    }
}

/// A 16-bit run's outputs reach the metrics in f32: Burn's F1, which panics on bf16 logits
/// (its confusion statistics build an f32 mask), measures the run's validation and training
/// outputs, and the validation F1 equals the hand loop's, fed the same outputs cast to f32.
#[test]
fn metrics_that_burn_computes_in_f32_get_f32_outputs() {
    if !computes_in(Precision::Bf16) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cast_output: fn(ClassificationOutput, FloatDType) -> ClassificationOutput =
        ClassificationOutput::cast_floats;
    let report = fit(dir.path(), Precision::Bf16, 2)
        .train_metric(metric::f1())
        .valid_metric(metric::f1())
        .valid_metric(metric::precision())
        .output_casts(Some(cast_output), Some(cast_output))
        .run(&device(), data())
        .unwrap();
    let hand = hand_low(FloatDType::BF16, None, 2);
    let f1 = report.history.get(Split::Valid, "f1").unwrap().values();
    assert_eq!(f1, hand.valid_f1);
    assert!(f1.iter().all(|v| (0.0..=100.0).contains(v)), "{f1:?}");
    let train_f1 = report.history.get(Split::Train, "f1").unwrap().values();
    assert_eq!(train_f1.len(), 2);
}

fn valid_losses<M>(report: &FitReport<M>) -> Vec<f64> {
    report.history.get(Split::Valid, "loss").unwrap().values()
}

/// Whether the test device computes in `precision`; where it does not (Burn says so of bf16 on
/// many Vulkan drivers), that the run is refused before training, naming the device and the
/// other types. `.ci/run` runs these tests on wgpu (lavapipe) and ndarray too.
fn computes_in(precision: Precision) -> bool {
    let dtype = precision.low().expect("a 16-bit precision");
    if run_device().supports_dtype(dtype) {
        return true;
    }
    let dir = tempfile::tempdir().unwrap();
    let error = fit(dir.path(), precision, 1)
        .run(&device(), data())
        .err()
        .expect("refused");
    let text = error.to_string();
    // The fix names the types the device does compute in: f32 alone on ndarray, f16 or f32
    // on lavapipe.
    let others: Vec<&str> = [(Precision::Bf16, "bf16"), (Precision::F16, "f16")]
        .into_iter()
        .filter(|(p, _)| *p != precision && run_device().supports_dtype(p.low().unwrap()))
        .map(|(_, name)| name)
        .collect();
    let fix = match others.as_slice() {
        [] => "use f32".to_owned(),
        names => format!("use {} or f32", names.join(", ")),
    };
    assert!(
        text.contains("cannot compute in") && text.ends_with(&fix),
        "{text}"
    );
    // Named by its backend, as a user spells it, not by Burn's types.
    assert!(!text.contains("Device<"), "{text}");
    println!("{precision:?} refused on {:?}: {text}", run_device());
    false
}

#[test]
fn bf16_equals_a_hand_loop_doing_the_same_casts_and_keeps_f32_weights() {
    if !computes_in(Precision::Bf16) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = fit(dir.path(), Precision::Bf16, 2)
        .run(&device(), data())
        .unwrap();
    let hand = hand_low(FloatDType::BF16, None, 2);
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(valid_losses(&report), hand.valid_loss);
    // The weights stay f32 (reading them as f32 fails otherwise) and equal the hand loop's.
    assert_eq!(report.model.mlp.fc1.weight.val().dtype(), DType::F32);
    assert_eq!(report.model.mlp.weights(), hand.weights);
    // A bf16 loss has 8 bits of mantissa: the values are bf16 numbers, not f32 ones.
    assert!(
        hand.losses
            .iter()
            .all(|l| l.to_bits() & 0xffff == 0 && l.is_finite())
    );
}

#[test]
fn f16_with_loss_scaling_equals_the_hand_loop_and_resumes_its_scale() {
    if !computes_in(Precision::F16) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let straight = fit(dir.path(), Precision::F16, 3)
        .run(&device(), data())
        .unwrap();
    let hand = hand_low(FloatDType::F16, Some(32768.0), 3);
    assert_bit_identical(&straight.history.train_losses(), &hand.losses);
    assert_eq!(valid_losses(&straight), hand.valid_loss);
    assert_eq!(straight.model.mlp.weights(), hand.weights);

    // Two epochs, then a resume for the third: the same steps, the scale continued.
    let dir = tempfile::tempdir().unwrap();
    let first = fit(dir.path(), Precision::F16, 2)
        .run(&device(), data())
        .unwrap();
    assert_eq!(
        loss_scale(&first.run_dir, 2),
        serde_json::json!({ "scale": 32768.0, "good_steps": 24, "skipped": 0 }),
        "24 good steps in two epochs of 12 batches"
    );
    let resumed = fit(dir.path(), Precision::F16, 3)
        .with_options(|o| o.resume = Some(Resume::Latest))
        .run(&device(), data())
        .unwrap();
    assert_bit_identical(&resumed.history.train_losses(), &hand.losses);
    assert_eq!(resumed.model.mlp.weights(), hand.weights);
    // The scale's count continued from the checkpoint's 24 (a fresh one would say 12).
    assert_eq!(loss_scale(&resumed.run_dir, 3)["good_steps"], 36);
    // `summary.md` says the scale and the steps skipped, as many as the hand loop skipped.
    let summary = std::fs::read_to_string(resumed.run_dir.join("summary.md")).unwrap();
    let scale = loss_scale(&resumed.run_dir, 3);
    assert_eq!(scale["skipped"], hand.skipped);
    let steps = if hand.skipped == 1 { "step" } else { "steps" };
    assert!(
        summary.contains(&format!(
            "f16 loss scale: {} at the end; {} optimizer {steps} skipped over the run",
            scale["scale"].as_f64().unwrap(),
            hand.skipped
        )),
        "{summary}"
    );
}

/// The loss scale `state-N.json` of `run_dir` saves.
fn loss_scale(run_dir: &Path, epoch: usize) -> serde_json::Value {
    let file = run_dir.join(format!("checkpoint/state-{epoch}.json"));
    let sealed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    sealed["state"]["loss_scale"].clone()
}

/// How far 16-bit training lands from f32 on the seed task (2 epochs of Adam), the figure the
/// precision page states: measured, the validation loss within 0.23 % (bf16) and 0.011 % (f16)
/// of f32's. The bound leaves room for rounding elsewhere; it hides no bug, since the
/// exactness tests above pin the arithmetic.
#[test]
fn sixteen_bit_runs_land_near_f32() {
    let run = |precision| {
        let dir = tempfile::tempdir().unwrap();
        fit(dir.path(), precision, 2)
            .run(&device(), data())
            .unwrap()
    };
    let f32_run = run(Precision::F32);
    let f32_valid = valid_losses(&f32_run);
    for precision in [Precision::Bf16, Precision::F16] {
        if !computes_in(precision) {
            continue;
        }
        let low = run(precision);
        let gap: Vec<f64> = valid_losses(&low)
            .iter()
            .zip(&f32_valid)
            .map(|(a, b)| (a - b).abs() / b)
            .collect();
        println!(
            "{precision:?}: valid loss {:?} vs f32 {f32_valid:?}, relative gap {gap:?}",
            valid_losses(&low)
        );
        assert!(gap.iter().all(|g| *g < 0.01), "{precision:?}: {gap:?}");
        assert_ne!(low.history.train_losses(), f32_run.history.train_losses());
    }
}

#[test]
fn a_batch_that_cannot_be_cast_is_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let error = fit(dir.path(), Precision::Bf16, 1)
        .batch_casts(None, None)
        .run(&device(), data())
        .err()
        .expect("refused");
    let text = error.to_string();
    assert!(
        text.contains("precision") && text.contains("seed::Batch") && text.contains("CastFloats"),
        "{text}"
    );
    assert!(
        !dir.path().join("precision").exists(),
        "nothing written before the refusal"
    );
}

#[test]
fn an_f16_step_that_back_propagates_without_the_scale_is_stopped_naming_the_fix() {
    if !computes_in(Precision::F16) || !computes_in(Precision::Bf16) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let error = fit_of(classifier(), dir.path(), Precision::F16, 1)
        .run(&device(), data())
        .err()
        .expect("refused");
    let text = error.to_string();
    assert!(text.contains("precision::backward(loss)"), "{text}");
    // bf16 needs no scale: the same model trains.
    fit_of(classifier(), dir.path(), Precision::Bf16, 1)
        .run(&device(), data())
        .unwrap();
}
