//! Runtime of the declarative training DSL for Burn, and home of the `training!` macro.
//!
//! # One experiment, one macro
//!
//! ```text
//! training! {
//!     /// Doc comments become the docs of the experiment's type.
//!     name: ThreeClass,
//!     model: Mlp = Mlp::new(3, device),
//!     step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
//!     loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
//!     optimizer: sgd(lr = 0.1),
//!     epochs: 3,
//!     metrics: [train.loss, valid.loss, valid.accuracy],
//! }
//! ```
//!
//! expands to `ThreeClass` with `ThreeClass::fit(&device)`, `ThreeClass::config()`,
//! `ThreeClass::with_config(config, &device)`, `ThreeClass::load(epoch, &device)`,
//! `ThreeClass::load_best(&device)`, `ThreeClass::evaluate(&model, dataset, batcher)`,
//! `ThreeClass::predict(&model, dataset, batcher)` (the inference step's output per batch),
//! `ThreeClass::predict_saved(&config, &device)` (`predictions.csv`),
//! `ThreeClass::export_saved(&config, path, &device)` (safetensors) and, with a test split,
//! `ThreeClass::test_saved(&config, &device)`; `ThreeClassConfig`, a serde struct of every scalar
//! hyperparameter whose defaults are the values above (saved as `config.json` with each run); and
//! `ThreeClassModel`, a Burn `Module` wrapping the model with `TrainStep` and `InferenceStep` built
//! from `step`, so two experiments may train the same model type. Runnable examples:
//! `examples/classification`, `examples/regression`. Invoke `training!` at module level.
//!
//! `ThreeClass::cli()` is a complete `main`: every flag is a field of [`cli::Args`], listed by
//! `--help` and in the book's flags reference (`docs/src/reference/flags.md`, checked against
//! `--help` by a test).
//!
//! Each fresh run writes `<artifacts>/<name>/run-<N>/`, a new directory numbered after the
//! newest, so no run ever deletes or overwrites another; `resume` continues the newest run (or
//! the config's `run`) and refuses settings that differ from the checkpoint's unless
//! `resume_changed` is set.
//!
//! Two derives remove the remaining boilerplate: `#[derive(Batch)]` on a sample struct writes
//! `<Sample>Batch` and `<Sample>Batcher` (fields of `f32`/`f64`, integer class indices, fixed
//! arrays of them nested up to three levels — `[[f32; W]; H]` becomes a `Tensor<3>`
//! `[n, H, W]` —, `Vec<f32>`, and variable-length integer token lists, padded to the longest
//! with `#[pad(v)]` and given a `<field>_mask` and `<field>_lengths`); `#[derive(StepOutput)]`
//! on an output struct with `#[loss]`,
//! `#[logits]`, `#[targets]` fields writes Burn's `ItemLazy`, the loss and (for class-index
//! targets) classification metric adaptors, so `training!` checks its metrics like Burn's outputs.
//!
//! ## Keys
//!
#![doc = include_str!("keys.md")]
//!
//! Every mistake is a compile error at the offending token: unknown or duplicate keys (with "did
//! you mean"), missing keys, malformed values, zero epochs or batch size, non-positive learning
//! rates, unknown splits, metrics, optimizers or schedules, `best(..)`/`patience(..)` on a metric
//! that is not recorded or on the test split, a metric the step output cannot feed (built-in or
//! the user's own), a callback that is not a [`Callback`], a batcher that does not produce the
//! step's batch, a step output without a loss. All of them are reported in one build.
//!
//! # The fit loop
//!
//! [`Fit`] is a single-device training loop that performs, per batch, exactly the calls of a
//! hand-written Burn loop (and of Burn's `SupervisedTraining`): its per-step losses are
//! bit-identical to both. Around that loop it adds what Burn's Learner lacks or does
//! differently: batches prefetched by worker threads in a fixed order, shuffling that is a pure
//! function of `(seed, epoch)`, a sample-weighted epoch loss, one console line per epoch with
//! every metric, a summary table, and a run directory with `config.json` and `metrics.csv`.
//! Nothing global is installed: no panic hook, no logger.
#![warn(missing_docs)]

// The layers, each depending only on those listed before it (checked by
// `tests/runtime/module_graph.rs`): the config, data and metrics, the model, checkpoints and
// inference, the fit loop, the run's outputs, the application.
// First, so that its macros (`say!`, `show!`) are in scope in every module below.
#[macro_use]
mod terminal;
pub mod app;
pub mod checkpoint;
pub mod config;
pub mod data;
mod digest;
mod erased;
mod error;
pub mod fit;
pub mod history;
pub mod inference;
mod interrupt;
pub mod metric;
pub mod model;
pub mod output;
pub mod parallel;
pub mod provenance;
mod read;
mod via_value;

// The public surface for users, besides the modules: the types an experiment file names.
// Inside the crate every path is the real one (`crate::fit::Fit`, never `crate::Fit`), so the
// module graph does not route through this file (`tests/runtime/module_graph.rs`).
pub use burn_experiment_macros::{Batch, StepOutput, training};
pub use config::options::FitOptions;
pub use config::precision::Precision;
pub use error::{FitError, SettingError};
pub use fit::callback::{Callback, Control, EpochEnd, RunEnd, RunStart, StepEnd};
pub use fit::{Data, Fit, FitReport};
pub use history::{History, Series, Split};
pub use inference::evaluate::Evaluation;
/// The trait a step output implements (also the name of its derive): errors name it here.
pub use model::contract::{CastFloats, StepOutput};
/// The config type of the experiment `E`: `ConfigOf<ThreeClass>` is `ThreeClassConfig`. Its
/// name where the user's own item is named `<Name>Config` (Burn's `TrainingConfig` beside
/// `name: Training`), which then keeps that name.
pub type ConfigOf<E> = <E as app::cli::Experiment>::Config;
/// The model wrapper of the experiment `E` (`<Name>Model`), as [`ConfigOf`] names the config.
pub type ModelOf<E> = <E as app::cli::Experiment>::Model;
/// The RNG crate of augmentation (`loader: { augment: |item, rng| .. }`).
pub use rand;

/// What an experiment file needs in scope.
pub mod prelude {
    pub use crate::fit::callback::{Callback, Control, EpochEnd, RunEnd, RunStart, StepEnd};
    pub use crate::fit::{Data, Fit, FitReport};
    pub use crate::history::{History, Split};
    pub use crate::inference::evaluate::Evaluation;
    pub use crate::metric;
    pub use crate::model::contract::{CastFloats, StepOutput};
    pub use crate::{ConfigOf, ModelOf};
    pub use crate::{config::options::FitOptions, error::FitError};
    pub use burn_experiment_macros::{Batch, StepOutput, training};
}

/// What `training!` expansions name; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::app::cli;
    pub use crate::app::search;
    pub use crate::app::sweep;
    pub use crate::app::verify;
    pub use crate::checkpoint::{Policy, Resume};
    pub use crate::config::device;
    pub use crate::config::precision::Precision;
    pub use crate::config::spec::{
        BurnScheduler, EarlyStopping, GradClip, GroupLr, LoraSpec, NamedOptimizer, OptimizerSpec,
        Schedule, optimizer_steps,
    };
    pub use crate::data::{Augment, AugmentFn, AugmentRng, checked_ints};
    pub use crate::fit::callback::Callback;
    pub use crate::fit::engine;
    pub use crate::fit::model_hooks::{EpochAt, HookOutcome, epoch_hook, model_hook};
    pub use crate::fit::steps;
    pub use crate::fit::{Data, Fit, FitReport, TestPlan, TestSplit, test_line};
    pub use crate::history::Split;
    pub use crate::inference::evaluate::{
        Evaluation, best_checkpoint, evaluate, find_run, load_checkpoint, run_config,
    };
    pub use crate::inference::predict::{predict, write_predictions};
    pub use crate::metric;
    pub use crate::model::contract::{
        CastFloats, CastProbe, Casts, Measurable, MeasurableBy, NoCasts, SharedBatcher, Sources,
        StepOutput, Yields, confusion_input, for_expressions, never_fed, train_output,
    };
    pub use crate::model::placement;
    pub use crate::model::precision::backward;
    pub use crate::model::tuning;
    pub use crate::model::weights;
    pub use crate::model::weights::export_safetensors;
    pub use crate::parallel::{ItemCodec, Portable, PortablePart, Sharding};
    pub use crate::provenance::{
        ByCount, ByDebug, ByValues, Fingerprint, ItemHasher, Probe, Provenance,
    };
    pub use crate::{config::options::FitOptions, error::FitError};
    pub use burn;
    pub use serde;
    pub use serde_json;
}
