//! [`Experiment`] to Rust: thin calls into `dsl_runtime::__private`, where the logic lives.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::ast::*;
use crate::validate::default_metrics;

/// Expands a validated experiment (every required key present).
pub fn expand(exp: &Experiment) -> TokenStream {
    let name = exp.name.as_ref().expect("validated");
    let model = exp.model.as_ref().expect("validated");
    let step = exp.step.as_ref().expect("validated");
    let loader = exp.loader.as_ref().expect("validated");
    let docs = &exp.docs;
    let vis = &exp.vis;
    // Items of the hidden module are visible where the experiment is.
    let inner_vis = match vis {
        syn::Visibility::Inherited => quote!(pub(super)),
        other => quote!(#other),
    };

    let snake = snake_case(&name.to_string());
    let config_name = format_ident!("{}Config", name);
    let model_name = format_ident!("{}Model", name);
    let module = format_ident!("__dsl_{}", snake);
    let rt = quote!(::dsl_runtime::__private);

    let (config_fields, config_defaults) = config(exp);
    let optimizer = match exp.optimizer.as_ref().expect("validated") {
        Optimizer::Named { .. } => quote!(config.optimizer.init()),
        Optimizer::Expr(expr) => quote!(#expr),
    };
    // Calls whose bounds include "the step output is a training output" carry the span of the
    // user's output type, so that a wrong output is reported there once (identical errors at
    // one span are merged) instead of again at the macro's call site.
    let output_span = step.output_ty.span();
    // Each metric is boxed through `Feeds`, under the span of the user's metric name: the one
    // place a step output that cannot feed it is reported.
    let metric_calls = metrics(exp).into_iter().map(|m| {
        let ctor = metric_constructor(&m);
        let span = m.name.span();
        let output = Ident::new("StepOutput", span);
        let metric = metric_type(&m.name.to_string(), span);
        let boxed = respan(
            quote!(<#module::#output as ::dsl_runtime::__private::Feeds<#metric>>::boxed(#ctor)),
            span,
        );
        if m.split == "train" {
            let method = Ident::new("train_metric", output_span);
            quote!(.#method(#boxed))
        } else {
            let method = Ident::new("valid_metric", output_span);
            quote!(.#method(#boxed))
        }
    });

    let valid_boxes: Vec<TokenStream> = metrics(exp)
        .into_iter()
        .filter(|m| m.split == "valid")
        .map(|m| {
            let ctor = metric_constructor(&m);
            let span = m.name.span();
            let output = Ident::new("StepOutput", span);
            let metric = metric_type(&m.name.to_string(), span);
            respan(
                quote!(<#module::#output as ::dsl_runtime::__private::Feeds<#metric>>::boxed(#ctor)),
                span,
            )
        })
        .collect();
    let best_watch = best_watch(exp);
    let burn_path = burn_path(exp, &model_name);
    let Model { ty: model_ty, init } = model;
    let Step {
        model_pat,
        batch_pat,
        batch_ty,
        output_ty,
        body,
    } = step;
    // A closure with a return type always has a block body; other bodies get braces.
    let body = match body {
        syn::Expr::Block(block) => quote!(#block),
        other => quote!({ #other }),
    };
    let train = loader.train.as_ref().expect("validated");
    let valid = loader.valid.as_ref().expect("validated");
    let batcher = loader.batcher.as_ref().expect("validated");
    let shared_batcher = quote_spanned!(batcher.span()=>
        ::dsl_runtime::__private::BatchesInto::<_, #batch_ty>::shared(#batcher, &train)
    );
    let checked_output = respan(
        quote!(<#output_ty as ::dsl_runtime::__private::Checked>::Output),
        output_ty.span(),
    );
    // The step methods and `evaluate` check the output type as a whole item or call, so all of
    // their tokens carry `output_span` (see above); the batch type is named `Self::Input` to
    // keep its own errors at the user's batch type.
    let train_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> burn::train::TrainOutput<#checked_output> {
                let output = step(&self.model, batch);
                ::dsl_runtime::__private::train_output(self, output)
            }
        },
        output_span,
    );
    let inference_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> #checked_output {
                step(&self.model, batch)
            }
        },
        output_span,
    );
    let evaluate_call = quote_spanned! {output_span=>
        ::dsl_runtime::__private::evaluate(
            model,
            dataset,
            batcher,
            Self::config().batch_size,
            ::std::vec![#(#valid_boxes),*],
        )
    };
    let config_doc = format!(
        "Every scalar hyperparameter of [`{name}`], defaulting to the values written in `training!`; saved as `config.json` with each run."
    );
    let model_doc = format!(
        "The model of [`{name}`] with its training and inference steps (`TrainStep`, `InferenceStep`) built from `step`."
    );

    quote! {
        #(#docs)*
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;

        #[doc = #config_doc]
        #[derive(Clone, Debug, PartialEq, #rt::serde::Serialize, #rt::serde::Deserialize)]
        #[serde(crate = "::dsl_runtime::__private::serde", default, deny_unknown_fields)]
        #vis struct #config_name {
            #config_fields
        }

        impl ::core::default::Default for #config_name {
            fn default() -> Self {
                Self { #config_defaults }
            }
        }

        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports)]
        mod #module {
            use super::*;
            use ::dsl_runtime::__private::burn;

            #[doc = #model_doc]
            #[derive(burn::module::Module, Debug)]
            #inner_vis struct #model_name {
                /// The user's model.
                pub model: #model_ty,
            }

            #inner_vis type StepOutput = #output_ty;

            fn step(#model_pat: &#model_ty, #batch_pat: #batch_ty) -> #output_ty #body

            impl burn::train::TrainStep for #model_name {
                type Input = #batch_ty;
                type Output = #checked_output;

                #train_step_fn
            }

            impl burn::train::InferenceStep for #model_name {
                type Input = #batch_ty;
                type Output = #checked_output;

                #inference_step_fn
            }

        }
        #vis use #module::#model_name;

        impl #name {
            /// The config with the values written in `training!`.
            pub fn config() -> #config_name {
                <#config_name as ::core::default::Default>::default()
            }

            /// Trains with the values written in `training!` on `device`.
            pub fn fit(
                device: &#rt::burn::tensor::Device,
            ) -> ::core::result::Result<#rt::FitReport<#model_name>, #rt::FitError> {
                Self::with_config(Self::config(), device)
            }

            /// The run directory of `config`: `<artifacts>/<name in snake_case>`.
            pub fn run_dir(config: &#config_name) -> ::std::path::PathBuf {
                ::std::path::Path::new(&config.artifacts).join(#snake)
            }

            /// The model of checkpoint `epoch` of the default run directory, on `device`.
            pub fn load(
                epoch: usize,
                device: &#rt::burn::tensor::Device,
            ) -> ::core::result::Result<#model_name, #rt::FitError> {
                Self::load_with(&Self::config(), epoch, device)
            }

            /// The model of checkpoint `epoch` of `config`'s run directory, on `device`.
            pub fn load_with(
                config: &#config_name,
                epoch: usize,
                device: &#rt::burn::tensor::Device,
            ) -> ::core::result::Result<#model_name, #rt::FitError> {
                let model: #model_ty = #init;
                #rt::load_checkpoint(&Self::run_dir(config), epoch, #model_name { model })
            }

            /// The checkpoint of the default run directory with the best value of the metric
            /// `best(..)` watches (else `valid.loss`, else the newest), with its epoch.
            pub fn load_best(
                device: &#rt::burn::tensor::Device,
            ) -> ::core::result::Result<(usize, #model_name), #rt::FitError> {
                Self::load_best_with(&Self::config(), device)
            }

            /// [`Self::load_best`] in `config`'s run directory.
            pub fn load_best_with(
                config: &#config_name,
                device: &#rt::burn::tensor::Device,
            ) -> ::core::result::Result<(usize, #model_name), #rt::FitError> {
                let epoch = #rt::best_checkpoint(&Self::run_dir(config), #best_watch)?;
                Ok((epoch, Self::load_with(config, epoch, device)?))
            }

            /// The experiment's validation metrics of `model` on another dataset (a test set),
            /// batched by `batcher`.
            pub fn evaluate<I, D, B>(
                model: &#model_name,
                dataset: D,
                batcher: B,
            ) -> ::core::result::Result<#rt::Evaluation, #rt::FitError>
            where
                I: ::core::clone::Clone + ::core::marker::Send + ::core::marker::Sync + 'static,
                D: #rt::burn::data::dataset::Dataset<I> + 'static,
                B: #rt::burn::data::dataloader::batcher::Batcher<I, #batch_ty> + 'static,
            {
                #evaluate_call
            }

            /// Trains with `config` (e.g. `Self::config()` with some values changed) on `device`.
            pub fn with_config(
                config: #config_name,
                device: &#rt::burn::tensor::Device,
            ) -> ::core::result::Result<#rt::FitReport<#model_name>, #rt::FitError> {
                Self::with_options(config, device, |_| {})
            }

            /// The command line of this experiment: `--epochs`, `--lr`, `--resume latest`,
            /// `--config run.json`, `--set key=value`, `--fast-dev-run`, ... (`--help` lists
            /// them). Trains on `Device::flex()`; the exit code is 0 on success, 2 for a
            /// command-line mistake, 130 when interrupted, 1 otherwise.
            pub fn cli() -> ::std::process::ExitCode {
                #rt::cli::main(Self::config(), |config, args| {
                    let device = #rt::burn::tensor::Device::flex();
                    Self::with_options(config, &device, |options| args.adjust(options))
                        .map(|report| report.run_dir)
                })
            }

            /// [`Self::with_config`], with the run options adjusted by `adjust` before training
            /// (batch limits, `write_files`, `quiet`, ...).
            pub fn with_options(
                config: #config_name,
                device: &#rt::burn::tensor::Device,
                adjust: impl ::core::ops::FnOnce(&mut #rt::FitOptions),
            ) -> ::core::result::Result<#rt::FitReport<#model_name>, #rt::FitError> {
                if let ::core::option::Option::Some(seed) = config.seed {
                    device.seed(seed);
                }
                // The model is built on the autodiff twin of the run's device, so that its
                // parameters track gradients whichever device the caller passed.
                let train_device = device.clone().autodiff();
                let model: #model_ty = {
                    let device = &train_device;
                    #init
                };
                let train = #train;
                let valid = #valid;
                let batcher = #shared_batcher;
                let steps = #rt::optimizer_steps(
                    #rt::burn::data::dataset::Dataset::len(&train),
                    config.batch_size,
                    config.grad_accumulation,
                    config.epochs,
                );
                let lr_schedule = config.lr_schedule.build(config.lr, steps)?;
                let optimizer = #optimizer;
                let mut options = #rt::FitOptions {
                        name: ::std::string::String::from(#snake),
                        artifacts: ::std::path::PathBuf::from(&config.artifacts),
                        first_epoch: 1,
                        epochs: config.epochs,
                        batch_size: config.batch_size,
                        shuffle: config.shuffle,
                        workers: config.workers,
                        grad_accumulation: config.grad_accumulation,
                        grad_clip: config.grad_clip,
                        early_stopping: config.early_stopping.clone(),
                        checkpoint: config.checkpoint.clone(),
                        resume: config.resume,
                        ..#rt::FitOptions::default()
                    };
                adjust(&mut options);
                #burn_path
                #rt::Fit::new(#model_name { model }, optimizer, lr_schedule)
                    .options(options)
                    .hyperparameters(&config)
                    #(#metric_calls)*
                    .run(device, #rt::Data::new(train, valid, batcher))
            }
        }
    }
}

/// `ThreeClass` → `three_class`: the run directory's name.
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn metrics(exp: &Experiment) -> Vec<MetricRef> {
    exp.metrics.clone().unwrap_or_else(default_metrics)
}

fn metric_constructor(m: &MetricRef) -> TokenStream {
    let rt = quote!(::dsl_runtime::__private::metric);
    let arg = m.arg.as_ref().map(|a| a.value).unwrap_or_default();
    match m.name.to_string().as_str() {
        "top_k" => {
            let k = arg as usize;
            quote!(#rt::top_k(#k))
        }
        "fbeta" => quote!(#rt::fbeta(#arg)),
        "lr" => quote!(#rt::learning_rate()),
        other => {
            let f = Ident::new(other, Span::call_site());
            quote!(#rt::#f())
        }
    }
}

/// The Burn metric type behind a metric name, with every token at the user's metric name.
fn metric_type(name: &str, span: Span) -> TokenStream {
    let ty = match name {
        "loss" => return quote_spanned!(span=> ::dsl_runtime::__private::metric::SampleLoss),
        "accuracy" => "AccuracyMetric",
        "top_k" => "TopKAccuracyMetric",
        "precision" => "PrecisionMetric",
        "recall" => "RecallMetric",
        "f1" | "fbeta" => "FBetaScoreMetric",
        "auroc" => "AurocMetric",
        "perplexity" => "PerplexityMetric",
        _ => "LearningRateMetric",
    };
    let ty = Ident::new(ty, span);
    quote_spanned!(span=> ::dsl_runtime::__private::burn::train::metric::#ty)
}

fn opt_u64(n: &Option<Number>) -> TokenStream {
    match n {
        Some(n) => {
            let v = n.value as u64;
            quote!(::core::option::Option::Some(#v))
        }
        None => quote!(::core::option::Option::None),
    }
}

fn opt_usize(n: &Option<Number>) -> TokenStream {
    match n {
        Some(n) => {
            let v = n.as_usize();
            quote!(::core::option::Option::Some(#v))
        }
        None => quote!(::core::option::Option::None),
    }
}

fn arg(args: &[(Ident, Number)], key: &str) -> Option<f64> {
    args.iter().find(|(k, _)| k == key).map(|(_, n)| n.value)
}

fn opt_f32(v: Option<f64>) -> TokenStream {
    match v {
        Some(v) => {
            let v = v as f32;
            quote!(::core::option::Option::Some(#v))
        }
        None => quote!(::core::option::Option::None),
    }
}

fn optimizer_spec(kind: OptimizerKind, args: &[(Ident, Number)]) -> TokenStream {
    let rt = quote!(::dsl_runtime::__private);
    let f32_or = |key: &str, default: f32| arg(args, key).map_or(default, |v| v as f32);
    match kind {
        OptimizerKind::Sgd => {
            let momentum = match arg(args, "momentum") {
                Some(m) => quote!(::core::option::Option::Some(#m)),
                None => quote!(::core::option::Option::None),
            };
            let weight_decay = opt_f32(arg(args, "weight_decay"));
            quote!(#rt::OptimizerSpec::Sgd { momentum: #momentum, weight_decay: #weight_decay })
        }
        OptimizerKind::Adam => {
            let (b1, b2, eps) = (
                f32_or("beta1", 0.9),
                f32_or("beta2", 0.999),
                f32_or("epsilon", 1e-5),
            );
            let weight_decay = opt_f32(arg(args, "weight_decay"));
            quote!(#rt::OptimizerSpec::Adam { beta_1: #b1, beta_2: #b2, epsilon: #eps, weight_decay: #weight_decay })
        }
        OptimizerKind::AdamW => {
            let (b1, b2, eps) = (
                f32_or("beta1", 0.9),
                f32_or("beta2", 0.999),
                f32_or("epsilon", 1e-5),
            );
            let weight_decay = f32_or("weight_decay", 1e-4);
            quote!(#rt::OptimizerSpec::AdamW { beta_1: #b1, beta_2: #b2, epsilon: #eps, weight_decay: #weight_decay })
        }
    }
}

fn schedule_spec(schedule: &Schedule) -> TokenStream {
    let rt = quote!(::dsl_runtime::__private);
    match schedule {
        Schedule::Constant => quote!(#rt::Schedule::Constant),
        Schedule::Cosine { min } => {
            let v = min.value;
            quote!(#rt::Schedule::Cosine { min_lr: #v })
        }
        Schedule::Linear { final_lr } => {
            let v = final_lr.value;
            quote!(#rt::Schedule::Linear { final_lr: #v })
        }
        Schedule::Exponential { gamma } => {
            let v = gamma.value;
            quote!(#rt::Schedule::Exponential { gamma: #v })
        }
        Schedule::Step { every, gamma } => {
            let (n, g) = (every.as_usize(), gamma.value);
            quote!(#rt::Schedule::Step { step_size: #n, gamma: #g })
        }
        Schedule::WarmUp { steps, then } => {
            let n = steps.as_usize();
            let then = schedule_spec(then);
            quote!(#rt::Schedule::WarmUp { steps: #n, then: ::std::boxed::Box::new(#then) })
        }
    }
}

/// The fields of `<Name>Config` and their defaults, from the macro's values.
fn config(exp: &Experiment) -> (TokenStream, TokenStream) {
    let rt = quote!(::dsl_runtime::__private);
    let loader = exp.loader.as_ref().expect("validated");
    let epochs = exp.epochs.as_ref().expect("validated").as_usize();
    let batch_size = loader.batch_size.as_ref().expect("validated").as_usize();
    let workers = loader.workers.as_ref().map_or(0, Number::as_usize);
    let shuffle = opt_u64(&loader.shuffle);
    let seed = opt_u64(&exp.seed);
    let accumulation = opt_usize(&exp.grad_accumulation);
    let (lr, optimizer_field, optimizer_default) = match exp.optimizer.as_ref().expect("validated")
    {
        Optimizer::Named { kind, lr, args, .. } => {
            let spec = optimizer_spec(*kind, args);
            (
                lr.as_ref().map_or(0.0, |n| n.value),
                quote! {
                    /// The optimizer and its settings.
                    pub optimizer: #rt::OptimizerSpec,
                },
                quote!(optimizer: #spec,),
            )
        }
        Optimizer::Expr(_) => (exp.lr.as_ref().map_or(0.0, |n| n.value), quote!(), quote!()),
    };
    let schedule = exp
        .lr_schedule
        .as_ref()
        .map_or_else(|| quote!(#rt::Schedule::Constant), schedule_spec);
    let clip = match &exp.grad_clip {
        Some(Clip::Norm(n)) => {
            let v = n.value;
            quote!(::core::option::Option::Some(#rt::GradClip::Norm(#v)))
        }
        Some(Clip::Value(n)) => {
            let v = n.value as f32;
            quote!(::core::option::Option::Some(#rt::GradClip::Value(#v)))
        }
        None => quote!(::core::option::Option::None),
    };
    let early = match &exp.early_stopping {
        Some(rule) => {
            let split = split_tokens(&rule.metric);
            let key = rule.metric.key();
            let patience = rule.patience.as_usize();
            let delta = rule.min_delta.as_ref().map_or(0.0, |n| n.value);
            quote!(::core::option::Option::Some(#rt::EarlyStopping {
                split: #split,
                metric: ::std::string::String::from(#key),
                patience: #patience,
                min_delta: #delta,
            }))
        }
        None => quote!(::core::option::Option::None),
    };
    let checkpoint = match &exp.checkpoint {
        Some(policies) if !policies.iter().any(|p| matches!(p, Policy::None(_))) => {
            let policies = policies.iter().map(|p| match p {
                Policy::KeepLast(n) => {
                    let n = n.as_usize();
                    quote!(#rt::Policy::KeepLast { n: #n })
                }
                Policy::Every(k) => {
                    let k = k.as_usize();
                    quote!(#rt::Policy::Every { k: #k })
                }
                Policy::Best(m) => {
                    let split = split_tokens(m);
                    let key = m.key();
                    quote!(#rt::Policy::Best { split: #split, metric: ::std::string::String::from(#key) })
                }
                Policy::None(_) => unreachable!("filtered above"),
            });
            quote!(::core::option::Option::Some(::std::vec![#(#policies),*]))
        }
        _ => quote!(::core::option::Option::None),
    };
    let resume = match &exp.resume {
        Some(ResumeFrom::Latest(_)) => quote!(::core::option::Option::Some(#rt::Resume::Latest)),
        Some(ResumeFrom::Epoch(n)) => {
            let n = n.as_usize();
            quote!(::core::option::Option::Some(#rt::Resume::Epoch(#n)))
        }
        None => quote!(::core::option::Option::None),
    };
    let (engine_fields, engine_defaults) = if exp.has_burn_engine() {
        let engine = match &exp.engine {
            Some(e) if e == "burn" => quote!(#rt::engine::Engine::Burn),
            _ => quote!(#rt::engine::Engine::Ours),
        };
        let strategy = match exp.strategy.as_ref().map(ToString::to_string).as_deref() {
            Some("multi") => quote!(#rt::engine::Strategy::Multi),
            Some("ddp") => quote!(#rt::engine::Strategy::Ddp),
            _ => quote!(#rt::engine::Strategy::Single),
        };
        let devices = exp.devices.as_ref().map_or(1, Number::as_usize);
        (
            quote! {
                /// `ours` (our fit loop) or `burn` (Burn's `SupervisedTraining`).
                pub engine: #rt::engine::Engine,
                /// Burn's execution strategy: `single`, `multi` or `ddp`.
                pub strategy: #rt::engine::Strategy,
                /// Number of devices; more than one runs on Burn's engine.
                pub devices: usize,
            },
            quote!(engine: #engine, strategy: #strategy, devices: #devices,),
        )
    } else {
        (quote!(), quote!())
    };
    let artifacts = exp
        .artifacts
        .as_ref()
        .map_or_else(|| "artifacts".to_owned(), |s| s.value());

    let fields = quote! {
        /// Last epoch to train.
        pub epochs: usize,
        /// Samples per batch.
        pub batch_size: usize,
        /// Shuffle seed of the training split; `None` keeps dataset order.
        pub shuffle: ::core::option::Option<u64>,
        /// Threads building batches ahead of training.
        pub workers: usize,
        /// Base learning rate.
        pub lr: f64,
        #optimizer_field
        /// How the learning rate moves over the run.
        pub lr_schedule: #rt::Schedule,
        /// Batches per optimizer step.
        pub grad_accumulation: ::core::option::Option<usize>,
        /// Gradient clipping.
        pub grad_clip: ::core::option::Option<#rt::GradClip>,
        /// Early stopping rule.
        pub early_stopping: ::core::option::Option<#rt::EarlyStopping>,
        /// Seed of the device RNG, set before the model is initialised.
        pub seed: ::core::option::Option<u64>,
        /// Root folder of run directories.
        pub artifacts: ::std::string::String,
        /// Checkpoint policies; `None` writes no checkpoint.
        pub checkpoint: ::core::option::Option<::std::vec::Vec<#rt::Policy>>,
        /// Where the run continues from.
        pub resume: ::core::option::Option<#rt::Resume>,
        #engine_fields
    };
    let defaults = quote! {
        epochs: #epochs,
        batch_size: #batch_size,
        shuffle: #shuffle,
        workers: #workers,
        lr: #lr,
        #optimizer_default
        lr_schedule: #schedule,
        grad_accumulation: #accumulation,
        grad_clip: #clip,
        early_stopping: #early,
        seed: #seed,
        artifacts: ::std::string::String::from(#artifacts),
        checkpoint: #checkpoint,
        resume: #resume,
        #engine_defaults
    };
    (fields, defaults)
}

/// `tokens` with every span set to `span`, so an error anywhere in them points at the user's
/// token instead of the whole invocation.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = proc_macro2::TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

fn split_tokens(metric: &MetricRef) -> TokenStream {
    if metric.split == "train" {
        quote!(::dsl_runtime::__private::Split::Train)
    } else {
        quote!(::dsl_runtime::__private::Split::Valid)
    }
}

/// The metric `load_best` ranks checkpoints by: the first `best(..)` policy, else `valid.loss`
/// when recorded, else none (the newest checkpoint).
fn best_watch(exp: &Experiment) -> TokenStream {
    let best = exp.checkpoint.iter().flatten().find_map(|p| match p {
        Policy::Best(m) => Some(m.clone()),
        _ => None,
    });
    let watched = best.or_else(|| {
        metrics(exp)
            .into_iter()
            .find(|m| m.split == "valid" && m.name == "loss")
    });
    match watched {
        Some(m) => {
            let split = split_tokens(&m);
            let key = m.key();
            quote!(::core::option::Option::Some((#split, #key)))
        }
        None => quote!(::core::option::Option::None),
    }
}

/// The Burn metric a metric name stands for, as an expression (Burn's `LossMetric` for `loss`:
/// our sample-weighted loss emits no per-step entries for Burn's loggers).
fn burn_metric(m: &MetricRef) -> TokenStream {
    if m.name == "loss" {
        quote!(::dsl_runtime::__private::burn::train::metric::LossMetric::new())
    } else {
        let ctor = metric_constructor(m);
        quote!(#ctor.into_inner())
    }
}

/// The hand-over to Burn's `SupervisedTraining`, generated only for experiments with an
/// `engine`, `strategy` or `devices` key.
fn burn_path(exp: &Experiment, model_name: &Ident) -> TokenStream {
    if !exp.has_burn_engine() {
        return quote!();
    }
    let rt = quote!(::dsl_runtime::__private);
    let all = metrics(exp);
    let registrations = all.iter().map(|m| {
        let metric = burn_metric(m);
        if m.split == "train" {
            quote!(let training = training.metric_train_numeric(#metric);)
        } else {
            quote!(let training = training.metric_valid_numeric(#metric);)
        }
    });
    let recorded = all.iter().map(|m| {
        let metric = burn_metric(m);
        let split = split_tokens(m);
        let key = m.key();
        quote!(#rt::engine::Recorded::new(#split, #key, &#metric))
    });
    let checkpointing = match &exp.checkpoint {
        Some(policies) if !policies.iter().any(|p| matches!(p, Policy::None(_))) => {
            let adds = policies.iter().map(|p| match p {
                Policy::KeepLast(n) => {
                    let n = n.as_usize();
                    quote!(.add(#rt::engine::keep_last(#n)))
                }
                Policy::Every(k) => {
                    let k = k.as_usize();
                    quote!(.add(#rt::engine::every(#k)))
                }
                Policy::Best(m) => {
                    let metric = burn_metric(m);
                    let split = split_tokens(m);
                    quote!(.add(#rt::engine::best(&#metric, #split)))
                }
                Policy::None(_) => unreachable!("filtered above"),
            });
            quote!(let training = training.with_checkpointing_strategy(#rt::engine::policies() #(#adds)* .build());)
        }
        _ => quote!(),
    };
    let early = match &exp.early_stopping {
        Some(rule) => {
            let metric = burn_metric(&rule.metric);
            let split = split_tokens(&rule.metric);
            let n = rule.patience.as_usize();
            quote!(let training = training.early_stopping(#rt::engine::patience(&#metric, #split, #n));)
        }
        None => quote!(),
    };
    quote! {
        if #rt::engine::uses_burn(config.engine, config.strategy, config.devices) {
            let recorded = ::std::vec![#(#recorded),*];
            return #rt::engine::fit_with_burn(
                #model_name { model },
                optimizer,
                lr_schedule,
                options,
                #rt::engine::devices(device, config.devices),
                config.strategy,
                (train, valid, batcher),
                |training| {
                    #(#registrations)*
                    #checkpointing
                    #early
                    training
                },
                recorded,
            );
        }
    }
}
