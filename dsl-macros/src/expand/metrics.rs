//! Metric registrations: each metric is boxed through `Measurable` under the span of the
//! user's metric name, the one place a step output that cannot feed it is reported.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::respan;
use crate::ast::*;
use crate::catalog::{self, MetricType};
use crate::private::Rt;
use crate::validate::default_metrics;

/// The recorded metrics: `metrics`, or `[train.loss, valid.loss]` when it is absent.
pub fn recorded(exp: &Experiment) -> Vec<MetricRef> {
    exp.metrics.clone().unwrap_or_else(|| default_metrics(exp))
}

/// The runtime constructor of a metric (`metric::top_k(5)`; `Tracked::new(key, expr)` for the
/// user's own).
pub fn constructor(m: &MetricRef) -> TokenStream {
    if let Some(expr) = &m.custom {
        let key = m.metric_key();
        return quote_spanned!(expr.span()=> #Rt::metric::Tracked::new(#key, #expr));
    }
    let spec = catalog::metric(&m.name.to_string()).expect("validated");
    let f = Ident::new(spec.constructor, Span::call_site());
    let arg = m.arg.as_ref().map(|a| match spec.arg {
        catalog::MetricArg::Count => {
            let k = a.as_usize();
            quote!(#k)
        }
        _ => {
            let v = a.value;
            quote!(#v)
        }
    });
    quote!(#Rt::metric::#f(#arg))
}

/// The metric's type, every token at `span`.
fn metric_type(m: &MetricRef, span: Span) -> TokenStream {
    let spec = catalog::metric(&m.name.to_string()).expect("validated");
    match spec.burn_type {
        MetricType::Ours(ty) => {
            let ty = Ident::new(ty, span);
            quote_spanned!(span=> #Rt::metric::#ty)
        }
        MetricType::Burn(ty) => {
            let ty = Ident::new(ty, span);
            quote_spanned!(span=> #Rt::burn::train::metric::#ty)
        }
    }
}

/// `m`, boxed for the step output of `model_name` (the training step's for `train.*`, the
/// inference step's otherwise): through `Measurable` at the metric's name, or `MeasurableBy`
/// at the user's own metric expression, whose tokens keep their spans.
///
/// A metric of one step of a several-optimizer experiment (`train.critic.loss`) is boxed for
/// that step's output and reads it from the run's outputs struct.
pub fn boxed(exp: &Experiment, m: &MetricRef, model_name: &Ident) -> TokenStream {
    let step = m
        .step
        .as_ref()
        .and_then(|name| exp.steps.iter().flatten().find(|s| s.name == *name));
    if let Some(step) = step {
        // The step's output is whatever the run's outputs hold for it: `_`, found from the
        // projection, so that a wrong output is reported once, at its type.
        let inner = match starves(&step.step.output_ty, m) {
            true => quote!(#Rt::never_fed::<_>()),
            false => boxed_for(m, quote!(_)),
        };
        return super::steps::on_step(exp, step, &m.split, inner);
    }
    let step = if m.split == "train" {
        quote!(TrainStep)
    } else {
        quote!(InferenceStep)
    };
    let output = quote!(<#model_name as #Rt::burn::train::#step>::Output);
    match exp.step.as_ref().is_some_and(|s| starves(&s.output_ty, m)) {
        true => quote!(#Rt::never_fed::<#output>()),
        false => boxed_for(m, output),
    }
}

/// The Burn output `ty` names: a bare name of one, or a path through `burn`.
fn burn_output(ty: &syn::Type) -> Option<&'static str> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let segments = &path.path.segments;
    let last = segments.last()?;
    let through_burn = segments.len() == 1 || segments[0].ident == "burn";
    if path.qself.is_some() || !through_burn || !last.arguments.is_empty() {
        return None;
    }
    catalog::BURN_OUTPUTS.into_iter().find(|o| last.ident == o)
}

/// Whether a step declared to return `output_ty` cannot feed the built-in metric `m`: that
/// output is one of Burn's, and Burn's types do not let it feed `m` (the catalogue knows).
fn starves(output_ty: &syn::Type, m: &MetricRef) -> bool {
    let Some(output) = burn_output(output_ty) else {
        return false;
    };
    m.custom.is_none()
        && catalog::metric(&m.name.to_string()).is_some_and(|s| !s.compiles_with(output))
}

/// The checks `Measurable::feeds` makes at the body of a step declared to return `output_ty` (the
/// step `step` of several, or the one step), one per recorded metric it starves, each at the
/// metric's name: the body's type must feed them, and a declared type written by mistake is
/// one mismatch at the body rather than one more error at each metric.
pub fn starved_checks(
    exp: &Experiment,
    step: Option<&Ident>,
    output_ty: &syn::Type,
    output: &TokenStream,
) -> Vec<TokenStream> {
    recorded(exp)
        .iter()
        .filter(|m| m.step.as_ref() == step && starves(output_ty, m))
        .map(|m| {
            let span = m.name.span();
            let metric = metric_type(m, span);
            respan(
                quote!(<_ as #Rt::Measurable<#metric>>::feeds(&#output);),
                span,
            )
        })
        .collect()
}

/// `m` boxed for the step output `output`.
fn boxed_for(m: &MetricRef, output: TokenStream) -> TokenStream {
    let ctor = constructor(m);
    match &m.custom {
        Some(expr) => {
            let span = expr.span();
            let boxed = respan(quote!(<#output as #Rt::MeasurableBy<_>>::boxed), span);
            quote_spanned!(span=> #boxed(#ctor))
        }
        None => {
            let span = m.name.span();
            let metric = metric_type(m, span);
            respan(
                quote!(<#output as #Rt::Measurable<#metric>>::boxed(#ctor)),
                span,
            )
        }
    }
}

/// `.train_metric(..)` / `.valid_metric(..)` calls on a `Fit` (test metrics are measured
/// after it returns).
pub fn registrations(exp: &Experiment, model_name: &Ident) -> Vec<TokenStream> {
    recorded(exp)
        .iter()
        .filter(|m| m.split != "test")
        .map(|m| {
            let boxed = boxed(exp, m, model_name);
            if m.split == "train" {
                quote!(.train_metric(#boxed))
            } else {
                quote!(.valid_metric(#boxed))
            }
        })
        .collect()
}

/// The boxed metrics of `split` (`valid` for `evaluate`, `test`).
pub fn boxes(exp: &Experiment, split: &str, model_name: &Ident) -> Vec<TokenStream> {
    recorded(exp)
        .iter()
        .filter(|m| m.split == split)
        .map(|m| boxed(exp, m, model_name))
        .collect()
}

/// The Burn metric a metric name stands for, as an expression (Burn's `LossMetric` for `loss`:
/// our sample-weighted loss emits no per-step entries for Burn's loggers).
pub fn burn_metric(m: &MetricRef) -> TokenStream {
    if m.name == "loss" && m.custom.is_none() {
        quote!(#Rt::burn::train::metric::LossMetric::new())
    } else {
        let ctor = constructor(m);
        quote!(#ctor.into_inner())
    }
}
