//! The hand-over to Burn's `SupervisedTraining`, generated only for experiments with an
//! `engine`, `strategy` or `devices` key.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::Locals;
use super::metrics::{burn_metric, recorded};
use super::model::wrap;
use super::values;
use crate::ast::Experiment;
use crate::private::Rt;

/// The run: `ours` (our fit loop), or Burn's engine when the config asks for it. Only the
/// typed metric registrations are generated; checkpointing and early stopping are built at run
/// time from the run's options, as on our loop.
pub fn hand_over(
    exp: &Experiment,
    model_name: &Ident,
    l: &Locals,
    ours: TokenStream,
) -> TokenStream {
    if !exp.has_burn_engine() {
        return ours;
    }
    let Locals {
        config,
        options,
        model,
        optimizer,
        lr_schedule,
        sources,
        training,
        ..
    } = l;
    let all: Vec<_> = recorded(exp)
        .into_iter()
        .filter(|m| m.split != "test")
        .collect();
    let registrations = all.iter().map(|m| {
        let metric = burn_metric(m);
        if m.split == "train" {
            quote!(let #training = #training.metric_train_numeric(#metric);)
        } else {
            quote!(let #training = #training.metric_valid_numeric(#metric);)
        }
    });
    let recorded = all.iter().map(|m| {
        let metric = burn_metric(m);
        let split = values::split(m);
        let key = m.key();
        quote!(#Rt::engine::Recorded::new(#split, #key, #metric))
    });
    let wrapped = wrap(
        model_name,
        &quote!(#model),
        quote!(::core::clone::Clone::clone(&#config)),
    );
    quote! {
        if #Rt::engine::uses_burn(#config.engine, #config.strategy, #config.devices) {
            #Rt::engine::fit_with_burn(
                #wrapped,
                #optimizer,
                #lr_schedule,
                #options,
                #Rt::engine::devices(device, #config.devices),
                #config.strategy,
                #sources.into_data(),
                |#training| {
                    #(#registrations)*
                    #training
                },
                ::std::vec![#(#recorded),*],
            )
        } else {
            #ours
        }
    }
}
