//! `impl <Name>`: the experiment's entry points. The same signatures serve the real expansion
//! and the dummy one emitted after an error, so the user's own calls type-check either way.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::config::{ConfigKey, config_name, fit_options};
use super::model::{model_name, wrap};
use super::{Locals, bind_user_config, burn_engine, metrics, respan};
use crate::ast::*;
use crate::private::Rt;

/// The bodies of the entry points: generated from a valid experiment, or `unreachable!()` in the
/// dummy expansion (which never runs: the build has already failed).
pub enum Bodies<'a> {
    Real(&'a [ConfigKey]),
    Dummy,
}

pub fn inherent_impl(exp: &Experiment, name: &Ident, snake: &str, bodies: Bodies) -> TokenStream {
    let config_name = config_name(name);
    let model_name = model_name(name);
    // `()` where the step or its batch type was rejected: only the dummy sees that case.
    let batch_ty = match exp.step.as_ref().map(|s| &s.batch_ty) {
        Some(syn::Type::Infer(_)) | None => quote!(()),
        Some(ty) => quote!(#ty),
    };
    // The output as written: a type that exists even in the dummy expansion.
    let output_ty = match exp.step.as_ref().map(|s| &s.output_ty) {
        Some(syn::Type::Infer(_)) | None => quote!(()),
        Some(ty) => quote!(#ty),
    };
    let device_ty = quote!(#Rt::burn::tensor::Device);
    let result = |ok: TokenStream| quote!(::core::result::Result<#ok, #Rt::FitError>);
    // At the output type: the bounds of these types on the model's outputs add no error of
    // their own.
    let output_span = exp
        .step
        .as_ref()
        .map_or_else(Span::call_site, |s| s.output_ty.span());
    let fit_result = result(quote!(#Rt::FitReport<#model_name>));
    let model_result = result(quote!(#model_name));
    let best_result = result(quote!((usize, #model_name)));
    let eval_result = result(quote!(#Rt::Evaluation));
    let path_result = result(quote!(::std::path::PathBuf));
    let vec_result = respan(result(quote!(::std::vec::Vec<#output_ty>)), output_span);
    let l = Locals::new();
    let dummy = matches!(bodies, Bodies::Dummy);
    let EntryBodies {
        config: config_body,
        run_dir: run_dir_body,
        load_with: load_with_body,
        load_best_with: best_body,
        evaluate: evaluate_body,
        test_saved: test_saved_body,
        predict: predict_body,
        predict_saved: predict_saved_body,
        export: export_body,
        sweep: sweep_body,
        cli: cli_body,
        with_options: with_options_body,
    } = match bodies {
        Bodies::Real(keys) => EntryBodies::new(exp, name, snake, keys, &l),
        Bodies::Dummy => EntryBodies::unreachable(),
    };
    let Locals { config, adjust, .. } = &l;
    let test_saved = exp.loader.as_ref().and_then(|l| l.test.as_ref()).map(|_| {
        quote! {
            /// The test split's metrics on the checkpoint `best(..)` chose (else the newest) of
            /// `config`'s run directory, on `device`: `--test-only`.
            pub fn test_saved(#config: &#config_name, device: &#device_ty) -> #eval_result {
                #test_saved_body
            }
        }
    });
    let allow = if dummy {
        quote!(#[allow(unused_variables, clippy::all)])
    } else {
        quote!()
    };
    quote! {
        #allow
        impl #name {
            /// The config with the values written in `training!`.
            pub fn config() -> #config_name {
                #config_body
            }

            /// The device `config` names (`device:`, `--device`; `flex` by default), or why this
            /// binary cannot train on it (a backend built without its cargo feature).
            pub fn device(#config: &#config_name) -> ::core::result::Result<#device_ty, #Rt::FitError> {
                #Rt::device::parse(&#config.device)
            }

            /// Trains with the values written in `training!` on `device` (e.g.
            /// `&Self::device(&Self::config())?`, the device written in `training!`).
            pub fn fit(device: &#device_ty) -> #fit_result {
                Self::with_config(Self::config(), device)
            }

            /// The run `load` and `load_best` read: `<artifacts>/<name in snake_case>/run-<N>`
            /// for `config.run`, else the newest run.
            pub fn run_dir(#config: &#config_name) -> ::core::result::Result<::std::path::PathBuf, #Rt::FitError> {
                #run_dir_body
            }

            /// The model of checkpoint `epoch` of the default run directory, on `device`.
            pub fn load(epoch: usize, device: &#device_ty) -> #model_result {
                Self::load_with(&Self::config(), epoch, device)
            }

            /// The model of checkpoint `epoch` of `config`'s run directory, on `device`.
            pub fn load_with(#config: &#config_name, epoch: usize, device: &#device_ty) -> #model_result {
                #load_with_body
            }

            /// The checkpoint of the default run directory with the best value of the metric
            /// `best(..)` watches (else `valid.loss`, else the newest), with its epoch.
            pub fn load_best(device: &#device_ty) -> #best_result {
                Self::load_best_with(&Self::config(), device)
            }

            /// [`Self::load_best`] in `config`'s run directory.
            pub fn load_best_with(#config: &#config_name, device: &#device_ty) -> #best_result {
                #best_body
            }

            /// The experiment's validation metrics of `model` on another dataset (a test set),
            /// batched by `batcher`.
            pub fn evaluate<I, D, B>(model: &#model_name, dataset: D, batcher: B) -> #eval_result
            where
                I: ::core::marker::Send + ::core::marker::Sync + 'static,
                D: #Rt::burn::data::dataset::Dataset<I> + 'static,
                B: #Rt::burn::data::dataloader::batcher::Batcher<I, #batch_ty> + 'static,
            {
                #evaluate_body
            }

            #test_saved

            /// The inference step's output for every batch of `dataset`, in order, batched by
            /// `batcher` at the experiment's batch size.
            pub fn predict<I, D, B>(model: &#model_name, dataset: D, batcher: B) -> #vec_result
            where
                I: ::core::marker::Send + ::core::marker::Sync + 'static,
                D: #Rt::burn::data::dataset::Dataset<I> + 'static,
                B: #Rt::burn::data::dataloader::batcher::Batcher<I, #batch_ty> + 'static,
            {
                #predict_body
            }

            /// `predictions.csv` in `config`'s run directory: the model `load_best_with` picks,
            /// over the test split (else the validation split): `--predict`.
            pub fn predict_saved(#config: &#config_name, device: &#device_ty) -> #path_result {
                #predict_saved_body
            }

            /// The model `load_best_with` picks, saved as safetensors at `path`: `--export`.
            pub fn export_saved(#config: &#config_name, path: &::std::path::Path, device: &#device_ty) -> #path_result {
                #export_body
            }

            /// Trains with `config` (e.g. `Self::config()` with some values changed) on `device`.
            pub fn with_config(#config: #config_name, device: &#device_ty) -> #fit_result {
                Self::with_options(#config, device, |_| {})
            }

            /// The grid of `sweep: { .. }` (empty without one), ranked by the metric `best(..)`
            /// watches, else `valid.loss`: what `cli()` sweeps, with `--sweep` applied.
            pub fn sweep() -> #Rt::sweep::Plan {
                #sweep_body
            }

            /// The command line of this experiment: `--epochs`, `--lr`, `--resume latest`,
            /// `--config run.json`, `--set key=value`, `--fast-dev-run`, ... (`--help` lists
            /// them). Trains on the config's `device` (`--device`, default `flex`); the exit
            /// code is 0 on success, 2 for a command-line mistake, 130 when interrupted, 1
            /// otherwise.
            pub fn cli() -> ::std::process::ExitCode {
                Self::cli_then(|_, _| ::core::result::Result::Ok(()))
            }

            /// [`Self::cli`], then `after` with the resolved config (its `run` set to the run
            /// just trained, so `load_best_with`, `run_dir`, `predict_saved` read that run) and
            /// the training report. Not called for `--fast-dev-run` (nothing was written),
            /// `--test-only`, `--predict` or `--export`.
            pub fn cli_then(
                after: impl ::core::ops::FnOnce(&#config_name, &#Rt::FitReport<#model_name>) -> ::core::result::Result<(), #Rt::FitError>,
            ) -> ::std::process::ExitCode {
                #cli_body
            }

            /// [`Self::with_config`], with the run options adjusted by `adjust` before training
            /// (batch limits, `write_files`, `quiet`, ...).
            pub fn with_options(
                #config: #config_name,
                device: &#device_ty,
                #adjust: impl ::core::ops::FnOnce(&mut #Rt::FitOptions),
            ) -> #fit_result {
                #with_options_body
            }
        }
    }
}

/// The bodies of the entry points.
struct EntryBodies {
    config: TokenStream,
    run_dir: TokenStream,
    load_with: TokenStream,
    load_best_with: TokenStream,
    evaluate: TokenStream,
    test_saved: TokenStream,
    predict: TokenStream,
    predict_saved: TokenStream,
    export: TokenStream,
    sweep: TokenStream,
    cli: TokenStream,
    with_options: TokenStream,
}

impl EntryBodies {
    /// Bodies that never run, for the dummy expansion.
    fn unreachable() -> Self {
        let never = || quote!(::core::unreachable!());
        Self {
            config: never(),
            run_dir: never(),
            load_with: never(),
            load_best_with: never(),
            evaluate: never(),
            test_saved: never(),
            predict: never(),
            predict_saved: never(),
            export: never(),
            sweep: never(),
            cli: never(),
            with_options: never(),
        }
    }

    /// Bodies generated from a valid experiment.
    fn new(exp: &Experiment, name: &Ident, snake: &str, keys: &[ConfigKey], l: &Locals) -> Self {
        let model = exp.model.as_ref().expect("validated");
        let step = exp.step.as_ref().expect("validated");
        let model_name = model_name(name);
        let config_name = config_name(name);
        let Locals {
            config,
            model: model_var,
            ..
        } = l;
        let (model_ty, init) = (&model.ty, model.init.as_ref().expect("validated"));
        Self {
            config: quote!(<#config_name as ::core::default::Default>::default()),
            run_dir: quote!(#Rt::find_run(&#config.artifacts, #snake, #config.run.as_deref())),
            load_with: {
                // The model is built as its run built it: with the run's recorded config.
                let run_config = Ident::new("run_config", Span::mixed_site());
                let run_dir = Ident::new("run_dir", Span::mixed_site());
                let bind = bind_user_config(quote!(&#run_config));
                let wrapped = wrap(&model_name, &quote!(#model_var), quote!(#run_config));
                quote! {
                    let #run_dir = Self::run_dir(#config)?;
                    let #run_config: #config_name = #Rt::run_config(&#run_dir, #config)?;
                    let #model_var: #model_ty = {
                        #bind
                        #init
                    };
                    #Rt::load_checkpoint(&#run_dir, epoch, #wrapped)
                }
            },
            load_best_with: {
                let watch = best_watch(exp);
                quote! {
                    let epoch = #Rt::best_checkpoint(&Self::run_dir(#config)?, #watch)?;
                    Ok((epoch, Self::load_with(#config, epoch, device)?))
                }
            },
            evaluate: {
                let boxes = metrics::boxes(exp, "valid", &model_name);
                let check = output_check(step, &model_name, quote!(InferenceStep));
                let bind = bind_user_config(quote!(&*model.config));
                let call = quote_spanned! {step.output_ty.span()=>
                    #Rt::evaluate(model, dataset, batcher, model.config.batch_size, ::std::vec![#(#boxes),*])
                };
                quote!(#check #bind #call)
            },
            test_saved: test_saved(exp, &model_name, l),
            predict: {
                let check = output_check(step, &model_name, quote!(InferenceStep));
                let call = quote_spanned! {step.output_ty.span()=>
                    #Rt::predict(
                        model,
                        ::std::sync::Arc::new(dataset),
                        ::std::sync::Arc::new(batcher),
                        model.config.batch_size,
                    )
                };
                quote!(#check #call)
            },
            predict_saved: predict_saved(exp, l),
            export: quote! {
                let (_, #model_var) = Self::load_best_with(#config, device)?;
                #Rt::weights::export_safetensors_as(&#model_var, path, #config.precision.low())?;
                ::core::result::Result::Ok(path.to_owned())
            },
            sweep: sweep(exp, snake),
            cli: cli(),
            with_options: with_options(exp, name, snake, keys, l),
        }
    }
}

/// A statement naming the step output through the model's step impl, at the user's output type:
/// a wrong output fails here once (at the span where the step impls report it), and rustc then
/// drops the same failure at each metric of the function.
fn output_check(step: &Step, model_name: &Ident, trait_name: TokenStream) -> TokenStream {
    respan(
        quote! {
            let _: ::core::marker::PhantomData<<#model_name as #Rt::burn::train::#trait_name>::Output> =
                ::core::marker::PhantomData;
        },
        step.output_ty.span(),
    )
}

/// Trains: the model and data built from the user's expressions, the config's values in
/// `FitOptions`, the metrics, then our fit loop or Burn's engine. Generated bindings have
/// mixed-site names, invisible to the user's expressions, which see only `device`.
fn with_options(
    exp: &Experiment,
    name: &Ident,
    snake: &str,
    keys: &[ConfigKey],
    l: &Locals,
) -> TokenStream {
    let model = exp.model.as_ref().expect("validated");
    let step = exp.step.as_ref().expect("validated");
    let loader = exp.loader.as_ref().expect("validated");
    let model_name = model_name(name);
    let Locals {
        config,
        options,
        model: model_var,
        optimizer,
        lr_schedule,
        sources,
        train_device,
        adjust,
        ..
    } = l;
    let (model_ty, init) = (&model.ty, model.init.as_ref().expect("validated"));
    let steps = Ident::new("steps", Span::mixed_site());
    let optimization = optimization(exp, &model_name, l, &steps);
    // Each check sits at the user's expression (see `Sources` for the order).
    let (batcher, bind_batcher) = batcher_binding(exp);
    let (train, valid) = (
        dataset(&batcher, loader.train.as_ref().expect("validated")),
        dataset(&batcher, loader.valid.as_ref().expect("validated")),
    );
    let fit_options = fit_options(keys, config, snake);
    let check = [quote!(TrainStep), quote!(InferenceStep)]
        .map(|step_trait| output_check(step, &model_name, step_trait));
    let metric_calls = metrics::registrations(exp, &model_name);
    let hook_calls = after_step_calls(exp, &model_name, model_ty);
    let callback_calls = exp.callbacks.iter().flatten().map(|c| {
        let boxed = respan(quote!(#Rt::Callback::boxed), c.span());
        quote_spanned!(c.span()=> .callback(#boxed(#c)))
    });
    let provenance = Ident::new("provenance", Span::mixed_site());
    // The git state as compiled; without git then, the commit the repository's files name.
    let origin = match git_at_build() {
        Some(Some((commit, dirty))) => quote!(#Rt::Provenance::built_from(#commit, #dirty)),
        Some(None) => quote!(#Rt::Provenance::untracked()),
        None => quote! {
            #Rt::Provenance::new(::std::path::Path::new(::core::env!("CARGO_MANIFEST_DIR")))
        },
    };
    // The datasets' fingerprints: by their values, their `Debug` text or their count, whichever
    // the items offer first (`provenance/fingerprint.rs` explains the method lookup).
    let test_split = Ident::new("test_split", Span::mixed_site());
    let test_print = loader
        .test
        .as_ref()
        .map(|_| quote!(.data("test", (&&&#Rt::Probe(&*#test_split.dataset)).fingerprint())));
    let provenance_value = quote! {{
        use #Rt::{ByCount as _, ByDebug as _, ByValues as _};
        #origin
            .data("train", (&&&#Rt::Probe(&*#sources.train)).fingerprint())
            .data("valid", (&&&#Rt::Probe(&*#sources.valid)).fingerprint())
            #test_print
    }};
    let wrapped = wrap(
        &model_name,
        &quote!(#model_var),
        quote!(::core::clone::Clone::clone(&#config)),
    );
    let add_steps = exp.steps.as_ref().map(|_| quote!(.steps(#steps)));
    // How a 16-bit run casts its batches: the batch's `CastFloats` where it has one, so that
    // `--precision` works on any experiment whose batch can be cast; with the key written,
    // a batch without it is an error at the key (`precision_check`).
    // The batch type is named through the step impl, not again at the user's token: a
    // misspelt type is then one error (the impl's), not one more here.
    let batch_ty = &step.batch_ty;
    let casts = quote! {{
        use #Rt::{Casts as _, NoCasts as _};
        (&#Rt::CastProbe::<<#model_name as #Rt::burn::train::TrainStep>::Input>::new()).casts()
    }};
    // And its outputs back to f32 for the metrics, where they can be (Burn's outputs and
    // `#[derive(StepOutput)]` ones).
    let output_casts = |step: TokenStream| {
        quote! {{
            use #Rt::{Casts as _, NoCasts as _};
            (&#Rt::CastProbe::<<#model_name as #Rt::burn::train::#step>::Output>::new()).casts()
        }}
    };
    let (train_out, valid_out) = (
        output_casts(quote!(TrainStep)),
        output_casts(quote!(InferenceStep)),
    );
    let precision_check = exp.low_precision().map(|key| {
        let f = Ident::new("precision", key.span());
        let cast_floats = respan(quote!(#Rt::CastFloats), key.span());
        quote_spanned! {key.span()=>
            fn #f<B: #cast_floats>() {}
            #f::<#batch_ty>();
        }
    });
    // The run's calls are bounded by the step output too: at the output type, like the step impls.
    let fit = respan(
        quote! {
            #Rt::Fit::generated(#wrapped, #optimizer, #lr_schedule)
                #add_steps
                .options(#options)
                .hyperparameters(&#config)
                .provenance(#provenance)
                .batch_casts(#casts, #casts)
                .output_casts(#train_out, #valid_out)
        },
        step.output_ty.span(),
    );
    // At the key: an output that cannot travel between ranks is reported there.
    // The bound sits on a local function named and placed as the key, so that the error's
    // "required by a bound in `data_parallel`" points at the user's key, not at our code or
    // the whole invocation.
    let data_parallel = exp.data_parallel.as_ref().map(|key| {
        let f = Ident::new("data_parallel", key.span());
        let call = respan(quote!(#f()), key.span());
        let portable = respan(quote!(#Rt::Portable), key.span());
        // The step's one output type is both steps' output: one bound, one call.
        // A named optimizer says how its parameters may be split between the ranks.
        let sharding = match exp.optimizer.as_ref() {
            Some(Optimizer::Named { .. }) => quote!(.sharding(#config.optimizer.sharding())),
            _ => TokenStream::new(),
        };
        quote_spanned! {key.span()=>
            .data_parallel({
                fn #f<T: #portable>() -> (#Rt::ItemCodec<T>, #Rt::ItemCodec<T>) {
                    (#Rt::ItemCodec::of(), #Rt::ItemCodec::of())
                }
                #call
            })
            #sharding
        }
    });
    let data = Ident::new("data", Span::mixed_site());
    let run = respan(quote!(.run(device, #data)), step.output_ty.span());
    // A local function with a plain `Fn` bound and the data as its first argument, so that an
    // untyped closure gets its parameter types from the loader's items; a wrong one is reported
    // at the user's expression.
    let augment = loader.augment.as_ref().map(|expr| {
        // Items are not hygienic: a name the user is unlikely to give their own function.
        let f = Ident::new("augment_training_items", Span::mixed_site());
        let helper = quote! {
            fn #f<I, B, F>(data: #Rt::Data<I, B>, transform: F) -> #Rt::Data<I, B>
            where
                F: ::core::ops::Fn(I, &mut #Rt::AugmentRng) -> I
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            {
                data.with_augment(#Rt::Augment::new(transform))
            }
        };
        let call = respan(quote!(#f), expr.span());
        (helper, quote_spanned!(expr.span()=> #call(#data, #expr)))
    });
    let (augment_helper, augment_call) = match augment {
        Some((helper, call)) => (helper, quote!(let #data = #call;)),
        None => (quote!(), quote!()),
    };
    let report = Ident::new("report", Span::mixed_site());
    // At the output type too: a wrong output fails the whole chain once, there.
    let question = quote_spanned!(step.output_ty.span()=> ?);
    let bind_config = bind_user_config(quote!(&#config));
    let fit = burn_engine::hand_over(
        exp,
        &model_name,
        l,
        quote!({
            #augment_helper
            let #provenance = #provenance_value;
            let #data = #sources.into_data();
            #augment_call
            #fit #data_parallel #(#metric_calls)* #(#callback_calls)* #(#hook_calls)* #run
        }),
    );
    // The test split is measured after either engine returns.
    let (test_prepare, test_run) = match &loader.test {
        Some(expr) => {
            let (plan, split) = (Ident::new("test_plan", Span::mixed_site()), &test_split);
            let dataset = dataset(&quote!(#sources.batcher), expr);
            let boxes = metrics::boxes(exp, "test", &model_name);
            (
                quote! {
                    let #plan = #Rt::TestPlan::new(&#options);
                    let #split = #Rt::TestSplit {
                        dataset: #dataset,
                        batcher: #sources.batcher.clone(),
                        metrics: ::std::vec![#(#boxes),*],
                    };
                },
                quote!(#report.test(&#plan, #split)),
            )
        }
        None => (quote!(), quote!(::core::result::Result::Ok(#report))),
    };
    quote! {
        #(#check)*
        #precision_check
        if let ::core::option::Option::Some(seed) = #config.seed {
            #Rt::placement::seed_devices(device, seed);
        }
        #bind_config
        // The model is trained on the autodiff twin of the run's device, so that its parameters
        // track gradients whichever device the caller passed; it is built on the CPU and moved
        // there, so that a seed means the same initial weights on every backend.
        let #train_device = device.clone().autodiff();
        let #model_var: #model_ty = {
            let device = &#Rt::placement::init_device(&#train_device);
            #init
        };
        let #model_var = #Rt::placement::to_run_device(#model_var, &#train_device);
        #bind_batcher
        let #sources = #Rt::Sources {
            train: #train,
            valid: #valid,
            batcher: #batcher,
        };
        #optimization
        let mut #options = #fit_options;
        #options.plateau = #config.lr_schedule.plateau();
        #options.lora = #config.lora.as_ref().map(|lora| lora.prefixed("model."));
        #adjust(&mut #options);
        #test_prepare
        let #report = #fit #question;
        #test_run
    }
}

/// `after_step`'s and `at_epoch_end`'s hooks as `Fit` calls: each user closure, applied to the
/// wrapper's `model` field by a function item (a closure that captures a local is then one error
/// at the captured name).
fn after_step_calls(
    exp: &Experiment,
    model_name: &Ident,
    model_ty: &syn::Type,
) -> Vec<TokenStream> {
    let hook = |user: &syn::Expr| {
        let span = user.span();
        let typed = respan(quote!(#Rt::model_hook::<#model_ty, _>), span);
        quote_spanned! {span=> {
            fn hook(mut wrapped: #model_name) -> #model_name {
                let user = #typed(#user);
                wrapped.model = user(wrapped.model);
                wrapped
            }
            hook
        }}
    };
    let mut calls = match &exp.after_step {
        None => Vec::new(),
        Some(AfterStep::All(user)) => {
            let hook = hook(user);
            vec![quote!(.after_step(#hook))]
        }
        Some(AfterStep::Per(hooks)) => hooks
            .iter()
            .map(|(name, user)| {
                let (name, hook) = (name.to_string(), hook(user));
                quote!(.after_step_of(#name, #hook))
            })
            .collect(),
    };
    if let Some(user) = &exp.at_epoch_end {
        let span = user.span();
        let typed = respan(quote!(#Rt::epoch_hook::<#model_ty, _, _>), span);
        let outcome = respan(quote!(#Rt::HookOutcome::into_result), span);
        calls.push(quote_spanned! {span=> .at_epoch_end({
            fn hook(
                wrapped: &#model_name,
                at: &#Rt::EpochAt<'_>,
            ) -> ::core::result::Result<(), ::std::string::String> {
                let user = #typed(#user);
                #outcome(user(&wrapped.model, at))
            }
            hook
        })});
    }
    calls
}

/// The optimizer and the schedule (and with several optimizers, the steps, bound to `steps`):
/// per-group rates of `groups`, the schedule over the run's optimizer steps.
fn optimization(exp: &Experiment, model_name: &Ident, l: &Locals, steps: &Ident) -> TokenStream {
    let Locals {
        config,
        model: model_var,
        optimizer,
        lr_schedule,
        sources,
        ..
    } = l;
    let optimizer_steps = |epochs: TokenStream| {
        quote! {
            #Rt::optimizer_steps(
                #sources.train.len(),
                #config.batch_size,
                #config.grad_accumulation,
                #epochs,
            )
        }
    };
    let (per_epoch, total) = (
        optimizer_steps(quote!(1)),
        optimizer_steps(quote!(#config.epochs)),
    );
    let model_clone = wrap(
        model_name,
        &quote!(::core::clone::Clone::clone(&#model_var)),
        quote!(::core::clone::Clone::clone(&#config)),
    );
    if exp.steps.is_some() {
        // At the steps, as every other use of their outputs.
        return respan(
            quote! {
                let (#optimizer, #lr_schedule, #steps) = #Rt::steps::several(
                    &#model_clone,
                    "model.",
                    &#config.optimizers,
                    &#config.lr_schedule.in_steps(#per_epoch),
                    #total,
                    #model_name::steps(),
                )?;
            },
            exp.steps_span,
        );
    }
    let groups = Ident::new("groups", Span::mixed_site());
    let optimizer_expr = match exp.optimizer.as_ref().expect("validated") {
        Optimizer::Named { .. } => quote!(#config.optimizer.init()?),
        Optimizer::Expr(expr) => quote!(#expr),
    };
    if exp.burn_schedule().is_some() {
        // Burn's scheduler sets every rate: no base rate, no groups (refused beside it).
        return quote! {
            let #lr_schedule = #config.lr_schedule.build_own()?;
            let #optimizer = #optimizer_expr;
        };
    }
    quote! {
        let #groups = #Rt::tuning::lr_groups(
            &#model_clone,
            "model.",
            &#config.groups,
        )?;
        let #lr_schedule = #config
            .lr_schedule
            .in_steps(#per_epoch)
            .build_grouped(#config.lr, #total, &#groups)?;
        let #optimizer = #optimizer_expr;
    }
}

/// The commit of the crate being compiled and whether its tracked files differ from it, asked
/// of `git` while the macro expands: what the binary was built from, at no cost at run time.
/// `Some(None)` when the crate's files are not tracked by the work tree around them; `None`
/// outside a git work tree or without `git`.
fn git_at_build() -> Option<Option<(String, bool)>> {
    git_state(&std::env::var_os("CARGO_MANIFEST_DIR")?)
}

/// [`git_at_build`] for the crate in `dir`.
pub(crate) fn git_state(dir: &std::ffi::OsStr) -> Option<Option<(String, bool)>> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    // A crate inside another project's work tree but not tracked by it: that project's commit
    // says nothing about these sources.
    if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_none() {
        return Some(None);
    }
    let status = git(&["status", "--porcelain", "--untracked-files=no"])?;
    Some(Some((commit, !status.is_empty())))
}

/// The user's batcher, shared behind Burn's `dyn Batcher` of the step's batch: its name, and
/// the statement binding it, at the user's expression.
fn batcher_binding(exp: &Experiment) -> (TokenStream, TokenStream) {
    let step = exp.step.as_ref().expect("validated");
    let batch_ty = &step.batch_ty;
    let expr = exp
        .loader
        .as_ref()
        .and_then(|l| l.batcher.as_ref())
        .expect("validated");
    let batcher = Ident::new("batcher", Span::mixed_site());
    let shared = quote_spanned!(expr.span()=> ::std::sync::Arc::new(#expr));
    let bind = quote! {
        let #batcher: ::std::sync::Arc<dyn #Rt::burn::data::dataloader::batcher::Batcher<_, #batch_ty>> =
            #shared;
    };
    (quote!(#batcher), bind)
}

/// `expr` as a shared dataset of the items `batcher` takes, checked at `expr`.
fn dataset(batcher: &TokenStream, expr: &syn::Expr) -> TokenStream {
    quote_spanned!(expr.span()=> #Rt::Yields::shared(&#batcher, #expr))
}

/// `--test-only`: the test split on a saved checkpoint.
fn test_saved(exp: &Experiment, model_name: &Ident, l: &Locals) -> TokenStream {
    let Some(test) = exp.loader.as_ref().and_then(|l| l.test.as_ref()) else {
        return quote!();
    };
    let Locals { config, model, .. } = l;
    let (batcher, bind_batcher) = batcher_binding(exp);
    let dataset = dataset(&batcher, test);
    let boxes = metrics::boxes(exp, "test", model_name);
    let watch = watch(best_policy(exp));
    let step = exp.step.as_ref().expect("validated");
    // At the output type, as the step impls: a wrong output is reported there once.
    let measure = respan(
        quote! {
            #Rt::TestSplit { dataset: test, batcher: #batcher, metrics }
                .measure(&#model, epoch, #config.batch_size)
        },
        step.output_ty.span(),
    );
    // The model first: the user's expressions then read the config its run recorded.
    let bind = bind_user_config(quote!(&*#model.config));
    // A wrong output fails here once, at the output type, not again at each test metric.
    let check = output_check(step, model_name, quote!(InferenceStep));
    quote! {
        #check
        let epoch = #Rt::best_checkpoint(&Self::run_dir(#config)?, #watch)?;
        let #model = Self::load_with(#config, epoch, device)?;
        #bind
        #bind_batcher
        let test = #dataset;
        let metrics = ::std::vec![#(#boxes),*];
        #measure
    }
}

/// `--predict`: the outputs of the model `load_best_with` picks over the test split (else the
/// validation split), as `predictions.csv`.
fn predict_saved(exp: &Experiment, l: &Locals) -> TokenStream {
    let loader = exp.loader.as_ref().expect("validated");
    let split = loader
        .test
        .as_ref()
        .or(loader.valid.as_ref())
        .expect("validated");
    let Locals { config, model, .. } = l;
    let (batcher, bind_batcher) = batcher_binding(exp);
    let dataset = dataset(&batcher, split);
    let step = exp.step.as_ref().expect("validated");
    // At the output type, as the step impls: a wrong output is reported there once.
    let write = respan(
        quote! {
            let outputs = #Rt::predict(&#model, dataset, #batcher, #config.batch_size)?;
            #Rt::write_predictions(&Self::run_dir(#config)?, &outputs)
        },
        step.output_ty.span(),
    );
    let bind = bind_user_config(quote!(&*#model.config));
    quote! {
        let (_, #model) = Self::load_best_with(#config, device)?;
        #bind
        #bind_batcher
        let dataset = #dataset;
        #write
    }
}

/// `cli()`: the runtime's `cli::run` over the experiment's `cli::Experiment` impl.
fn cli() -> TokenStream {
    quote!(#Rt::cli::run::<Self>(after))
}

/// `impl cli::Experiment`: one-line methods over the entry points, for the runtime's `cli::run`.
pub fn experiment_impl(exp: &Experiment, name: &Ident) -> TokenStream {
    let config_name = config_name(name);
    let model_name = model_name(name);
    let device_ty = quote!(#Rt::burn::tensor::Device);
    let result = |ok: TokenStream| quote!(::core::result::Result<#ok, #Rt::FitError>);
    let path_result = result(quote!(::std::path::PathBuf));
    let test_saved = match exp.loader.as_ref().and_then(|l| l.test.as_ref()) {
        Some(_) => quote!(::core::option::Option::Some(Self::test_saved(
            config, device
        ))),
        None => quote!(::core::option::Option::None),
    };
    let eval_result = result(quote!(#Rt::Evaluation));
    let fit_result = result(quote!(#Rt::FitReport<#model_name>));
    let data_parallel = exp.data_parallel.as_ref().map(|_| {
        quote!(
            const DATA_PARALLEL: bool = true;
        )
    });
    // At the step output, where a wrong one is reported: the trait's bounds on the model's
    // outputs add no error of their own.
    let model_type = match &exp.step {
        Some(step) => respan(
            quote!(type Model = #model_name;),
            syn::spanned::Spanned::span(&step.output_ty),
        ),
        None => quote!(type Model = #model_name;),
    };
    quote! {
        impl #Rt::cli::Experiment for #name {
            type Config = #config_name;
            #model_type
            #data_parallel

            fn defaults() -> #config_name {
                Self::config()
            }

            fn plan() -> #Rt::sweep::Plan {
                Self::sweep()
            }

            fn open_device(config: &#config_name) -> ::core::result::Result<#device_ty, #Rt::FitError> {
                Self::device(config)
            }

            fn train(
                config: #config_name,
                device: &#device_ty,
                adjust: impl ::core::ops::FnOnce(&mut #Rt::FitOptions),
            ) -> #fit_result {
                Self::with_options(config, device, adjust)
            }

            fn measure_test_split(
                config: &#config_name,
                device: &#device_ty,
            ) -> ::core::option::Option<#eval_result> {
                #test_saved
            }

            fn write_predictions(config: &#config_name, device: &#device_ty) -> #path_result {
                Self::predict_saved(config, device)
            }

            fn export_weights(
                config: &#config_name,
                path: &::std::path::Path,
                device: &#device_ty,
            ) -> #path_result {
                Self::export_saved(config, path, device)
            }

            fn saved_run(config: &#config_name) -> #path_result {
                Self::run_dir(config)
            }

            fn for_run(config: #config_name, run: ::core::option::Option<::std::string::String>) -> #config_name {
                #config_name { run, ..config }
            }
        }
    }
}

/// `sweep()`: the macro's grid as JSON values, and the metric trials are ranked by.
fn sweep(exp: &Experiment, snake: &str) -> TokenStream {
    let axes = exp.sweep.iter().flatten().map(|axis| {
        let key = axis.name();
        let values = &axis.values;
        let value = quote!(#Rt::serde_json::Value::from);
        quote!((#key, ::std::vec![#(#value(#values)),*]))
    });
    let watch = best_watch(exp);
    let recorded = metrics::recorded(exp).into_iter().map(|m| {
        let (split, key) = (super::values::split(&m), m.key());
        quote!((#split, #key))
    });
    let search = exp.search.as_ref().map(|search| {
        let search_mod = quote!(#Rt::search);
        let params = search.space.iter().map(|param| {
            let key = param.name();
            let dist = match param.dist.to_string().as_str() {
                "choice" => {
                    let value = quote!(#Rt::serde_json::Value::from);
                    let values = &param.values;
                    quote!(#search_mod::space::Dist::Choice { values: ::std::vec![#(#value(#values)),*] })
                }
                name => {
                    let (low, high) = (param.bounds[0].value, param.bounds[1].value);
                    match name {
                        "log_uniform" => quote!(#search_mod::space::Dist::LogUniform { low: #low, high: #high }),
                        "uniform" => quote!(#search_mod::space::Dist::Uniform { low: #low, high: #high }),
                        _ => {
                            let (low, high) = (low as i64, high as i64);
                            quote!(#search_mod::space::Dist::Int { low: #low, high: #high })
                        }
                    }
                }
            };
            quote!(.param(#key, #dist))
        });
        let trials = search.trials.as_ref().map(|n| {
            let n = n.as_usize();
            quote!(.trials(#n))
        });
        let objective = search.objective.as_ref().map(|(direction, metric)| {
            let name = format!("{}.{}", metric.split, metric.key());
            let maximize = direction == "max";
            quote!(.objective(#name, #maximize))
        });
        let sampler = search.sampler.as_ref().map(|s| {
            let variant = match s.to_string().as_str() {
                "random" => quote!(Random),
                _ => quote!(Tpe),
            };
            quote!(.sampler(#search_mod::sampler::Sampler::#variant))
        });
        let prune = search.prune.as_ref().map(|p| {
            let variant = match p.to_string().as_str() {
                "median" => quote!(Median),
                "asha" => quote!(Asha),
                _ => quote!(None),
            };
            quote!(.prune(#search_mod::prune::Pruner::#variant))
        });
        let seed = search.seed.as_ref().map(|n| {
            let n = n.value as u64;
            quote!(.seed(#n))
        });
        quote!(.search(#search_mod::Declared::new() #(#params)* #trials #objective #sampler #prune #seed))
    });
    quote! {
        #Rt::sweep::Plan::new(#snake, #watch, ::std::vec![#(#axes),*]).recorded(&[#(#recorded),*]) #search
    }
}

/// The metric of the first `best(..)` policy.
fn best_policy(exp: &Experiment) -> Option<MetricRef> {
    exp.checkpoint.iter().flatten().find_map(|p| match p {
        Policy::Best(m) => Some(m.clone()),
        _ => None,
    })
}

/// The metric `load_best` ranks checkpoints by: the first `best(..)` policy, else `valid.loss`
/// when recorded, else none (the newest checkpoint).
fn best_watch(exp: &Experiment) -> TokenStream {
    watch(best_policy(exp).or_else(|| {
        metrics::recorded(exp)
            .into_iter()
            .find(MetricRef::is_valid_loss)
    }))
}

/// `Some((split, key))` of a watched metric, or `None` for the newest checkpoint.
fn watch(watched: Option<MetricRef>) -> TokenStream {
    match watched {
        Some(m) => {
            let split = super::values::split(&m);
            let key = m.key();
            quote!(::core::option::Option::Some((#split, #key)))
        }
        None => quote!(::core::option::Option::None),
    }
}

#[cfg(test)]
mod tests {
    use super::git_state;

    #[test]
    fn a_crate_the_surrounding_repository_does_not_track_has_no_commit() {
        let repo = tempfile::tempdir().unwrap();
        let git = |dir: &std::path::Path, args: &[&str]| {
            let status = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        let tracked = repo.path().join("tracked");
        let untracked = repo.path().join("untracked");
        for dir in [&tracked, &untracked] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("Cargo.toml"), "[package]\n").unwrap();
        }
        git(repo.path(), &["init", "-q"]);
        git(repo.path(), &["add", "tracked"]);
        git(repo.path(), &["commit", "-q", "-m", "one"]);
        let state = git_state(tracked.as_os_str()).unwrap().unwrap();
        assert_eq!((state.0.len(), state.1), (40, false));
        assert_eq!(git_state(untracked.as_os_str()), Some(None));
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(git_state(outside.path().as_os_str()), None);
    }
}
