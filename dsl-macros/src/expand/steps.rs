//! A several-optimizer experiment (`optimizers`, `steps`): one function per step, the struct
//! holding each step's output where it ran (the wrapper's output), the step impls, and the
//! forward passes the runtime plays on each batch (`dsl_runtime::fit::steps`).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;

use super::respan;
use crate::ast::*;
use crate::private::Rt;

/// `<Name>Outputs`: each step's output where it ran.
pub fn outputs_name(name: &Ident) -> Ident {
    format_ident!("{}Outputs", name)
}

/// Where the one-step expansion names the step, the steps as one: the first step's batch (every
/// step takes the same batch), the outputs struct as its output. `None` with one step.
pub fn merged_step(exp: &Experiment) -> Option<Step> {
    let steps = exp.steps.as_ref()?;
    let first = &steps.first()?.step;
    let outputs = outputs_name(exp.name.as_ref()?);
    Some(Step {
        model_pat: syn::parse_quote!(model),
        batch_pat: syn::parse_quote!(batch),
        batch_ty: first.batch_ty.clone(),
        output_ty: syn::parse_quote!(#outputs),
        body: syn::parse_quote!(()),
    })
}

/// The step function of `step` (`experiment_step_critic`).
fn step_fn(step: &NamedStep) -> Ident {
    format_ident!("experiment_step_{}", step.name)
}

/// The items of the hidden model module for `steps`: the output struct, one function per
/// step, the step impls and the forward passes. `config` names the run's config as the bodies
/// read it.
pub fn items(
    exp: &Experiment,
    steps: &[NamedStep],
    model_name: &Ident,
    config_name: &Ident,
    inner_vis: &TokenStream,
) -> TokenStream {
    let name = exp.name.as_ref().expect("validated");
    let model_ty = &exp.model.as_ref().expect("validated").ty;
    let outputs = outputs_name(name);
    let batch_ty = &steps[0].step.batch_ty;
    let config = super::user_config();
    let fields: Vec<&Ident> = steps.iter().map(|s| &s.name).collect();
    // Each output named through `StepOutput::Checked` at the user's output type: a type
    // without a loss is one error there.
    let checked: Vec<TokenStream> = steps
        .iter()
        .map(|s| {
            let ty = &s.step.output_ty;
            respan(quote!(<#ty as #Rt::StepOutput>::Checked), ty.span())
        })
        .collect();
    let functions = steps.iter().map(|s| {
        let Step {
            model_pat,
            batch_pat,
            batch_ty,
            output_ty,
            body,
        } = &s.step;
        let body = match body {
            syn::Expr::Block(block) => quote!(#block),
            other => quote!({ #other }),
        };
        let f = step_fn(s);
        quote! {
            fn #f(
                #model_pat: &#model_ty,
                #batch_pat: #batch_ty,
                #[allow(unused_variables)] #config: &#config_name,
            ) -> #output_ty #body
        }
    });
    let plays = steps.iter().map(|s| {
        let (f, field) = (step_fn(s), &s.name);
        let play = format_ident!("play_{}", s.name);
        let others = fields.iter().filter(|f| **f != field);
        let call = respan(
            quote!(#f(&model.model, ::core::clone::Clone::clone(batch), &model.config)),
            s.step.batch_ty.span(),
        );
        quote! {
            fn #play(model: &#model_name, batch: &#batch_ty) -> (burn::tensor::Gradients, #outputs) {
                let output = #call;
                let grads = #Rt::StepOutput::loss(&output).backward();
                let outputs = #outputs {
                    #field: ::core::option::Option::Some(output),
                    #(#others: ::core::option::Option::None,)*
                };
                (grads, outputs)
            }
        }
    });
    let play_names = steps.iter().map(|s| {
        let (label, play) = (s.name.to_string(), format_ident!("play_{}", s.name));
        quote!((#label, #play as #Rt::steps::Play<#model_name>))
    });
    let first = &steps[0];
    let (first_fn, first_field) = (step_fn(first), &first.name);
    let first_others = fields.iter().filter(|f| **f != first_field);
    let every_step = steps.iter().map(|s| {
        let (f, field) = (step_fn(s), &s.name);
        quote!(#field: ::core::option::Option::Some(#f(&self.model, ::core::clone::Clone::clone(&batch), &self.config)),)
    });
    let loss = quote!(#Rt::StepOutput::loss);
    let doc = format!(
        "The output of each step of [`{name}`] where it ran: one step's when training, every step's when validating."
    );
    quote! {
        #[doc = #doc]
        #inner_vis struct #outputs {
            #(#[doc = "The step's output, where it ran."] pub #fields: ::core::option::Option<#checked>,)*
        }

        impl burn::train::ItemLazy for #outputs {
            fn sync(self) -> ::core::result::Result<Self, burn::tensor::ExecutionError> {
                ::core::result::Result::Ok(Self {
                    #(#fields: self.#fields.map(burn::train::ItemLazy::sync).transpose()?,)*
                })
            }
        }

        impl #Rt::StepOutput for #outputs {
            type Checked = Self;

            /// The sum of the losses of the steps that ran.
            fn loss(&self) -> burn::tensor::Tensor<1> {
                let losses = [#(self.#fields.as_ref().map(#loss),)*];
                losses
                    .into_iter()
                    .flatten()
                    .reduce(|sum, loss| sum + loss)
                    .expect("a step ran")
            }
        }

        #(#functions)*

        // The fit loop plays each step in turn (`play_*`); Burn's `TrainStep` of the model,
        // which a several-optimizer experiment never hands to Burn's engine, is the first.
        impl burn::train::TrainStep for #model_name {
            type Input = #batch_ty;
            type Output = #outputs;

            fn step(&self, batch: Self::Input) -> burn::train::TrainOutput<Self::Output> {
                let output = #first_fn(&self.model, batch, &self.config);
                let grads = #Rt::StepOutput::loss(&output).backward();
                let outputs = #outputs {
                    #first_field: ::core::option::Option::Some(output),
                    #(#first_others: ::core::option::Option::None,)*
                };
                burn::train::TrainOutput::new(self, grads, outputs)
            }
        }

        // Validation measures every step's output on each batch.
        impl burn::train::InferenceStep for #model_name {
            type Input = #batch_ty;
            type Output = #outputs;

            fn step(&self, batch: Self::Input) -> Self::Output {
                #outputs { #(#every_step)* }
            }
        }

        #(#plays)*

        impl #model_name {
            /// Each step's name and forward pass, in the order they run on a batch.
            #[doc(hidden)]
            pub fn steps() -> ::std::vec::Vec<(&'static str, #Rt::steps::Play<#model_name>)> {
                ::std::vec![#(#play_names),*]
            }
        }
    }
}

/// The metric `inner` (boxed for the step's own output) on the outputs struct: `split.step.m`.
pub fn on_step(exp: &Experiment, step: &Ident, inner: TokenStream) -> TokenStream {
    let outputs = outputs_name(exp.name.as_ref().expect("validated"));
    let label = step.to_string();
    quote!(#Rt::metric::OnStep::boxed(#label, |outputs: &#outputs| outputs.#step.as_ref(), #inner))
}

/// The optimizers' config value: each named optimizer's rate, settings, paths and frequency.
pub fn optimizers_value(exp: &Experiment) -> TokenStream {
    let entries = exp.optimizers.iter().flatten().map(|o| {
        let name = o.name.to_string();
        let (lr, spec) = match &o.optimizer {
            Optimizer::Named { name, lr, args } => (
                lr.as_ref().map_or(0.0, |n| n.value),
                super::values::optimizer_spec(&name.to_string(), args),
            ),
            // Reported by validation; a placeholder for the declarations after an error.
            Optimizer::Expr(_) => (0.0, super::values::optimizer_spec("sgd", &[])),
        };
        let paths =
            o.on.iter()
                .map(|(p, _)| quote!(::std::string::String::from(#p)));
        let every = exp
            .steps
            .iter()
            .flatten()
            .find(|s| s.name == o.name)
            .and_then(|s| s.every.as_ref())
            .map_or(1, Number::as_usize);
        quote! {
            (::std::string::String::from(#name), #Rt::NamedOptimizer {
                lr: #lr,
                optimizer: #spec,
                on: ::std::vec![#(#paths),*],
                every: #every,
            })
        }
    });
    quote!(::std::collections::BTreeMap::from([#(#entries),*]))
}
