//! `<Name>Config`: one record per config key feeds the struct, its defaults and the run options.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::values;
use crate::ast::*;
use crate::private::Rt;

/// One field of `<Name>Config`.
pub struct ConfigKey {
    pub name: &'static str,
    doc: &'static str,
    ty: TokenStream,
    /// The value written in `training!` (or the key's default).
    default: TokenStream,
    /// How the value reaches `FitOptions`, by field name: `Clone` for a value copied over,
    /// `Path` for the artifacts folder; `None` for keys the expansion reads itself (the
    /// learning rate and the optimizer build the optimizer; the seed seeds the device).
    to_option: Option<ToOption>,
}

#[derive(Clone, Copy)]
enum ToOption {
    Clone,
    Path,
    /// An optional path (`init_from`).
    OptionalPath,
    /// Paths of the user's model, which is the field `model` of the run's model.
    ModelPaths,
}

impl ConfigKey {
    fn new(name: &'static str, doc: &'static str, ty: TokenStream, default: TokenStream) -> Self {
        Self {
            name,
            doc,
            ty,
            default,
            to_option: Some(ToOption::Clone),
        }
    }

    /// The key is read by the expansion, not passed to `FitOptions`.
    fn expansion_only(self) -> Self {
        Self {
            to_option: None,
            ..self
        }
    }

    fn ident(&self) -> Ident {
        Ident::new(self.name, Span::call_site())
    }
}

/// Every config key of `exp`, in the order of the struct. Works on any parsed experiment (values
/// that are missing or rejected get a placeholder), so the dummy expansion after an error
/// declares the same config type as a valid one.
pub fn keys(exp: &Experiment) -> Vec<ConfigKey> {
    let loader = exp.loader.as_ref();
    let number = |n: Option<&Number>, fallback: usize| {
        n.map_or_else(|| quote!(#fallback), |n| n.tokens("usize"))
    };
    let epochs = number(exp.epochs.as_ref(), 1);
    let batch_size = number(loader.and_then(|l| l.batch_size.as_ref()), 1);
    let workers = number(loader.and_then(|l| l.workers.as_ref()), 0);
    let shuffle = values::opt_u64(&loader.and_then(|l| l.shuffle.clone()));
    let option = |ty: TokenStream| quote!(::core::option::Option<#ty>);
    let lr = match &exp.optimizer {
        Some(Optimizer::Named { lr, .. }) => lr.as_ref(),
        _ => exp.lr.as_ref(),
    }
    .map_or_else(|| quote!(0.0f64), |n| n.tokens("f64"));
    let artifacts = exp
        .artifacts
        .as_ref()
        .map_or_else(|| "artifacts".to_owned(), |s| s.value());
    let schedule = exp
        .lr_schedule
        .as_ref()
        .map_or_else(|| quote!(#Rt::Schedule::Constant), values::schedule);

    let mut keys = vec![
        ConfigKey::new(
            "epochs",
            "Last epoch to train.",
            quote!(usize),
            quote!(#epochs),
        ),
        ConfigKey::new(
            "batch_size",
            "Samples per batch.",
            quote!(usize),
            quote!(#batch_size),
        ),
        ConfigKey::new(
            "shuffle",
            "Shuffle seed of the training split; `None` keeps dataset order.",
            option(quote!(u64)),
            shuffle,
        ),
        ConfigKey::new(
            "workers",
            "Threads building batches ahead of training.",
            quote!(usize),
            quote!(#workers),
        ),
    ];
    if exp.steps.is_some() || exp.optimizers.is_some() {
        keys.push(
            ConfigKey::new(
                "optimizers",
                "Each optimizer by name: its base rate, settings, the module paths it owns and how often its step runs.",
                quote!(::std::collections::BTreeMap<::std::string::String, #Rt::NamedOptimizer>),
                super::steps::optimizers_value(exp),
            )
            .expansion_only(),
        );
    } else if exp.burn_schedule().is_none() {
        keys.push(
            ConfigKey::new("lr", "Base learning rate.", quote!(f64), quote!(#lr)).expansion_only(),
        );
    }
    if let Some(Optimizer::Named { name, args, .. }) = &exp.optimizer {
        keys.push(
            ConfigKey::new(
                "optimizer",
                "The optimizer and its settings.",
                quote!(#Rt::OptimizerSpec),
                values::optimizer_spec(&name.to_string(), args),
            )
            .expansion_only(),
        );
    }
    keys.extend([
        ConfigKey::new(
            "lr_schedule",
            "How the learning rate moves over the run.",
            quote!(#Rt::Schedule),
            schedule,
        )
        .expansion_only(),
        ConfigKey::new(
            "grad_accumulation",
            "Batches per optimizer step.",
            option(quote!(usize)),
            values::opt_usize(&exp.grad_accumulation),
        ),
        ConfigKey::new(
            "grad_clip",
            "Gradient clipping.",
            option(quote!(#Rt::GradClip)),
            values::grad_clip(&exp.grad_clip),
        ),
        ConfigKey::new(
            "early_stopping",
            "Early stopping rule.",
            option(quote!(#Rt::EarlyStopping)),
            values::early_stopping(&exp.early_stopping),
        ),
        ConfigKey::new(
            "seed",
            "Seed of the device RNG, set before the model is initialised, and of each training step's random numbers.",
            option(quote!(u64)),
            values::opt_u64(&exp.seed),
        ),
        ConfigKey {
            to_option: Some(ToOption::Path),
            ..ConfigKey::new(
                "artifacts",
                "Root folder of run directories.",
                quote!(::std::string::String),
                quote!(::std::string::String::from(#artifacts)),
            )
        },
        ConfigKey::new(
            "checkpoint",
            "Checkpoint policies; `None` writes no checkpoint.",
            option(quote!(::std::vec::Vec<#Rt::Policy>)),
            values::checkpoint(exp),
        ),
        ConfigKey::new(
            "run",
            "The run to resume or load (`run-3` or `3`); the newest when `None`. A fresh run gets a new `run-<N>`.",
            option(quote!(::std::string::String)),
            quote!(::core::option::Option::None),
        ),
        ConfigKey::new(
            "resume",
            "Where the run continues from.",
            option(quote!(#Rt::Resume)),
            values::resume(&exp.resume),
        ),
        ConfigKey {
            to_option: Some(ToOption::OptionalPath),
            ..ConfigKey::new(
                "init_from",
                "Weights a fresh run starts from (safetensors, or a run's `checkpoint/model-N.bpk`).",
                option(quote!(::std::string::String)),
                values::some_or_none(exp.init_from.as_ref().map(|path| {
                    let path = path.value();
                    quote!(::std::string::String::from(#path))
                })),
            )
        },
        ConfigKey {
            to_option: Some(ToOption::ModelPaths),
            ..ConfigKey::new(
                "freeze",
                "Module paths of the model that are not trained (until `unfreeze`).",
                quote!(::std::vec::Vec<::std::string::String>),
                {
                    let paths = exp.freeze.iter().flatten().map(|(path, _)| path);
                    quote!(::std::vec![#(::std::string::String::from(#paths)),*])
                },
            )
        },
        ConfigKey::new(
            "groups",
            "Module paths of the model with their own base learning rate (the schedule, scaled).",
            quote!(::std::vec::Vec<#Rt::GroupLr>),
            {
                let groups = exp.groups.iter().flatten().map(|(path, _, lr)| {
                    let lr = lr.value;
                    quote!(#Rt::GroupLr { path: ::std::string::String::from(#path), lr: #lr })
                });
                quote!(::std::vec![#(#groups),*])
            },
        )
        .expansion_only(),
        ConfigKey::new(
            "lora",
            "LoRA adapters on some layers of the model (Burn's `apply_lora`); `None`: full training.",
            option(quote!(#Rt::LoraSpec)),
            values::some_or_none(exp.lora.as_ref().map(|l| {
                let rank = l.rank.as_ref().map_or(1, Number::as_usize);
                let alpha = l.alpha.as_ref().map_or(rank as f64, |a| a.value);
                let on = l.on.iter().map(|(path, _)| path);
                quote!(#Rt::LoraSpec {
                    rank: #rank,
                    alpha: #alpha,
                    on: ::std::vec![#(::std::string::String::from(#on)),*],
                })
            })),
        )
        .expansion_only(),
        ConfigKey::new(
            "gradient_checkpointing",
            "Recompute activations in the backward pass (Burn's balanced gradient checkpointing): less memory, the same gradients.",
            quote!(bool),
            {
                let on = exp.gradient_checkpointing.as_ref().is_some_and(|b| b.value);
                quote!(#on)
            },
        ),
        ConfigKey::new(
            "precision",
            "The float type of each step's forward and backward passes and of validation: `f32`, `bf16` or `f16` (loss-scaled); the optimizer steps f32 weights.",
            quote!(#Rt::Precision),
            match exp.precision.as_ref().map(ToString::to_string).as_deref() {
                Some("bf16") => quote!(#Rt::Precision::Bf16),
                Some("f16") => quote!(#Rt::Precision::F16),
                _ => quote!(#Rt::Precision::F32),
            },
        ),
        ConfigKey::new(
            "ema",
            "Decay of a moving average of the weights, which validation, `best` and loading use; `None`: no average.",
            option(quote!(f64)),
            values::some_or_none(exp.ema.as_ref().map(|n| n.tokens("f64"))),
        ),
        ConfigKey {
            to_option: Some(ToOption::ModelPaths),
            ..ConfigKey::new(
                "ema_on",
                "Module paths of the model the moving average covers; empty: every parameter.",
                quote!(::std::vec::Vec<::std::string::String>),
                {
                    let paths = exp.ema_on.iter().flatten().map(|(path, _)| path);
                    quote!(::std::vec![#(::std::string::String::from(#paths)),*])
                },
            )
        },
        ConfigKey::new(
            "device",
            "The device `cli()` trains on: `flex`, `cpu`, `ndarray`, `cuda:N`, `wgpu` (the backend's cargo feature must be on).",
            quote!(::std::string::String),
            {
                let device = exp.device.as_ref().map_or_else(|| "flex".to_owned(), |d| d.value());
                quote!(::std::string::String::from(#device))
            },
        )
        .expansion_only(),
        ConfigKey::new(
            "unfreeze",
            "The epoch the frozen paths train again from; `None`: the whole run.",
            option(quote!(usize)),
            values::opt_usize(&exp.unfreeze),
        ),
    ]);
    if exp.has_burn_engine() {
        keys.extend(engine_keys(exp));
    }
    keys
}

/// `engine`, `strategy` and `devices`: only in experiments that name one of them.
fn engine_keys(exp: &Experiment) -> [ConfigKey; 3] {
    let engine = match &exp.engine {
        Some(e) if e == "burn" => quote!(#Rt::engine::Engine::Burn),
        _ => quote!(#Rt::engine::Engine::Ours),
    };
    let strategy = match exp.strategy.as_ref().map(ToString::to_string).as_deref() {
        Some("multi") => quote!(#Rt::engine::Strategy::Multi),
        Some("ddp") => quote!(#Rt::engine::Strategy::Ddp),
        _ => quote!(#Rt::engine::Strategy::Single),
    };
    let devices = exp.devices.as_ref().map_or(1, Number::as_usize);
    [
        ConfigKey::new(
            "engine",
            "`ours` (our fit loop) or `burn` (Burn's `SupervisedTraining`).",
            quote!(#Rt::engine::Engine),
            engine,
        )
        .expansion_only(),
        ConfigKey::new(
            "strategy",
            "Burn's execution strategy: `single`, `multi` or `ddp`.",
            quote!(#Rt::engine::Strategy),
            strategy,
        )
        .expansion_only(),
        ConfigKey::new(
            "devices",
            "Number of devices; more than one runs on Burn's engine.",
            quote!(usize),
            quote!(#devices),
        )
        .expansion_only(),
    ]
}

/// The experiment's hyperparameters that become fields: after an error, one named like a
/// built-in key or declared twice is left out, so the validator's error stays the only one.
fn own_fields(exp: &Experiment) -> impl Iterator<Item = &Hparam> + Clone {
    let all = exp.hparams();
    all.iter()
        .enumerate()
        .filter_map(move |(i, h)| crate::validate::hparam_clash(all, i).is_none().then_some(h))
}

/// The config struct and its `Default` (the values written in `training!`).
/// `vis` is where it is declared from: the experiment's own visibility where it is declared
/// beside the experiment, `pub(super)` for a private experiment's config declared in its hidden
/// module (`model::model_module`).
pub fn config_struct(
    exp: &Experiment,
    name: &Ident,
    keys: &[ConfigKey],
    vis: &TokenStream,
) -> TokenStream {
    let config_name = config_name(name);
    let doc = format!(
        "Every hyperparameter of [`{name}`] (its own `hparams` first), defaulting to the values written in `training!`; saved as `config.json` with each run."
    );
    // The experiment's own hyperparameters first, with their docs; their defaults are
    // type-checked at the user's value.
    let hparams = own_fields(exp);
    let own_names: Vec<&Ident> = hparams.clone().map(|h| &h.name).collect();
    let key_names: Vec<Ident> = keys.iter().map(ConfigKey::ident).collect();
    let key_names: Vec<&Ident> = key_names.iter().collect();
    let own_fields = hparams.clone().map(|h| {
        let Hparam { docs, name, ty, .. } = h;
        quote!(#(#docs)* pub #name: #ty,)
    });
    let own_defaults = hparams.map(|h| {
        let (name, default) = (&h.name, &h.default);
        quote!(#name: #default,)
    });
    let fields = keys.iter().map(|k| {
        let (ident, doc, ty) = (k.ident(), k.doc, &k.ty);
        quote!(#[doc = #doc] pub #ident: #ty,)
    });
    let defaults = keys.iter().map(|k| {
        let (ident, default) = (k.ident(), &k.default);
        quote!(#ident: #default,)
    });
    // Serde's messages and `Debug` say the public name, not the reserved one.
    let public = format!("{name}Config");
    let debug_fields = own_names.iter().chain(&key_names).map(|field| {
        let text = field.to_string();
        quote!(.field(#text, &self.#field))
    });
    quote! {
        #[doc = #doc]
        #[derive(Clone, PartialEq, #Rt::serde::Serialize, #Rt::serde::Deserialize)]
        #[serde(crate = "::burn_experiment::__private::serde", rename = #public, default, deny_unknown_fields)]
        #vis struct #config_name {
            #(#own_fields)*
            #(#fields)*
        }

        impl ::core::default::Default for #config_name {
            fn default() -> Self {
                Self { #(#own_defaults)* #(#defaults)* }
            }
        }

        impl ::core::fmt::Debug for #config_name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#public) #(#debug_fields)* .finish()
            }
        }
    }
}

/// `FitOptions` from the config value `config` and the run's `name`.
pub fn fit_options(keys: &[ConfigKey], config: &Ident, snake: &str) -> TokenStream {
    let fields = keys.iter().filter_map(|k| {
        let ident = k.ident();
        Some(match k.to_option? {
            ToOption::Clone => quote!(#ident: ::core::clone::Clone::clone(&#config.#ident),),
            ToOption::Path => quote!(#ident: ::std::path::PathBuf::from(&#config.#ident),),
            ToOption::OptionalPath => {
                quote!(#ident: #config.#ident.as_ref().map(::std::path::PathBuf::from),)
            }
            ToOption::ModelPaths => quote! {
                #ident: #config.#ident.iter().map(|path| ::std::format!("model.{path}")).collect(),
            },
        })
    });
    quote! {
        #Rt::FitOptions {
            name: ::std::string::String::from(#snake),
            first_epoch: 1,
            #(#fields)*
            ..#Rt::FitOptions::default()
        }
    }
}

/// Each swept value of a hyperparameter as a value of its type, in a function never called:
/// a value of another type is rustc's error at the value.
pub fn sweep_types(exp: &Experiment) -> TokenStream {
    // A search's `choice` values likewise.
    let swept = exp.sweep.iter().flatten().map(|a| (a.name(), &a.values));
    let drawn = exp
        .search
        .iter()
        .flat_map(|s| &s.space)
        .map(|p| (p.name(), &p.values));
    let checks = swept.chain(drawn).flat_map(|(key, values)| {
        let ty = exp.hparam(&key).map(|h| &h.ty);
        values.iter().filter_map(move |value| {
            let ty = ty?;
            let span = syn::spanned::Spanned::span(value);
            // A text value is an owned `String` in the config.
            Some(match value {
                syn::Lit::Str(_) => quote::quote_spanned! {span=>
                    let _: #ty = ::std::borrow::ToOwned::to_owned(#value);
                },
                _ => quote::quote_spanned!(span=> let _: #ty = #value;),
            })
        })
    });
    quote! {
        const _: () = {
            #[allow(dead_code, clippy::all)]
            fn swept_values_have_their_hyperparameters_types() {
                #(#checks)*
            }
        };
    }
}

/// The config's own name, from the reserved prefix `__` (see [`super::model::model_name`]);
/// users name it `<Name>Config`.
pub fn config_name(name: &Ident) -> Ident {
    format_ident!("__{}Config", name)
}

#[cfg(test)]
mod tests {
    use super::keys;
    use crate::catalog::CONFIG_KEYS;

    #[test]
    fn every_built_in_field_is_listed_where_hyperparameter_names_are_checked() {
        let exp = crate::tests::experiment(quote::quote! {
            name: Every,
            model: Mlp = Mlp::new(device),
            step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch) },
            loader: { train: a(), valid: b(), batcher: B, batch_size: 2 },
            optimizer: adam(lr = 0.1),
            epochs: 1,
            engine: burn,
        });
        // With several optimizers, `optimizers` stands for `lr` and `optimizer`.
        let several = crate::tests::experiment(quote::quote! {
            name: Several,
            model: Gan = Gan::new(device),
            optimizers: { d: adam(lr = 0.1) on [d], g: adam(lr = 0.1) on [g] },
            steps: [
                d: |model, batch: Batch| -> Out { model.d(batch) },
                g: |model, batch: Batch| -> Out { model.g(batch) },
            ],
            loader: { train: a(), valid: b(), batcher: B, batch_size: 2 },
            epochs: 1,
        });
        let mut names: Vec<&str> = keys(&exp).iter().map(|k| k.name).collect();
        names.extend(keys(&several).iter().map(|k| k.name));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CONFIG_KEYS.len(), "{names:?}");
        for name in names {
            assert!(
                CONFIG_KEYS.contains(&name),
                "`{name}` is missing from CONFIG_KEYS"
            );
        }
    }
}
