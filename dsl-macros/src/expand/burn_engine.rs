//! The hand-over to Burn's `SupervisedTraining`, generated only for experiments with an
//! `engine`, `strategy` or `devices` key.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::Locals;
use super::metrics::{burn_metric, recorded};
use super::values;
use crate::ast::*;
use crate::private::Rt;

/// A statement that returns Burn's result when the config asks for Burn's engine.
pub fn hand_over(exp: &Experiment, model_name: &Ident, l: &Locals) -> TokenStream {
    if !exp.has_burn_engine() {
        return quote!();
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
    let all = recorded(exp);
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
        quote!(#Rt::engine::Recorded::new(#split, #key, &#metric))
    });
    let checkpointing = match values::policies(exp) {
        Some(policies) => {
            let adds = policies.iter().map(|p| match p {
                Policy::KeepLast(n) => {
                    let n = n.as_usize();
                    quote!(.add(#Rt::engine::keep_last(#n)))
                }
                Policy::Every(k) => {
                    let k = k.as_usize();
                    quote!(.add(#Rt::engine::every(#k)))
                }
                Policy::Best(m) => {
                    let metric = burn_metric(m);
                    let split = values::split(m);
                    quote!(.add(#Rt::engine::best(&#metric, #split)))
                }
                Policy::None(_) => unreachable!("`policies` drops `none`"),
            });
            quote!(let #training = #training.with_checkpointing_strategy(#Rt::engine::policies() #(#adds)* .build());)
        }
        None => quote!(),
    };
    let early = match &exp.early_stopping {
        Some(rule) => {
            let metric = burn_metric(&rule.metric);
            let split = values::split(&rule.metric);
            let n = rule.patience.as_usize();
            quote!(let #training = #training.early_stopping(#Rt::engine::patience(&#metric, #split, #n));)
        }
        None => quote!(),
    };
    quote! {
        if #Rt::engine::uses_burn(#config.engine, #config.strategy, #config.devices) {
            return #Rt::engine::fit_with_burn(
                #model_name { model: #model },
                #optimizer,
                #lr_schedule,
                #options,
                #Rt::engine::devices(device, #config.devices),
                #config.strategy,
                #sources.into_data(),
                |#training| {
                    #(#registrations)*
                    #checkpointing
                    #early
                    #training
                },
                ::std::vec![#(#recorded),*],
            );
        }
    }
}
