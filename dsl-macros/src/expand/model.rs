//! `<Name>Model`: the user's model in a Burn `Module` with `TrainStep` and `InferenceStep` built
//! from `step`, so two experiments may train the same model type.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;

use super::config::config_name;
use super::{respan, user_config};
use crate::ast::*;
use crate::private::Rt;

/// The wrapper's own name, from the reserved prefix `__`: the user's items, seen in the hidden
/// module through `use super::*`, are never shadowed by it (a user's `LineFitModel` beside
/// `name: LineFit` stays theirs). Users name it `<Name>Model` ([`exported`]).
pub fn model_name(name: &Ident) -> Ident {
    format_ident!("__{}Model", name)
}

/// The output type as generated code names it: `<Output as StepOutput>::Checked`, all at the
/// user's output type, so a wrong output is one error there.
fn checked_output(step: &Step) -> TokenStream {
    let output_ty = &step.output_ty;
    respan(
        quote!(<#output_ty as #Rt::StepOutput>::Checked),
        output_ty.span(),
    )
}

/// The hidden module holding the wrapper and its step impls, and the `use` that exports the
/// wrapper where the experiment is.
///
/// The config is declared in the module too: the module sees the experiment's surroundings
/// through `use super::*`, which in a function body is the enclosing module, not the function's
/// own items; so everything the module names is declared in it, and `training!` also works
/// inside a function.
pub fn model_module(
    exp: &Experiment,
    model: &Model,
    step: &Step,
    snake: &str,
    keys: &[super::config::ConfigKey],
) -> TokenStream {
    let name = exp.name.as_ref().expect("validated");
    // Items of the hidden module are visible where the experiment is.
    let inner_vis = nested_vis(&exp.vis, 1);
    let module = module_name(snake);
    let model_name = model_name(name);
    let debug = model_debug(&model_name, &format!("{name}Model"));
    let model_ty = &model.ty;
    let (batch_ty, output_ty) = (&step.batch_ty, &step.output_ty);
    let output_span = output_ty.span();
    let checked = checked_output(step);
    let config_name = config_name(name);
    let config_struct = super::config::config_struct(exp, name, keys, &inner_vis);
    // Every token of the step methods checks the output type, so all of them sit at the user's
    // output type; identical errors at one span are reported once. The batch type is named
    // `Self::Input` to keep its own errors at the user's batch type.
    let train_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> burn::train::TrainOutput<Self::Output> {
                let output = __dsl_step(&self.model, batch, &self.config);
                #Rt::train_output(self, output)
            }
        },
        output_span,
    );
    let inference_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> Self::Output {
                __dsl_step(&self.model, batch, &self.config)
            }
        },
        output_span,
    );
    let doc = format!(
        "The model of [`{name}`] with its training and inference steps (`TrainStep`, `InferenceStep`) built from `step`."
    );
    let impls = step_impls(
        &model_name,
        output_span,
        (batch_ty, &checked),
        (train_step_fn, inference_step_fn),
    );
    // Named apart from `step`, a name the user's own functions called from the body may have:
    // the body is resolved here.
    let step_function = step_function(
        &Ident::new("__dsl_step", proc_macro2::Span::call_site()),
        model_ty,
        step,
        &config_name,
        |output| super::metrics::starved_checks(exp, None, &step.output_ty, output),
    );
    let step_items = match &exp.steps {
        Some(steps) => super::steps::items(exp, steps, &model_name, &config_name, &inner_vis),
        None => quote! {
            #step_function

            #impls
        },
    };
    hidden_module(
        exp,
        &module,
        quote! {
            use #Rt::burn;

            #config_struct

            #[doc = #doc]
            #[derive(burn::module::Module)]
            #inner_vis struct #model_name {
                /// The user's model.
                pub model: #model_ty,
                /// The config the model was built with (for a loaded checkpoint, its run's).
                #[module(skip)]
                pub config: ::std::sync::Arc<#config_name>,
            }

            #debug

            #step_items
        },
    )
}

/// The hidden module `module` holding `items`, which see the experiment's surroundings through
/// `use super::*`, with the `use`s that name them where the experiment is ([`exported`]): one
/// shape for the real expansion and the dummy one after an error.
pub fn hidden_module(exp: &Experiment, module: &Ident, items: TokenStream) -> TokenStream {
    let names = public_names(exp);
    let exported = exported(exp, module);
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports)]
        mod #module {
            use super::*;

            #items

            #names
        }
        #exported
    }
}

/// The hidden module of the experiment `snake` (`__dsl_three_class`).
pub fn module_name(snake: &str) -> Ident {
    format_ident!("__dsl_{}", snake)
}

/// Where the experiment is, the `use`s of what `module` declares: the reserved names
/// (`__<Name>Config`, `__<Name>Model`) for the generated code, and the public names
/// (`<Name>Config`, `<Name>Model`) as a glob import from [`public_names`]. An item of the
/// user's own of that name shadows a glob import instead of clashing with it: Burn's examples
/// declare `TrainingConfig` and `TextClassificationModel` beside experiments named `Training`
/// and `TextClassification`. Ours is then named `ConfigOf<Training>` (`ModelOf<..>`).
fn exported(exp: &Experiment, module: &Ident) -> TokenStream {
    let name = exp.name.as_ref().expect("named");
    let vis = &exp.vis;
    let (config, model) = (config_name(name), model_name(name));
    quote! {
        #[doc(hidden)]
        #vis use #module::{#config, #model};
        #[allow(unused_imports)]
        #vis use #module::__dsl_names::*;
    }
}

/// The module inside the hidden one that gives the reserved names their public ones, for
/// [`exported`]'s glob import (a glob cannot rename).
fn public_names(exp: &Experiment) -> TokenStream {
    let name = exp.name.as_ref().expect("named");
    let (config, model) = (config_name(name), model_name(name));
    let (public_config, public_model) = (
        format_ident!("{}Config", name),
        format_ident!("{}Model", name),
    );
    // Two modules down from the experiment: its visibility seen from there.
    let vis = nested_vis(&exp.vis, 2);
    quote! {
        #[doc(hidden)]
        pub mod __dsl_names {
            #vis use super::{#config as #public_config, #model as #public_model};
        }
    }
}

/// The visibility `vis`, written where the experiment is, as written `depth` modules below it.
pub fn nested_vis(vis: &syn::Visibility, depth: usize) -> TokenStream {
    let up = |extra: usize| {
        let supers = (0..depth + extra).map(|_| quote!(super));
        quote!(pub(in #(#supers)::*))
    };
    match vis {
        syn::Visibility::Inherited => up(0),
        syn::Visibility::Restricted(r) if r.path.is_ident("self") => up(0),
        syn::Visibility::Restricted(r) if r.path.is_ident("super") => up(1),
        other => quote!(#other),
    }
}

/// `Debug` under the public name (`ThreeClassModel { .. }`), not the reserved one.
fn model_debug(model_name: &Ident, public: &str) -> TokenStream {
    quote! {
        impl ::core::fmt::Debug for #model_name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#public)
                    .field("model", &self.model)
                    .field("config", &self.config)
                    .finish()
            }
        }
    }
}

/// The wrapper around the user's model `model` built with the config `config` (an owned value).
pub fn wrap(model_name: &Ident, model: &TokenStream, config: TokenStream) -> TokenStream {
    quote!(#model_name { model: #model, config: ::std::sync::Arc::new(#config) })
}

/// The user's step as the function `name`: the model, the batch and the run's config (read in
/// the body as `config`) to the step's output.
///
/// `starved`: the checks of [`super::metrics::starved_checks`], made on the body's value
/// before it is returned.
pub fn step_function(
    name: &Ident,
    model_ty: &syn::Type,
    step: &Step,
    config_name: &Ident,
    starved: impl FnOnce(&TokenStream) -> Vec<TokenStream>,
) -> TokenStream {
    let Step {
        model_pat,
        batch_pat,
        batch_ty,
        output_ty,
        body,
    } = step;
    // A closure with a return type always has a block body; other bodies get braces.
    let mut body = match body {
        syn::Expr::Block(block) => quote!(#block),
        other => quote!({ #other }),
    };
    // The value returned stands where the body is, so a mismatch underlines the body: in
    // parentheses spanning it (rustc keeps a paren's span when it holds the inner one).
    let (whole, inner) = match &step.body {
        syn::Expr::Block(block) => (
            block.block.brace_token.span.join(),
            block.block.brace_token.span.open(),
        ),
        other => (other.span(), other.span()),
    };
    let output = quote::quote_spanned!(inner=> __dsl_output);
    let checks = starved(&output);
    let mut lint = TokenStream::new();
    if !checks.is_empty() {
        let mut returned = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, output);
        returned.set_span(whole);
        body = quote!({
            let __dsl_output = #body;
            #(#checks)*
            #returned
        });
        lint = quote!(#[allow(unused_parens)]);
    }
    let config = user_config();
    quote! {
        #lint
        fn #name(
            #model_pat: &#model_ty,
            #batch_pat: #batch_ty,
            #[allow(unused_variables)] #config: &#config_name,
        ) -> #output_ty #body
    }
}

/// The model's `TrainStep` and `InferenceStep` impls, from the batch and output types and the
/// two `step` methods; the impl headers sit at `span`, where a wrong output is reported, as
/// they are checked against it too (Burn's bounds on `Output`).
pub fn step_impls(
    model_name: &Ident,
    span: proc_macro2::Span,
    (batch_ty, output_ty): (&dyn quote::ToTokens, &dyn quote::ToTokens),
    (train_step_fn, inference_step_fn): (TokenStream, TokenStream),
) -> TokenStream {
    let train_impl = respan(quote!(impl burn::train::TrainStep for #model_name), span);
    let inference_impl = respan(
        quote!(impl burn::train::InferenceStep for #model_name),
        span,
    );
    quote! {
        #train_impl {
            type Input = #batch_ty;
            type Output = #output_ty;

            #train_step_fn
        }

        #inference_impl {
            type Input = #batch_ty;
            type Output = #output_ty;

            #inference_step_fn
        }
    }
}
