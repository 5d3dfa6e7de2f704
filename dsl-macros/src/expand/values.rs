//! The macro's values as runtime values: numbers, optimizer and schedule specs, policies.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::*;
use crate::private::Rt;

pub fn some_or_none(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

pub fn opt_u64(n: &Option<Number>) -> TokenStream {
    some_or_none(n.as_ref().map(|n| n.tokens("u64")))
}

pub fn opt_usize(n: &Option<Number>) -> TokenStream {
    some_or_none(n.as_ref().map(|n| n.tokens("usize")))
}

pub fn split(metric: &MetricRef) -> TokenStream {
    if metric.split == "train" {
        quote!(#Rt::Split::Train)
    } else {
        quote!(#Rt::Split::Valid)
    }
}

/// `OptimizerSpec` of a named optimizer; arguments left out get Burn's defaults.
pub fn optimizer_spec(name: &str, args: &[(syn::Ident, Number)]) -> TokenStream {
    let spec = burn_experiment_vocabulary::optimizer::named(name).expect("parsed names are known");
    let value = |key: &str| {
        args.iter()
            .find(|(k, _)| spec.arg(&k.to_string()).is_some_and(|a| a.name == key))
            .map(|(_, n)| n)
    };
    let f32_or = |key: &str, default: f32| value(key).map_or(quote!(#default), |n| n.tokens("f32"));
    let opt_f32 = |key: &str| some_or_none(value(key).map(|n| n.tokens("f32")));
    match name {
        "sgd" => {
            let momentum = some_or_none(value("momentum").map(|m| m.tokens("f64")));
            let weight_decay = opt_f32("weight_decay");
            quote!(#Rt::OptimizerSpec::Sgd { momentum: #momentum, weight_decay: #weight_decay })
        }
        // Burn's defaults, from each optimizer's config in burn-optim.
        "rmsprop" => {
            let (alpha, momentum, eps) = (
                f32_or("alpha", 0.99),
                f32_or("momentum", 0.9),
                f32_or("epsilon", 1e-5),
            );
            let weight_decay = opt_f32("weight_decay");
            quote!(#Rt::OptimizerSpec::RmsProp { alpha: #alpha, momentum: #momentum, epsilon: #eps, weight_decay: #weight_decay })
        }
        "adagrad" => {
            let lr_decay = value("lr_decay").map_or(quote!(0.0f64), |n| n.tokens("f64"));
            let eps = f32_or("epsilon", 1e-5);
            let weight_decay = opt_f32("weight_decay");
            quote!(#Rt::OptimizerSpec::AdaGrad { lr_decay: #lr_decay, epsilon: #eps, weight_decay: #weight_decay })
        }
        "lion" => {
            let (b1, b2) = (f32_or("beta_1", 0.9), f32_or("beta_2", 0.99));
            let weight_decay = f32_or("weight_decay", 0.0);
            quote!(#Rt::OptimizerSpec::Lion { beta_1: #b1, beta_2: #b2, weight_decay: #weight_decay })
        }
        "lamb" => {
            let (b1, b2, eps) = (
                f32_or("beta_1", 0.9),
                f32_or("beta_2", 0.999),
                f32_or("epsilon", 1e-6),
            );
            let weight_decay = f32_or("weight_decay", 0.0);
            quote!(#Rt::OptimizerSpec::Lamb { beta_1: #b1, beta_2: #b2, epsilon: #eps, weight_decay: #weight_decay })
        }
        _ => {
            let (b1, b2, eps) = (
                f32_or("beta_1", 0.9),
                f32_or("beta_2", 0.999),
                f32_or("epsilon", 1e-5),
            );
            if name == "adam" {
                let weight_decay = opt_f32("weight_decay");
                quote!(#Rt::OptimizerSpec::Adam { beta_1: #b1, beta_2: #b2, epsilon: #eps, weight_decay: #weight_decay })
            } else {
                let weight_decay = f32_or("weight_decay", 1e-4);
                quote!(#Rt::OptimizerSpec::AdamW { beta_1: #b1, beta_2: #b2, epsilon: #eps, weight_decay: #weight_decay })
            }
        }
    }
}

pub fn schedule(schedule: &Schedule) -> TokenStream {
    match schedule {
        Schedule::Constant => quote!(#Rt::Schedule::Constant),
        // Spanned at the user's expression: a value that is no scheduler config is an error
        // there alone.
        Schedule::Burn(expr) => {
            let span = syn::spanned::Spanned::span(expr);
            let method = super::respan(quote!(#Rt::BurnScheduler::into_schedule), span);
            quote::quote_spanned!(span=> #method(#expr))
        }
        Schedule::Cosine { min } => {
            let v = min.tokens("f64");
            quote!(#Rt::Schedule::Cosine { min_lr: #v })
        }
        Schedule::Linear { final_lr } => {
            let v = final_lr.tokens("f64");
            quote!(#Rt::Schedule::Linear { final_lr: #v })
        }
        Schedule::Exponential { gamma } => {
            let v = gamma.tokens("f64");
            quote!(#Rt::Schedule::Exponential { gamma: #v })
        }
        Schedule::Step {
            every,
            epochs,
            gamma,
        } => {
            let (n, g) = (every.tokens("usize"), gamma.tokens("f64"));
            if *epochs {
                quote!(#Rt::Schedule::StepEpochs { epochs: #n, gamma: #g })
            } else {
                quote!(#Rt::Schedule::Step { step_size: #n, gamma: #g })
            }
        }
        Schedule::Plateau {
            metric,
            factor,
            patience,
        } => {
            let split = split(metric);
            let key = metric.key();
            let (factor, patience) = (factor.tokens("f64"), patience.tokens("usize"));
            quote!(#Rt::Schedule::Plateau {
                split: #split,
                metric: ::std::string::String::from(#key),
                factor: #factor,
                patience: #patience,
            })
        }
        Schedule::WarmUp { steps, then } => {
            let n = steps.tokens("usize");
            let then = self::schedule(then);
            quote!(#Rt::Schedule::WarmUp { steps: #n, then: ::std::boxed::Box::new(#then) })
        }
    }
}

pub fn grad_clip(clip: &Option<Clip>) -> TokenStream {
    some_or_none(clip.as_ref().map(|clip| match clip {
        Clip::Norm(n) => {
            let v = n.tokens("f64");
            quote!(#Rt::GradClip::Norm(#v))
        }
        Clip::ParamNorm(n) => {
            let v = n.tokens("f32");
            quote!(#Rt::GradClip::ParamNorm(#v))
        }
        Clip::Value(n) => {
            let v = n.tokens("f32");
            quote!(#Rt::GradClip::Value(#v))
        }
    }))
}

pub fn early_stopping(rule: &Option<Patience>) -> TokenStream {
    some_or_none(rule.as_ref().map(|rule| {
        let split = split(&rule.metric);
        let key = rule.metric.key();
        let patience = rule.patience.tokens("usize");
        let delta = rule
            .min_delta
            .as_ref()
            .map_or_else(|| quote!(0.0f64), |n| n.tokens("f64"));
        quote!(#Rt::EarlyStopping {
            split: #split,
            metric: ::std::string::String::from(#key),
            patience: #patience,
            min_delta: #delta,
        })
    }))
}

/// The checkpoint policies, `None` for `checkpoint: none` or no `checkpoint` key.
pub fn policies(exp: &Experiment) -> Option<&[Policy]> {
    match &exp.checkpoint {
        Some(p) if !p.iter().any(|p| matches!(p, Policy::None(_))) => Some(p),
        _ => None,
    }
}

pub fn checkpoint(exp: &Experiment) -> TokenStream {
    some_or_none(policies(exp).map(|policies| {
        let policies = policies.iter().map(|p| match p {
            Policy::KeepLast(n) => {
                let n = n.tokens("usize");
                quote!(#Rt::Policy::KeepLast { n: #n })
            }
            Policy::Every(k) => {
                let k = k.tokens("usize");
                quote!(#Rt::Policy::Every { k: #k })
            }
            Policy::Best(m) => {
                let split = split(m);
                let key = m.key();
                quote!(#Rt::Policy::Best { split: #split, metric: ::std::string::String::from(#key) })
            }
            Policy::None(_) => unreachable!("`policies` drops `none`"),
        });
        quote!(::std::vec![#(#policies),*])
    }))
}

pub fn resume(resume: &Option<ResumeFrom>) -> TokenStream {
    some_or_none(resume.as_ref().map(|r| match r {
        ResumeFrom::Latest(_) => quote!(#Rt::Resume::Latest),
        ResumeFrom::Epoch(n) => {
            let n = n.as_usize();
            quote!(#Rt::Resume::Epoch(#n))
        }
    }))
}
