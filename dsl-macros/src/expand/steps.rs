//! A several-optimizer experiment (`optimizers`, `steps`): one function per step, the struct
//! holding each step's output where it ran (the wrapper's output), the step impls, and the
//! forward passes the runtime plays on each batch (`burn_experiment::fit::steps`).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::respan;
use crate::ast::*;
use crate::private::Rt;

/// `<Name>Outputs`: each step's output where it ran.
pub fn outputs_name(name: &Ident) -> Ident {
    format_ident!("__{}Outputs", name)
}

/// Where the one-step expansion names the step, the steps as one: the first step's batch (every
/// step takes the same batch), the model's output as its output. `None` with one step.
pub fn merged_step(exp: &Experiment) -> Option<Step> {
    let steps = exp.steps.as_ref()?;
    let first = &steps.first()?.step;
    let model_name = super::model::model_name(exp.name.as_ref()?);
    let output_ty = respan(
        quote!(<#model_name as #Rt::burn::train::InferenceStep>::Output),
        exp.steps_span,
    );
    Some(Step {
        model_pat: syn::parse_quote!(model),
        batch_pat: syn::parse_quote!(batch),
        batch_ty: first.batch_ty.clone(),
        output_ty: syn::parse2(output_ty).expect("a type"),
        body: syn::parse_quote!(()),
    })
}

/// The function passing `step`'s output through `StepOutput::Checked` (`checked_critic`).
fn checked_fn(step: &NamedStep) -> Ident {
    format_ident!("__dsl_checked_{}", step.name)
}

/// The step function of `step` (`experiment_step_critic`).
fn step_fn(step: &NamedStep) -> Ident {
    format_ident!("__dsl_step_{}", step.name)
}

/// The items of the hidden model module for `steps`: the output struct, one function per
/// step, the step impls and the forward passes.
///
/// The struct is generic over each step's output, and the model's step impls name it with
/// each output passed through `StepOutput::Checked` at the user's output type. An output
/// without a loss is then one error there: the model's `Output` becomes rustc's error type,
/// and every use of it (the forward passes, the metrics) is dropped rather than reported.
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
    let fields: Vec<&Ident> = steps.iter().map(|s| &s.name).collect();
    let params: Vec<Ident> = (0..steps.len()).map(|i| format_ident!("S{i}")).collect();
    // Ours at the `steps` list, each output type at its own tokens: a misspelt type is then
    // rustc's one error at the user's type, not a second one over the whole list.
    let checked = steps.iter().map(|s| {
        let ty = &s.step.output_ty;
        let (open, rest) = (
            respan(quote!(<), exp.steps_span),
            respan(quote!(as #Rt::StepOutput>::Checked), exp.steps_span),
        );
        quote!(#open #ty #rest)
    });
    let (head, open, close, comma) = (
        respan(quote!(#outputs), exp.steps_span),
        respan(quote!(<), exp.steps_span),
        respan(quote!(>), exp.steps_span),
        respan(quote!(,), exp.steps_span),
    );
    let mut args = TokenStream::new();
    for (i, checked) in checked.enumerate() {
        if i > 0 {
            args.extend(comma.clone());
        }
        args.extend(checked);
    }
    let output_ty = quote!(#head #open #args #close);
    // Each step's output passes through `StepOutput::Checked`, as the model's `Output` names
    // it: where it is not a step output, both are rustc's error type, and what uses them is
    // dropped rather than reported again.
    let checks = steps.iter().map(|s| {
        let (ty, f) = (&s.step.output_ty, checked_fn(s));
        // The output type keeps its own tokens (see `checked` above).
        let at = |tokens: TokenStream| respan(tokens, exp.steps_span);
        let (head, param, open, rest, body) = (
            at(quote!(#[doc(hidden)] pub fn #f)),
            at(quote!(output:)),
            at(quote!(-> <)),
            at(quote!(as #Rt::StepOutput>::Checked)),
            at(quote!({ output })),
        );
        let mut params =
            proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, quote!(#param #ty));
        params.set_span(exp.steps_span);
        quote!(#head #params #open #ty #rest #body)
    });
    let functions = steps.iter().map(|s| {
        super::model::step_function(&step_fn(s), model_ty, &s.step, config_name, |output| {
            super::metrics::starved_checks(exp, Some(&s.name), &s.step.output_ty, output)
        })
    });
    // `outputs` with only step `s`'s output, computed from `batch` (an expression).
    let only = |s: &NamedStep, model: TokenStream, batch: TokenStream| {
        let (f, field, checked) = (step_fn(s), &s.name, checked_fn(s));
        let others = fields.iter().filter(|f| **f != field);
        quote! {
            #outputs {
                #field: ::core::option::Option::Some(#model_name::#checked(
                    #f(&#model.model, #batch, &#model.config),
                )),
                #(#others: ::core::option::Option::None,)*
            }
        }
    };
    let plays = steps.iter().map(|s| {
        let play = format_ident!("__dsl_play_{}", s.name);
        let outputs = only(s, quote!(model), quote!(::core::clone::Clone::clone(batch)));
        let output = respan(
            quote!(<#model_name as burn::train::TrainStep>::Output),
            exp.steps_span,
        );
        let body = respan(
            quote! {
                let outputs: #output = #outputs;
                // The loss of the one step that ran, in an f16 run's loss scale.
                let grads = #Rt::backward(#Rt::StepOutput::loss(&outputs));
                (grads, outputs)
            },
            exp.steps_span,
        );
        // The batch type keeps its own tokens: a misspelt one is rustc's one error there.
        let at = |tokens: TokenStream| respan(tokens, exp.steps_span);
        let (head, param, result) = (
            at(quote!(fn #play)),
            at(quote!(model: &#model_name, batch: &)),
            at(quote!(-> (burn::tensor::Gradients, #output) { #body })),
        );
        let mut params = proc_macro2::Group::new(
            proc_macro2::Delimiter::Parenthesis,
            quote!(#param #batch_ty),
        );
        params.set_span(exp.steps_span);
        quote!(#head #params #result)
    });
    let play_names = steps.iter().map(|s| {
        let (label, play) = (s.name.to_string(), format_ident!("__dsl_play_{}", s.name));
        quote!((#label, #play as #Rt::steps::Play<#model_name>))
    });
    let first = only(&steps[0], quote!(self), quote!(batch));
    let every_step = steps.iter().map(|s| {
        let (f, field, checked) = (step_fn(s), &s.name, checked_fn(s));
        quote!(#field: ::core::option::Option::Some(#model_name::#checked(
            #f(&self.model, ::core::clone::Clone::clone(&batch), &self.config),
        )),)
    });
    let loss = quote!(#Rt::StepOutput::loss);
    let steps_fn = respan(
        quote! {
            impl #model_name {
                /// Each step's name and forward pass, in the order they run on a batch.
                #[doc(hidden)]
                pub fn steps() -> ::std::vec::Vec<(&'static str, #Rt::steps::Play<#model_name>)> {
                    ::std::vec![#(#play_names),*]
                }
            }
        },
        exp.steps_span,
    );
    // Every token of the step methods names the output, so all sit where a wrong one is
    // reported: identical errors at one span are reported once.
    let train_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> burn::train::TrainOutput<Self::Output> {
                let outputs: Self::Output = #first;
                let grads = #Rt::backward(#Rt::StepOutput::loss(&outputs));
                burn::train::TrainOutput::new(self, grads, outputs)
            }
        },
        exp.steps_span,
    );
    let inference_step_fn = respan(
        quote! {
            fn step(&self, batch: Self::Input) -> Self::Output {
                #outputs { #(#every_step)* }
            }
        },
        exp.steps_span,
    );
    let step_output = quote!(#Rt::StepOutput);
    let impls = super::model::step_impls(
        model_name,
        exp.steps_span,
        (batch_ty, &output_ty),
        (train_step_fn, inference_step_fn),
    );
    let doc = format!(
        "The output of each step of [`{name}`] where it ran: one step's when training, every step's when validating."
    );
    quote! {
        #[doc = #doc]
        #inner_vis struct #outputs<#(#params),*> {
            #(#[doc = "The step's output, where it ran."] pub #fields: ::core::option::Option<#params>,)*
        }

        impl<#(#params: #step_output),*> burn::train::ItemLazy for #outputs<#(#params),*> {
            fn sync(self) -> ::core::result::Result<Self, burn::tensor::ExecutionError> {
                ::core::result::Result::Ok(Self {
                    #(#fields: self.#fields.map(burn::train::ItemLazy::sync).transpose()?,)*
                })
            }
        }

        #[diagnostic::do_not_recommend]
        impl<#(#params: #step_output),*> #Rt::StepOutput for #outputs<#(#params),*> {
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

        impl #model_name {
            #(#checks)*
        }

        #(#functions)*

        // The fit loop plays each step in turn (`play_*`); Burn's `TrainStep` of the model,
        // which a several-optimizer experiment never hands to Burn's engine, is the first.
        // Validation measures every step's output on each batch.
        #impls

        #(#plays)*

        #steps_fn
    }
}

/// The metric `inner` (boxed for the step's own output) on the run's outputs: `split.step.m`.
pub fn on_step(
    exp: &Experiment,
    step: &NamedStep,
    split: &Ident,
    inner: TokenStream,
) -> TokenStream {
    let model_name = super::model::model_name(exp.name.as_ref().expect("validated"));
    let step_trait = if split == "train" {
        quote!(TrainStep)
    } else {
        quote!(InferenceStep)
    };
    let (label, field) = (step.name.to_string(), &step.name);
    let project = respan(
        quote!(|outputs: &<#model_name as #Rt::burn::train::#step_trait>::Output| outputs.#field.as_ref()),
        exp.steps_span,
    );
    let boxed = respan(quote!(#Rt::metric::OnStep::boxed), exp.steps_span);
    quote!(#boxed(#label, #project, #inner))
}

/// The optimizers' config value: each named optimizer's rate, settings, paths and frequency.
pub fn optimizers_value(exp: &Experiment) -> TokenStream {
    let entries = exp.optimizers.iter().flatten().map(|o| {
        let name = o.name.to_string();
        let (lr, spec) = match &o.optimizer {
            Optimizer::Named { name, lr, args } => (
                lr.as_ref().map_or(quote!(0.0f64), |n| n.tokens("f64")),
                super::values::optimizer_spec(&name.to_string(), args),
            ),
            // Reported by validation; a placeholder for the declarations after an error.
            Optimizer::Expr(_) => (quote!(0.0f64), super::values::optimizer_spec("sgd", &[])),
        };
        let paths =
            o.on.iter()
                .map(|(p, _)| quote!(::std::string::String::from(#p)));
        let step = exp.steps.iter().flatten().find(|s| s.name == o.name);
        let every = step
            .and_then(|s| s.every.as_ref())
            .map_or(1, Number::as_usize);
        let first = super::values::some_or_none(
            step.and_then(|s| s.first.as_ref())
                .map(|n| n.tokens("usize")),
        );
        let in_epoch = step.is_some_and(|s| s.in_epoch);
        quote! {
            (::std::string::String::from(#name), #Rt::NamedOptimizer {
                lr: #lr,
                optimizer: #spec,
                on: ::std::vec![#(#paths),*],
                every: #every,
                first: #first,
                in_epoch: #in_epoch,
            })
        }
    });
    quote!(::std::collections::BTreeMap::from([#(#entries),*]))
}
