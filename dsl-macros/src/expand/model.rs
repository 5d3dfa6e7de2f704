//! `<Name>Model`: the user's model in a Burn `Module` with `TrainStep` and `InferenceStep` built
//! from `step`, so two experiments may train the same model type.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;

use super::config::config_name;
use super::{respan, user_config};
use crate::ast::*;
use crate::private::Rt;

pub fn model_name(name: &Ident) -> Ident {
    format_ident!("{}Model", name)
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
    let vis = &exp.vis;
    // Items of the hidden module are visible where the experiment is.
    let inner_vis = match vis {
        syn::Visibility::Inherited => quote!(pub(super)),
        other => quote!(#other),
    };
    let module = format_ident!("__dsl_{}", snake);
    let model_name = model_name(name);
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
                let output = experiment_step(&self.model, batch, &self.config);
                #Rt::train_output(self, output)
            }
        },
        output_span,
    );
    let inference_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> Self::Output {
                experiment_step(&self.model, batch, &self.config)
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
        &Ident::new("experiment_step", proc_macro2::Span::call_site()),
        model_ty,
        step,
        &config_name,
        |output| super::metrics::starved_checks(exp, None, &step.output_ty, output),
    );
    let (step_items, exported) = match &exp.steps {
        Some(steps) => (
            super::steps::items(exp, steps, &model_name, &config_name, &inner_vis),
            quote!(#config_name, #model_name),
        ),
        None => (
            quote! {
                #step_function

                #impls
            },
            quote!(#config_name, #model_name),
        ),
    };
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports)]
        mod #module {
            use super::*;
            use #Rt::burn;

            #config_struct

            #[doc = #doc]
            #[derive(burn::module::Module, Debug)]
            #inner_vis struct #model_name {
                /// The user's model.
                pub model: #model_ty,
                /// The config the model was built with (for a loaded checkpoint, its run's).
                #[module(skip)]
                pub config: ::std::sync::Arc<#config_name>,
            }

            #step_items
        }
        #vis use #module::{#exported};
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
