//! The parsed experiment. Every value keeps the user's tokens so errors can point at them.

use proc_macro2::Span;
use syn::{Attribute, Expr, Ident, LitStr, Pat, Type, Visibility};

/// One `training! { .. }` invocation, keys that were absent left `None`.
pub struct Experiment {
    pub docs: Vec<Attribute>,
    /// Visibility written before the name (`name: pub Resumable`); private by default.
    pub vis: Visibility,
    pub name: Option<Ident>,
    pub model: Option<Model>,
    pub step: Option<Step>,
    /// `steps: [critic: |..| .., generator(every = 5): |..| ..]`: several optimizers' steps.
    pub steps: Option<Vec<NamedStep>>,
    /// The brackets of `steps`, where an output of a step that is not a step output is
    /// reported (one error, whichever step returns it).
    pub steps_span: Span,
    /// `optimizers: { critic: adam(lr = ..) on [..], .. }`.
    pub optimizers: Option<Vec<NamedOptimizer>>,
    pub loader: Option<Loader>,
    pub optimizer: Option<Optimizer>,
    pub lr: Option<Number>,
    pub lr_schedule: Option<Schedule>,
    pub epochs: Option<Number>,
    pub metrics: Option<Vec<MetricRef>>,
    /// `callbacks: [expr, ..]`.
    pub callbacks: Option<Vec<Expr>>,
    /// `after_step: |model| ..` or `{ name: |model| .., .. }`.
    pub after_step: Option<AfterStep>,
    /// `at_epoch_end: |model, at| ..`.
    pub at_epoch_end: Option<Box<Expr>>,
    pub checkpoint: Option<Vec<Policy>>,
    pub early_stopping: Option<Patience>,
    pub grad_accumulation: Option<Number>,
    pub grad_clip: Option<Clip>,
    pub seed: Option<Number>,
    pub artifacts: Option<LitStr>,
    pub resume: Option<ResumeFrom>,
    /// `init_from: "weights.safetensors"`.
    pub init_from: Option<LitStr>,
    /// `freeze: [fc1, "layers.0"]`: module paths of the model, with their spans.
    pub freeze: Option<Vec<(String, Span)>>,
    /// `unfreeze: 3`: the epoch the frozen paths train again from.
    pub unfreeze: Option<Number>,
    /// `ema: 0.999`: the decay of a moving average of the weights.
    pub ema: Option<Number>,
    /// `ema: 0.999 on [generator]`: the module paths averaged (every parameter without).
    pub ema_on: Option<Vec<(String, Span)>>,
    /// `lora: { rank: 4, alpha: 8, on: [fc1, fc2] }`.
    pub lora: Option<LoraKey>,
    /// `gradient_checkpointing: true`.
    pub gradient_checkpointing: Option<syn::LitBool>,
    /// `precision: f32 | bf16 | f16`.
    pub precision: Option<Ident>,
    /// `groups: { fc1: lr(1e-4), .. }`: module paths with their own base learning rate.
    pub groups: Option<Vec<(String, Span, Number)>>,
    /// `engine: ours | burn`.
    pub engine: Option<Ident>,
    /// `strategy: single | multi | ddp`.
    pub strategy: Option<Ident>,
    /// `data_parallel: mpi`: one run over the processes of an MPI job.
    pub data_parallel: Option<Ident>,
    /// `devices: N`.
    pub devices: Option<Number>,
    /// `sweep: { lr: [1e-3, 1e-2], batch_size: [16, 32] }`.
    pub sweep: Option<Vec<SweepAxis>>,
    /// `search: { space: { lr: log_uniform(1e-4, 1e-1) }, trials: 30, .. }`.
    pub search: Option<SearchKey>,
    /// `device: "cuda:0"`: the device `cli()` trains on unless `--device` names another.
    pub device: Option<LitStr>,
    /// `hparams: { hidden: usize = 64, .. }`: the experiment's own config fields.
    pub hparams: Option<Vec<Hparam>>,
    /// Keys written by the user, including those whose value was rejected: a rejected value
    /// is not also reported as a missing key.
    pub given: Vec<String>,
    /// Keys whose value was rejected: their error is the one, and checks that need their value
    /// (`resume` needs `checkpoint`, `unfreeze` needs `freeze`) say nothing.
    pub rejected: Vec<String>,
    /// Span of the whole invocation, for "missing key" errors.
    pub span: Span,
}

impl Experiment {
    /// Whether `key` was written with a value that was rejected.
    pub fn malformed(&self, key: &str) -> bool {
        self.rejected.iter().any(|k| k == key)
    }

    /// The experiment's own hyperparameters, as declared.
    pub fn hparams(&self) -> &[Hparam] {
        self.hparams.as_deref().unwrap_or_default()
    }

    /// The hyperparameter `name`, if declared.
    pub fn hparam(&self, name: &str) -> Option<&Hparam> {
        self.hparams().iter().find(|h| h.name == name)
    }

    /// `precision`, where it names a 16-bit type (`bf16`, `f16`).
    pub fn low_precision(&self) -> Option<&Ident> {
        self.precision.as_ref().filter(|p| *p != "f32")
    }

    /// Whether the experiment can run on Burn's engine (one of its keys is present); only then
    /// is that path generated, since Burn's loaders ask more of the data types (`Debug`).
    pub fn has_burn_engine(&self) -> bool {
        self.engine.is_some() || self.strategy.is_some() || self.devices.is_some()
    }

    /// Burn's scheduler as `lr_schedule`: it sets the rate, so the experiment has no `lr`.
    pub fn burn_schedule(&self) -> Option<&Expr> {
        match &self.lr_schedule {
            Some(Schedule::Burn(expr)) => Some(expr),
            _ => None,
        }
    }
}

impl Default for Experiment {
    fn default() -> Self {
        Self {
            docs: Vec::new(),
            vis: Visibility::Inherited,
            name: None,
            model: None,
            step: None,
            steps: None,
            steps_span: Span::call_site(),
            optimizers: None,
            loader: None,
            optimizer: None,
            lr: None,
            lr_schedule: None,
            epochs: None,
            metrics: None,
            callbacks: None,
            after_step: None,
            at_epoch_end: None,
            checkpoint: None,
            early_stopping: None,
            grad_accumulation: None,
            grad_clip: None,
            seed: None,
            artifacts: None,
            resume: None,
            init_from: None,
            device: None,
            hparams: None,
            sweep: None,
            search: None,
            freeze: None,
            unfreeze: None,
            ema: None,
            ema_on: None,
            groups: None,
            gradient_checkpointing: None,
            precision: None,
            lora: None,
            engine: None,
            strategy: None,
            data_parallel: None,
            devices: None,
            given: Vec::new(),
            rejected: Vec::new(),
            span: Span::call_site(),
        }
    }
}

/// `model: Ty = init_expr`; a missing initialiser is reported and the type kept, for the dummy.
pub struct Model {
    pub ty: Type,
    pub init: Option<Expr>,
}

/// `step: |model, batch: Batch| -> Output { body }`
pub struct Step {
    pub model_pat: Pat,
    pub batch_pat: Pat,
    pub batch_ty: Type,
    pub output_ty: Type,
    pub body: Expr,
}

/// One entry of `steps`: the optimizer that takes the step, how often, and the step.
pub struct NamedStep {
    pub name: Ident,
    pub every: Option<Number>,
    /// `every_in_epoch = n`: `every` counts each epoch's batches, not the run's steps.
    pub in_epoch: bool,
    /// `first = k`: the batch it first runs at (default: `every`).
    pub first: Option<Number>,
    pub step: Step,
}

/// One entry of `optimizers`: a named optimizer and the module paths it owns.
pub struct NamedOptimizer {
    pub name: Ident,
    pub optimizer: Optimizer,
    pub on: Vec<(String, Span)>,
}

/// `loader: { train: .., valid: .., test: .., batcher: .., batch_size: .., shuffle: .., workers: .. }`
pub struct Loader {
    pub train: Option<Expr>,
    pub valid: Option<Expr>,
    /// Evaluated once, after training, with the best (or last) checkpoint.
    pub test: Option<Expr>,
    /// `|item, rng| -> item`, applied to training items only.
    pub augment: Option<Expr>,
    pub batcher: Option<Expr>,
    pub batch_size: Option<Number>,
    pub shuffle: Option<Number>,
    pub workers: Option<Number>,
    pub given: Vec<String>,
    pub span: Span,
}

/// A numeric literal, possibly negated, with its span; or, where a key takes one
/// ([`crate::parse::number_or_constant`]), a constant of the user's (`LR`, `EPOCHS * 2`).
#[derive(Clone)]
pub struct Number {
    /// NaN for a constant: its value is rustc's to know, so its range is checked at start-up.
    pub value: f64,
    pub is_int: bool,
    pub span: Span,
    /// The last token's span: a negative number's literal, after its sign at `span`.
    pub end: Span,
    /// The user's expression, for a constant.
    pub constant: Option<Box<Expr>>,
}

impl Number {
    pub fn as_usize(&self) -> usize {
        self.value as usize
    }

    /// Whether the value is the user's constant, not a literal: no range is checked on it here.
    pub fn is_constant(&self) -> bool {
        self.constant.is_some()
    }

    /// The value as an expression of type `ty` (`usize`, `u64`, `f32`, `f64`): the literal, or the
    /// user's constant bound to a `ty` at its own tokens, so a constant of another type is
    /// rustc's one error there ("expected `usize`, found `f64`").
    pub fn tokens(&self, ty: &str) -> proc_macro2::TokenStream {
        match &self.constant {
            Some(expr) => {
                // The type too, so that rustc's "expected due to this" is the constant.
                let span = syn::spanned::Spanned::span(&**expr);
                let ty = Ident::new(ty, span);
                quote::quote_spanned!(span=> { let __dsl_value: #ty = #expr; __dsl_value })
            }
            None => match ty {
                "usize" => {
                    let v = self.as_usize();
                    quote::quote!(#v)
                }
                "u64" => {
                    let v = self.value as u64;
                    quote::quote!(#v)
                }
                "f32" => {
                    let v = self.value as f32;
                    quote::quote!(#v)
                }
                _ => {
                    let v = self.value;
                    quote::quote!(#v)
                }
            },
        }
    }
}

/// `sgd(lr = 0.1)`, `adam(..)`, `adamw(..)`, or any expression giving a `ModuleOptimizer`.
pub enum Optimizer {
    Named {
        /// A name of `burn_experiment_vocabulary::optimizer::OPTIMIZERS`.
        name: Ident,
        lr: Option<Number>,
        args: Vec<(Ident, Number)>,
    },
    Expr(Expr),
}

/// A learning-rate schedule call.
#[derive(Clone)]
pub enum Schedule {
    Constant,
    Cosine {
        min: Number,
    },
    Linear {
        final_lr: Number,
    },
    Exponential {
        gamma: Number,
    },
    Step {
        every: Number,
        /// `every_epochs` (else `every_steps`: optimizer steps).
        epochs: bool,
        gamma: Number,
    },
    WarmUp {
        steps: Number,
        then: Box<Schedule>,
    },
    /// Any expression giving one of Burn's scheduler configs (`NoamLrSchedulerConfig::new(..)`,
    /// `ComposedLrSchedulerConfig::new().cosine(..)`): it sets the rate, so there is no `lr`.
    Burn(Box<Expr>),
    /// `plateau(valid.loss, factor = 0.5, patience = 2)`: the rate times `factor` each time the
    /// metric has not improved for more than `patience` epochs.
    Plateau {
        metric: MetricRef,
        factor: Number,
        patience: Number,
    },
}

/// `after_step`: a hook on the user's model after optimizer steps.
pub enum AfterStep {
    /// `after_step: |model| ..`: after every optimizer step.
    All(Box<Expr>),
    /// `after_step: { critic: |model| .., .. }`: each after that optimizer's steps.
    Per(Vec<(Ident, Expr)>),
}

/// `split.metric`, `split.metric(arg)`, or the user's own `split.metric(name = expr)`.
#[derive(Clone)]
pub struct MetricRef {
    pub split: Ident,
    /// The step of a several-optimizer experiment whose output it measures (`train.critic.loss`).
    pub step: Option<Ident>,
    /// The catalogue name, or the name of the user's metric.
    pub name: Ident,
    pub arg: Option<Number>,
    /// The user's metric value, for `split.metric(name = expr)`.
    pub custom: Option<Box<Expr>>,
}

impl MetricRef {
    /// `valid.loss` itself, what a sweep is ranked by without `best(..)`: not a step's loss of
    /// a several-optimizer experiment (`valid.discriminator.loss`), which would rank a GAN's
    /// trials by one player unasked.
    pub fn is_valid_loss(&self) -> bool {
        self.split == "valid" && self.name == "loss" && self.step.is_none() && self.custom.is_none()
    }

    /// The key the runtime reports the metric under: `loss`, `top_k(2)`, `fbeta(0.5)`.
    pub fn key(&self) -> String {
        match &self.step {
            Some(step) => format!("{step}.{}", self.metric_key()),
            None => self.metric_key(),
        }
    }

    /// [`MetricRef::key`] without the step.
    pub fn metric_key(&self) -> String {
        match &self.arg {
            _ if self.custom.is_some() => self.name.to_string(),
            Some(arg) if self.name == "top_k" => format!("top_k({})", arg.as_usize()),
            Some(arg) => format!("{}({})", self.name, arg.value),
            None if self.name == "lr" => "lr".to_owned(),
            None => self.name.to_string(),
        }
    }

    pub fn same_metric(&self, other: &MetricRef) -> bool {
        self.split == other.split && self.key() == other.key()
    }
}

/// One checkpoint policy.
pub enum Policy {
    KeepLast(Number),
    Best(MetricRef),
    Every(Number),
    None(Ident),
}

/// `patience(n, split.metric)` or `patience(n, split.metric, min_delta = x)`.
pub struct Patience {
    pub patience: Number,
    pub metric: MetricRef,
    pub min_delta: Option<Number>,
}

/// `lora: { rank, alpha, on }`, with the span of the block for a missing part.
pub struct LoraKey {
    pub rank: Option<Number>,
    pub alpha: Option<Number>,
    pub on: Vec<(String, Span)>,
    pub span: Span,
}

/// `norm(x)` or `value(x)`.
pub enum Clip {
    Norm(Number),
    /// Each parameter's gradient to this L2 norm (Burn's `GradientClippingConfig::Norm`).
    ParamNorm(Number),
    Value(Number),
}

/// `resume: latest` or `resume: epoch(n)`.
pub enum ResumeFrom {
    Latest(Ident),
    Epoch(Number),
}

/// `/// doc\n name: Type = default` in `hparams: { .. }`: a field of the config struct.
pub struct Hparam {
    pub docs: Vec<Attribute>,
    pub name: Ident,
    pub ty: Type,
    pub default: Expr,
    /// Declared with its type or default missing (reported): a field of type `()` that no
    /// user expression is type-checked against, so that its readers add no error.
    pub broken: bool,
}

/// `search: { space: { .. }, trials: 30, objective: min(valid.loss), sampler: tpe, prune:
/// median, seed: 0 }`.
pub struct SearchKey {
    pub space: Vec<SearchParam>,
    pub trials: Option<Number>,
    /// `min(valid.loss)`: `min` or `max`, and the metric.
    pub objective: Option<(Ident, MetricRef)>,
    pub sampler: Option<Ident>,
    pub prune: Option<Ident>,
    pub seed: Option<Number>,
    /// The braces, for what the search lacks.
    pub span: Span,
    /// The entries written, read or rejected: a rejected one is not also missing.
    pub given: Vec<String>,
    /// Whether `space` was written with nothing inside its braces.
    pub space_empty: bool,
}

/// A config key as its path: `lr`, `optimizers.generator.lr` (`key` and the rest of the path).
pub fn dotted(key: &Ident, path: &[Ident]) -> String {
    std::iter::once(key)
        .chain(path)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// One key of a search's `space` and the distribution it is drawn from.
pub struct SearchParam {
    pub key: Ident,
    /// The rest of a dotted key, as in [`SweepAxis`].
    pub path: Vec<Ident>,
    /// `log_uniform`, `uniform`, `int` or `choice`.
    pub dist: Ident,
    /// The low and high bounds (not of `choice`).
    pub bounds: Vec<Number>,
    /// The values of `choice`, literals as written.
    pub values: Vec<syn::Lit>,
    /// The distribution's parentheses.
    pub span: Span,
}

impl SearchParam {
    /// The key as the config's path.
    pub fn name(&self) -> String {
        dotted(&self.key, &self.path)
    }
}

/// One key of `sweep: { .. }` and its values, literals as written.
pub struct SweepAxis {
    pub key: Ident,
    /// The rest of a dotted key: `generator`, `lr` of `optimizers.generator.lr`.
    pub path: Vec<Ident>,
    pub values: Vec<syn::Lit>,
    /// The brackets around the values, for "lists no value".
    pub span: Span,
}

impl SweepAxis {
    /// The key as the config's path: `lr`, `optimizers.generator.lr`.
    pub fn name(&self) -> String {
        dotted(&self.key, &self.path)
    }
}
