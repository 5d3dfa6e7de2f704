//! [`Experiment`] to Rust: thin calls into `burn_experiment::__private`, where the logic lives. One
//! generator per item: the config struct (`config`), the model wrapper (`model`), the entry
//! points (`api`), the metric registrations (`metrics`) and Burn's engine (`burn_engine`).

mod api;
mod burn_engine;
mod config;
mod metrics;
mod model;
mod steps;
mod values;

pub use steps::merged_step;

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::ast::*;
use crate::private::Rt;
use api::Bodies;

/// Expands a validated experiment (every required key present).
pub fn expand(exp: &Experiment) -> TokenStream {
    let name = exp.name.as_ref().expect("validated");
    let snake = snake_case(&name.to_string());
    let keys = config::keys(exp);
    let unit = unit_struct(exp, name);
    let model = model::model_module(
        exp,
        exp.model.as_ref().expect("validated"),
        exp.step.as_ref().expect("validated"),
        &snake,
        &keys,
    );
    let api = api::inherent_impl(exp, name, &snake, Bodies::Real(&keys));
    let sweep_types = config::sweep_types(exp);
    let experiment = api::experiment_impl(exp, name);
    quote!(#unit #model #api #experiment #sweep_types)
}

/// What the user's code can name after an error: the experiment with every entry point, its
/// config and its model type, with bodies that never run. Modelled on clap's `dummies.rs`: one
/// mistake in `training!` is then one error, not one more per use of the experiment.
pub fn dummy(exp: &Experiment) -> TokenStream {
    let Some(name) = &exp.name else {
        // No experiment to declare, but the user's expressions are still checked (and their
        // imports used) against a config of the experiment's keys, named where no one sees it.
        let name = Ident::new("Unnamed", Span::mixed_site());
        let config = config::config_struct(exp, &name, &config::keys(exp), &quote!());
        let uses = user_expressions(exp, &config::config_name(&name));
        return quote! {
            const _: () = {
                #config
                #uses
            };
        };
    };
    let snake = snake_case(&name.to_string());
    let keys = config::keys(exp);
    let unit = unit_struct(exp, name);
    // Declared as the real expansion declares them, in the hidden module.
    let inner_vis = model::nested_vis(&exp.vis, 1);
    let config = config::config_struct(exp, name, &keys, &inner_vis);
    let model_name = model::model_name(name);
    let config_name = config::config_name(name);
    let model = match &exp.model {
        Some(Model { ty, .. }) => quote! {
            #[allow(dead_code)]
            #inner_vis struct #model_name {
                pub model: #ty,
                pub config: ::std::sync::Arc<#config_name>,
            }
        },
        None => quote!(#inner_vis struct #model_name;),
    };
    let hidden = model::hidden_module(exp, &model::module_name(&snake), quote!(#config #model));
    let api = api::inherent_impl(exp, name, &snake, Bodies::Dummy);
    let uses = user_expressions(exp, &config_name);
    quote!(#unit #hidden #api #uses)
}

/// The user's expressions in a function that is never called: they are still type-checked (an
/// error in them is the user's to fix either way) and their imports stay used, so a rejected
/// invocation adds no "unused import" warnings. The function returns what the real expansion's
/// does, `Result<_, FitError>`, so that `?` in a model or dataset expression (a loader reading
/// a file) type-checks here exactly as it does there.
fn user_expressions(exp: &Experiment, config_name: &Ident) -> TokenStream {
    let config = user_config();
    // An expression reading a field the config lacks is the validator's error alone.
    let reads_known = |e: &&syn::Expr| {
        crate::validate::unknown_config_fields(exp, e).is_empty()
            && !crate::validate::reads_broken_hparam(exp, e)
    };
    let model = exp.model.as_ref().map(|Model { ty, init }| match init {
        Some(init) if reads_known(&init) => quote!(let _: #ty = { #init };),
        _ => quote!(let _: ::core::marker::PhantomData<#ty>;),
    });
    let every_step = exp
        .step
        .iter()
        .map(|s| (Ident::new("__dsl_step", Span::call_site()), s))
        .chain(
            exp.steps
                .iter()
                .flatten()
                .map(|s| (quote::format_ident!("__dsl_step_{}", s.name), &s.step)),
        );
    let step: Vec<TokenStream> = every_step
        .map(|(f, step)| match &exp.model {
            // A `?` in the body is the validator's error alone.
            Some(model)
                if !matches!(step.batch_ty, syn::Type::Infer(_))
                    && crate::validate::step_question_mark(step).is_none()
                    && reads_known(&&step.body) =>
            {
                // No metric is registered here, so none is checked at the body.
                model::step_function(&f, &model.ty, step, config_name, |_| Vec::new())
            }
            _ => {
                let output_ty = &step.output_ty;
                quote!(let _: ::core::marker::PhantomData<#output_ty>;)
            }
        })
        .collect();
    let loader = exp
        .loader
        .iter()
        .flat_map(|l| [&l.valid, &l.test, &l.batcher])
        .flatten()
        .filter(reads_known);
    let loader = loader.map(|e| quote!(let _ = #e;));
    // The training items, which give an untyped `augment` closure its parameter types as in
    // the real expansion. A closure with the wrong parameters is the validator's error alone.
    let train = exp
        .loader
        .as_ref()
        .and_then(|l| l.train.as_ref())
        .filter(reads_known);
    // A closure missing only the generator gets one named `rng`, which its body most likely
    // names: the body is then checked (and its imports used) as the user meant it.
    let augment = exp
        .loader
        .iter()
        .filter_map(|l| l.augment.as_ref())
        .find(reads_known)
        .and_then(|e| match e {
            syn::Expr::Closure(c) if c.inputs.len() == 1 => {
                let mut repaired = c.clone();
                repaired.inputs.push(syn::parse_quote!(rng));
                Some(quote!(#repaired))
            }
            syn::Expr::Closure(c) if c.inputs.len() != 2 => None,
            other => Some(quote!(#other)),
        });
    let train = train.map(|train| {
        let items = Ident::new("train_items", Span::mixed_site());
        let augment = augment.map(|augment| {
            quote! {
                fn augment_items<I, D, F>(_: &D, _: F)
                where
                    D: #Rt::burn::data::dataset::Dataset<I>,
                    F: ::core::ops::Fn(I, &mut #Rt::AugmentRng) -> I
                        + ::core::marker::Send
                        + ::core::marker::Sync
                        + 'static,
                {
                }
                augment_items(&#items, #augment);
            }
        });
        quote! {
            let #items = #train;
            #augment
        }
    });
    let optimizer = match &exp.optimizer {
        Some(Optimizer::Expr(e)) if reads_known(&e) => Some(quote!(let _ = #e;)),
        _ => None,
    };
    let metrics = exp
        .metrics
        .iter()
        .flatten()
        .filter_map(|m| m.custom.as_deref())
        .filter(reads_known)
        .map(|e| quote!(let _ = #e;));
    quote! {
        const _: () = {
            #[allow(dead_code, unused)]
            fn uses(
                device: &#Rt::burn::tensor::Device,
                #config: &'static #config_name,
            ) -> ::core::result::Result<(), #Rt::FitError> {
                #model
                #(#step)*
                #train
                #(#loader)*
                #optimizer
                #(#metrics)*
                ::core::result::Result::Ok(())
            }
        };
    }
}

fn unit_struct(exp: &Experiment, name: &Ident) -> TokenStream {
    let (docs, vis) = (&exp.docs, &exp.vis);
    // At the name: an item of the user's of that name is then rustc's one error there ("the
    // name `Seed` is defined multiple times"), the only clash left (the rest is hidden or
    // reserved, `model::exported`).
    let unit = respan(quote!(#vis struct #name;), name.span());
    quote! {
        #(#docs)*
        #[derive(Clone, Copy, Debug)]
        #unit
    }
}

/// The bindings of generated bodies, with mixed-site names: a user expression that names
/// `config` or `model` gets the user's own item (or a clear "not found"), never ours.
pub struct Locals {
    config: Ident,
    options: Ident,
    model: Ident,
    optimizer: Ident,
    lr_schedule: Ident,
    sources: Ident,
    training: Ident,
    train_device: Ident,
    adjust: Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Self {
            config: local("config"),
            options: local("options"),
            model: local("model"),
            optimizer: local("optimizer"),
            lr_schedule: local("lr_schedule"),
            sources: local("sources"),
            training: local("training"),
            train_device: local("train_device"),
            adjust: local("adjust"),
        }
    }
}

/// `config` as the user's expressions name it: the run's `<Name>Config` (with the experiment's
/// own `hparams`). Unlike the generated bindings it resolves at the call site.
pub fn user_config() -> Ident {
    Ident::new("config", Span::call_site())
}

/// A statement binding [`user_config`] to the config value `value` (a reference), for the
/// user's expressions that follow (no warning where none of them reads it). It is a `'static`
/// copy, so that closures Burn keeps (`augment`, metric functions) read `config.x` as written.
fn bind_user_config(value: TokenStream) -> TokenStream {
    let config = user_config();
    quote! {
        #[allow(unused_variables)]
        let #config = #Rt::for_expressions(#value);
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

/// `tokens` with every span located at `span`, so an error anywhere in them points at the user's
/// token instead of the whole invocation. Names keep how they resolve: a mixed-site binding
/// stays invisible to the user's code.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(group.span().located_at(span));
                token = proc_macro2::TokenTree::Group(inner);
            } else {
                token.set_span(token.span().located_at(span));
            }
            token
        })
        .collect()
}
