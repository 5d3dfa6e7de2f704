//! The three ways to train the same task: a hand-written Burn loop, our `training!`
//! experiment, and Burn's `SupervisedTraining`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::Dataset;
use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::Device;
use burn::train::ExecutionStrategy;
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::renderer::CliMetricsRenderer;
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep,
};

/// What a variant hands back: every step's loss when asked for, and the step count.
pub struct Trained {
    pub losses: Vec<f32>,
    pub steps: usize,
}

/// One task's shape, shared by the three variants.
pub struct Shape {
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f64,
    pub adam: bool,
}

impl Shape {
    fn optimizer(&self) -> ModuleOptimizer {
        if self.adam {
            AdamConfig::new().init()
        } else {
            SgdConfig::new().init()
        }
    }
}

/// A loop as the Burn book writes one: read each loss (as a loop that prints it would),
/// backward, step; validation loss and accuracy on `model.valid()` after each epoch.
pub fn hand<M, I, B, O>(
    shape: &Shape,
    device: &Device,
    mut model: M,
    forward: impl Fn(&M, B) -> ClassificationOutput,
    train: impl Dataset<I> + 'static,
    valid: impl Dataset<I> + 'static,
    batcher: O,
) -> Trained
where
    M: Module,
    I: Clone + Send + Sync + std::fmt::Debug + 'static,
    B: Send + Clone + std::fmt::Debug + 'static,
    O: Batcher<I, B> + Clone + 'static,
{
    let device = device.clone().autodiff();
    let train = DataLoaderBuilder::new(batcher.clone())
        .batch_size(shape.batch_size)
        .set_device(device.clone())
        .build(train);
    let valid = DataLoaderBuilder::new(batcher)
        .batch_size(shape.batch_size)
        .set_device(device.inner())
        .build(valid);
    let mut optim = shape.optimizer();
    let mut losses = Vec::new();
    for _ in 0..shape.epochs {
        for batch in train.iter() {
            let out = forward(&model, batch.expect("in-memory data"));
            losses.push(out.loss.clone().into_scalar::<f32>());
            let grads = GradientsParams::from_grads(out.loss.backward(), &model);
            model = optim.step(shape.lr, model, grads);
        }
        let eval = model.valid();
        let (mut loss, mut correct) = (0.0f64, 0i64);
        for batch in valid.iter() {
            let out = forward(&eval, batch.expect("in-memory data"));
            loss += f64::from(out.loss.into_scalar::<f32>());
            correct += out
                .output
                .argmax(1)
                .squeeze::<1>()
                .equal(out.targets)
                .int()
                .sum()
                .into_scalar::<i64>();
        }
        std::hint::black_box((loss, correct));
    }
    Trained {
        steps: losses.len(),
        losses,
    }
}

/// Losses the Learner's training step reports when recording is on (off while timing).
pub static RECORD: AtomicBool = AtomicBool::new(false);
pub static LEARNER_LOSSES: Mutex<Vec<f32>> = Mutex::new(Vec::new());

/// A model wrapped for `SupervisedTraining`, the way a Burn user writes it by hand.
#[derive(Module, Debug)]
pub struct ForLearner<M: Module> {
    pub model: M,
}

/// How a wrapped model computes its output.
pub trait Classify: Module + burn::module::ModuleDisplay + 'static {
    type Batch: Send + Clone + std::fmt::Debug + 'static;
    fn classify(&self, batch: Self::Batch) -> ClassificationOutput;
}

impl<M: Classify> TrainStep for ForLearner<M> {
    type Input = M::Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: M::Batch) -> TrainOutput<ClassificationOutput> {
        let out = self.model.classify(batch);
        if RECORD.load(Ordering::Relaxed)
            && let Ok(mut losses) = LEARNER_LOSSES.lock()
        {
            losses.push(out.loss.clone().into_scalar::<f32>());
        }
        TrainOutput::new(self, out.loss.backward(), out)
    }
}

impl<M: Classify> InferenceStep for ForLearner<M> {
    type Input = M::Batch;
    type Output = ClassificationOutput;

    fn step(&self, batch: M::Batch) -> ClassificationOutput {
        self.model.classify(batch)
    }
}

/// Burn's `SupervisedTraining` with `CliMetricsRenderer` and the default checkpointers.
pub fn learner<M, I, O>(
    shape: &Shape,
    device: &Device,
    model: M,
    train: impl Dataset<I> + 'static,
    valid: impl Dataset<I> + 'static,
    batcher: O,
    dir: &Path,
) -> Trained
where
    M: Classify,
    I: Clone + Send + Sync + std::fmt::Debug + 'static,
    O: Batcher<I, M::Batch> + Clone + 'static,
{
    let train: Arc<dyn DataLoader<M::Batch>> = DataLoaderBuilder::new(batcher.clone())
        .batch_size(shape.batch_size)
        .build(train);
    let steps = train.num_items().div_ceil(shape.batch_size) * shape.epochs;
    let valid = DataLoaderBuilder::new(batcher)
        .batch_size(shape.batch_size)
        .build(valid);
    let training = SupervisedTraining::new(dir, train, valid)
        .metric_train_numeric(LossMetric::new())
        .metric_valid_numeric(LossMetric::new())
        .metric_valid_numeric(AccuracyMetric::new())
        .with_default_checkpointers()
        .num_epochs(shape.epochs)
        .with_training_strategy(ExecutionStrategy::single(device.clone().autodiff()).into())
        .renderer(Box::new(CliMetricsRenderer::new()))
        .summary();
    let result = training.launch(Learner::new(
        ForLearner { model },
        shape.optimizer(),
        shape.lr,
    ));
    std::hint::black_box(result.model);
    let losses = std::mem::take(&mut *LEARNER_LOSSES.lock().expect("not poisoned"));
    Trained { losses, steps }
}
