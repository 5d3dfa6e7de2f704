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
//! `ThreeClass::cli()` is a complete `main`: `--epochs`, `--lr`, `--batch-size`, `--seed`,
//! `--workers`, `--artifacts DIR`, `--resume latest|N`, `--run ID`, `--resume-changed`,
//! `--config run.json`, `--set key=value`, `--print-config`, `--fast-dev-run`,
//! `--limit-train-batches N`, `--limit-valid-batches N`, `--quiet`, and on a saved run
//! `--test-only`, `--predict`, `--export FILE` (see [`cli::Args`]).
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
//! | key | required | form | default |
//! |-----|----------|------|---------|
//! | `name` | yes | a type name, optionally with a visibility (`pub Resumable`); the run directory is its snake_case | private items |
//! | `model` | yes | `Type = expression`; `device` in the expression is the run's device (autodiff), `config` the run's config | |
//! | `step` | yes | `\|model, batch: Batch\| -> Output { .. }`; `Output` is a Burn output (`ClassificationOutput`, `RegressionOutput`, ...) | |
//! | `loader` | yes | `{ train, valid, test, batcher, batch_size, shuffle, workers }`: Burn datasets of the batcher's items, a Burn batcher whose output is the step's batch; `shuffle` is a seed (`shuffle: 7`); `test` is measured once after training, on the checkpoint of the first `best(..)` (else the last model), not with `engine`/`strategy`/`devices`; `augment: \|item, rng\| -> item` transforms training items only, `rng` (a [`rand`] `StdRng`) seeded from the `shuffle` seed (0 without one), the epoch and the item's position in it | `test`, `augment`: none; `shuffle`: dataset order; `workers`: 0 |
//! | `optimizer` | yes | `sgd(lr, momentum, weight_decay)`, `adam(lr, beta_1, beta_2, epsilon, weight_decay)`, `adamw(..)` (also `beta1`/`beta2`), `rmsprop(lr, alpha, momentum, epsilon, weight_decay)`, `adagrad(lr, lr_decay, epsilon, weight_decay)`, `lion(lr, beta_1, beta_2, weight_decay)`, `lamb(lr, beta_1, beta_2, epsilon, weight_decay)`, or an expression giving a `ModuleOptimizer` (then `lr` is required); momentum, alpha and betas in [0, 1), epsilon > 0, weight decay and lr decay ≥ 0 | Burn's defaults for unnamed arguments |
//! | `lr` | with an optimizer expression | number | |
//! | `lr_schedule` | no | `constant`, `cosine(min)`, `linear(final)`, `exponential(gamma)`, `step(every, gamma)`, `warm_up(steps, then = <schedule>)`, spanning the whole run; or `plateau(split.metric, factor = 0.1, patience = 10)`: the rate times `factor` whenever the recorded metric has not improved for more than `patience` epochs | `constant` |
//! | `epochs` | yes | whole number ≥ 1 | |
//! | `metrics` | no | `[split.metric, ..]`, split `train`/`valid`/`test` (with `loader: { test: .. }`), metric `loss`, `accuracy`, `top_k(k)`, `precision`, `recall`, `f1`, `fbeta(beta)`, `auroc`, `auc_pr`, `perplexity`, `hamming`, `cer`, `wer`, `iteration_speed`, `lr`, or your own as `split.metric(name = expr)`, recorded as `name`: `metric::Mean::higher_is_better(f)` (a per-batch value and weight from `f(&output)`, averaged over the epoch), `metric::Epoch::higher_is_better(state)` (a [`metric::EpochMetric`], one value per epoch), or any numeric Burn metric | `[train.loss, valid.loss]` |
//! | `callbacks` | no | `[expr, ..]`: values implementing [`Callback`] (hooks at run, epoch and step, may stop the run, may save state in checkpoints); not with `engine`/`strategy`/`devices` | none |
//! | `checkpoint` | no | `keep_last(n) \| best(split.metric) \| every(k)` (joined with `\|`) or `none`: files in `<run dir>/checkpoint` after every epoch | `none` |
//! | `strategy` | no | `single`, `multi` or `ddp` (Burn's execution strategies; see the README's "Scaling out") | `single` |
//! | `devices` | no | whole number ≥ 1; more than one runs on Burn's engine | 1 |
//! | `engine` | no | `ours` or `burn` (Burn's `SupervisedTraining`, also on one device) | `ours` |
//! | `resume` | no | `latest` or `epoch(n)` of the newest run (or the config's `run`); needs `checkpoint` | a fresh run in a new `run-<N>` directory; earlier runs are kept |
//! | `early_stopping` | no | `patience(n, split.metric)` or `patience(n, split.metric, min_delta = x)` | none |
//! | `grad_accumulation` | no | whole number ≥ 1 (Burn's `GradientsAccumulator`) | none |
//! | `grad_clip` | no | `norm(max)`: one global L2 norm over all parameters; `value(max)`: Burn's per-element clamp | none |
//! | `seed` | no | seeds the device RNG before the model is built | none |
//! | `artifacts` | no | string: root folder of run directories | `"artifacts"` |
//! | `init_from` | no | string: a `.safetensors` file (e.g. from `--export`) or a run's `checkpoint/model-N.bpk` whose weights a fresh run starts from; every parameter must be there with its shape. Unlike `resume`, nothing else carries over (optimizer, schedule, epochs, history) | none |
//! | `freeze` | no | `[fc1, encoder.layer, "layers.0"]`: module paths of the model whose parameters are not trained (Burn's `freeze_group`); a path naming no parameter is a start-up error listing them | none |
//! | `unfreeze` | no | the epoch (≥ 1) from which the `freeze` paths train again | frozen for the run |
//! | `groups` | no | `{ fc1: lr(1e-4), .. }`: module paths at their own base rate, following the run's schedule scaled (Burn's per-group `ModuleLrScheduler`); `lr(0.0)` holds a group still | none |
//! | `lora` | no | `{ rank: 4, alpha: 8, on: [fc1, fc2] }`: Burn's LoRA adapters on the 2-D weights under `on`; every base parameter is frozen | none; alpha defaults to the rank |
//! | `ema` | no | decay in (0, 1): a moving average of the weights after each optimizer step, which validation, `best(..)`, `load_best`, export and the test split use; kept in every checkpoint | none |
//! | `gradient_checkpointing` | no | `true`: Burn's balanced gradient checkpointing (activations recomputed in the backward pass) | `false` |
//! | `device` | no | `"flex"`, `"cpu"`, `"ndarray"`, `"cuda"`, `"cuda:N"`, `"wgpu"`, `"wgpu:N"`: the device `cli()` trains on (`--device` overrides); each backend but `flex` needs its cargo feature of `dsl-runtime` (`cuda`, `wgpu`, `cpu`, `ndarray`), else start-up fails naming the feature | `"flex"` |
//! | `hparams` | no | `{ /// doc\n hidden: usize = 64, dropout: f64 = 0.1 }`: the experiment's own hyperparameters, typed fields of `<Name>Config` that every expression reads as `config.hidden` (as it reads `config.epochs`); set with `--set`/`--config`, swept, saved in `config.json`, checked on resume; a saved run's model is rebuilt with the values it recorded | none |
//! | `sweep` | no | `{ lr: [1e-3, 1e-2], batch_size: [16, 32], .. }`: a grid over `lr`, `batch_size`, `epochs`, `seed`, `shuffle`, `grad_accumulation`, `workers`, `ema`, `unfreeze`, `gradient_checkpointing`, `device` and the `hparams`, each value checked against the key's type; `cli()` then trains every combination as its own run and ranks them by the metric `best(..)` watches, else `valid.loss` (one must be recorded) | no sweep |
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

pub mod callback;
pub mod checkpoint;
pub mod cli;
pub mod contract;
pub mod data;
pub mod device;
pub mod engine;
mod error;
pub mod evaluate;
pub mod fit;
pub mod history;
mod interrupt;
pub mod metric;
mod options;
pub mod output;
pub mod predict;
pub mod provenance;
pub mod spec;
pub mod sweep;
pub mod verify;
mod via_value;
pub mod weights;

pub use callback::{Callback, Control};
/// The trait a step output implements (also the name of its derive): errors name it here.
pub use contract::StepOutput;
pub use dsl_macros::{Batch, StepOutput, training};
pub use error::FitError;
pub use fit::{Data, Fit, FitReport};
pub use history::{History, Series, Split};
pub use options::FitOptions;
/// The RNG crate of augmentation (`loader: { augment: |item, rng| .. }`).
pub use rand;

/// What an experiment file needs in scope.
pub mod prelude {
    pub use crate::callback::{Callback, Control, EpochEnd, RunEnd, RunStart, StepEnd};
    pub use crate::evaluate::Evaluation;
    pub use crate::fit::{Data, Fit, FitReport};
    pub use crate::history::{History, Split};
    pub use crate::metric;
    pub use crate::{Batch, StepOutput, training};
    pub use crate::{FitError, FitOptions};
}

/// What `training!` expansions name; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::callback::Callback;
    pub use crate::checkpoint::{Policy, Resume};
    pub use crate::cli;
    pub use crate::contract::{
        DatasetOf, FeedsMetric, FeedsOwnMetric, SharedBatcher, Sources, StepOutput,
        confusion_input, for_expressions, train_output,
    };
    pub use crate::data::{Augment, AugmentFn, AugmentRng, checked_ints};
    pub use crate::device;
    pub use crate::engine;
    pub use crate::evaluate::{
        Evaluation, best_checkpoint, evaluate, find_run, load_checkpoint, run_config,
    };
    pub use crate::fit::{Data, Fit, FitReport, TestPlan, TestSplit, test_line};
    pub use crate::history::Split;
    pub use crate::metric;
    pub use crate::predict::{predict, write_predictions};
    pub use crate::provenance::{
        ByCount, ByDebug, ByValues, Fingerprint, ItemHasher, Probe, Provenance,
    };
    pub use crate::spec::{
        EarlyStopping, GradClip, GroupLr, LoraSpec, OptimizerSpec, Schedule, optimizer_steps,
    };
    pub use crate::sweep;
    pub use crate::verify;
    pub use crate::weights;
    pub use crate::weights::export_safetensors;
    pub use crate::{FitError, FitOptions};
    pub use burn;
    pub use serde;
    pub use serde_json;
}
