//! `#[derive(StepOutput)]`: a custom step output that trains and feeds metrics.
//!
//! Fields marked `#[loss]` (a `Tensor<1>`), `#[logits]` (`Tensor<2>`, `[batch, classes]`) and
//! `#[targets]` become: Burn's `ItemLazy` (sync: the marked tensors leave the autodiff graph),
//! the runtime's `StepOutput` (the loss to back-propagate), the loss adaptors, and, when the
//! targets are class indices (`Tensor<1, Int>`) beside logits, the adaptors of accuracy, top-k,
//! perplexity, precision, recall, F-beta and AUROC, so `training!` checks metrics on custom
//! outputs at compile time exactly as on Burn's.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::errors::Errors;
use crate::private::Rt;

const ROLES: [&str; 3] = ["loss", "logits", "targets"];

/// `Tensor`, or `Tenso` read as the `Tensor` it misspells: rustc reports the name with its fix,
/// and the derive, reading the field as meant, does not also leave out the metrics it feeds.
fn is_tensor(ident: &Ident) -> bool {
    burn_experiment_vocabulary::one_edit_from(&ident.to_string(), &["Tensor"]).is_some()
}

/// Whether `ty` is written `Tensor<1, Int>` (class indices).
fn is_class_indices(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let args: Vec<String> = args
        .args
        .iter()
        .map(|a| quote!(#a).to_string().replace(' ', ""))
        .collect();
    is_tensor(&last.ident) && args.len() == 2 && args[0] == "1" && args[1].ends_with("Int")
}

/// The rank and kind of a field type written `Tensor<N>` / `Tensor<N, Int>` / `Tensor<N, Bool>`
/// (`None` for any other spelling, such as an alias, which rustc checks instead).
fn tensor_shape(ty: &Type) -> Option<(usize, String)> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    if !is_tensor(&last.ident) {
        return None;
    }
    let mut args = args.args.iter();
    let rank = match args.next()? {
        syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(rank),
            ..
        })) => rank.base10_parse().ok()?,
        _ => return None,
    };
    let kind = args
        .next()
        .map(|k| quote!(#k).to_string().replace(' ', ""))
        .map_or("Float".to_owned(), |k| {
            k.rsplit("::").next().unwrap_or("").to_owned()
        });
    Some((rank, kind))
}

/// A role on a field whose written type cannot play it: one error at the type, where rustc
/// would give several at the derive and inside burn-train.
fn role_type(role: &str, ty: &Type) -> Option<syn::Error> {
    let (rank, kind) = tensor_shape(ty)?;
    let written = quote!(#ty)
        .to_string()
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">");
    let wrong = |needs: &str, help: &str| {
        Some(syn::Error::new_spanned(
            ty,
            format!("`#[{role}]` marks {needs}; this field is `{written}`\nhelp: {help}"),
        ))
    };
    match role {
        "loss" if rank != 1 || kind != "Float" => wrong(
            "the loss, a float `Tensor<1>` (one value, as Burn's losses return it)",
            "mark the loss field `#[loss]`, or reduce this one to a `Tensor<1>` (e.g. with `.mean()`)",
        ),
        "logits" if rank != 2 || kind != "Float" => wrong(
            "the logits, a float `Tensor<2>` `[batch, classes]`",
            "mark the logits field `#[logits]`",
        ),
        "targets" if !(rank == 1 && kind == "Int" || rank == 2) => wrong(
            "the targets: class indices `Tensor<1, Int>` or a `Tensor<2>` per class",
            "mark the targets field `#[targets]`",
        ),
        _ => None,
    }
}

/// The role a field's attribute marks: `#[loss]`, or `#[los]` taken as the `#[loss]` it
/// misspells, whose error is rustc's ("cannot find attribute `los`", with the fix), so that
/// the derive adds no second one for the role it then seems to lack.
fn role_of(attr: &syn::Attribute) -> Option<usize> {
    let syn::Meta::Path(path) = &attr.meta else {
        return None;
    };
    let word = path.get_ident()?.to_string();
    let meant = burn_experiment_vocabulary::one_edit_from(&word, &ROLES)?;
    ROLES.iter().position(|r| *r == meant)
}

pub fn derive(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let name = &input.ident;
    let mut roles: [Option<(Ident, Type)>; 3] = [None, None, None];
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => {
                for field in &fields.named {
                    let ident = field.ident.clone().expect("named");
                    let marks: Vec<usize> = field.attrs.iter().filter_map(role_of).collect();
                    match marks.as_slice() {
                        [] => {}
                        [role] => {
                            if let Some(error) = role_type(ROLES[*role], &field.ty) {
                                errors.push(error);
                            }
                            if roles[*role].is_some() {
                                errors.push(syn::Error::new(
                                    ident.span(),
                                    format!(
                                        "a second `#[{}]` field\nhelp: mark exactly one field `#[{}]`",
                                        ROLES[*role], ROLES[*role]
                                    ),
                                ));
                            }
                            roles[*role] = Some((ident, field.ty.clone()));
                        }
                        [first, ..] => {
                            errors.push(syn::Error::new(
                                ident.span(),
                                "a field can play only one role\nhelp: keep one of `#[loss]`, `#[logits]`, `#[targets]`",
                            ));
                            // Taken in its first role, so that role is not also reported missing.
                            roles[*first].get_or_insert((ident, field.ty.clone()));
                        }
                    }
                }
            }
            _ => errors.push(syn::Error::new(
                name.span(),
                "`StepOutput` needs a struct with named fields\nhelp: write `struct Output { #[loss] loss: Tensor<1>, .. }`",
            )),
        },
        _ => errors.push(syn::Error::new(
            name.span(),
            "`StepOutput` can only be derived for a struct\nhelp: write `struct Output { #[loss] loss: Tensor<1>, .. }`",
        )),
    }
    let fields = match &input.data {
        Data::Struct(data) => data.fields.len(),
        _ => 0,
    };
    let all_marked = roles.iter().flatten().count() == fields;
    let [loss, logits, targets] = roles;
    if loss.is_none() && matches!(input.data, Data::Struct(_)) {
        errors.push(syn::Error::new(
            name.span(),
            "a step output needs its loss\nhelp: mark the `Tensor<1>` loss field `#[loss]`",
        ));
    }
    if logits.is_some() != targets.is_some() {
        let (present, missing) = if logits.is_some() {
            (&logits, "targets")
        } else {
            (&targets, "logits")
        };
        let span = present.as_ref().map_or(name.span(), |(i, _)| i.span());
        errors.push(syn::Error::new(
            span,
            format!("`#[logits]` and `#[targets]` go together\nhelp: mark the {missing} field `#[{missing}]`, or remove this mark"),
        ));
    }
    let rt = Rt;
    let metric = quote!(#rt::burn::train::metric);
    if let Some(errors) = errors.finish() {
        let stand_in = stand_in(name, &metric);
        return quote!(#errors #stand_in);
    }
    let (loss, _) = loss.expect("checked");
    let marked: Vec<&Ident> = [
        Some(&loss),
        logits.as_ref().map(|l| &l.0),
        targets.as_ref().map(|t| &t.0),
    ]
    .into_iter()
    .flatten()
    .collect();
    let samples = match (&targets, &logits) {
        (Some((t, _)), _) => quote!(self.#t.dims()[0]),
        (None, Some((l, _))) => quote!(self.#l.dims()[0]),
        (None, None) => quote!(self.#loss.dims()[0]),
    };
    let classification = match (&logits, &targets) {
        (Some((logits, _)), Some((targets, ty))) if is_class_indices(ty) => quote! {
            impl #metric::Adaptor<#metric::AccuracyInput> for #name {
                fn adapt(&self) -> #metric::AccuracyInput {
                    #metric::AccuracyInput::new(self.#logits.clone(), self.#targets.clone())
                }
            }
            impl #metric::Adaptor<#metric::TopKAccuracyInput> for #name {
                fn adapt(&self) -> #metric::TopKAccuracyInput {
                    #metric::TopKAccuracyInput::new(self.#logits.clone(), self.#targets.clone())
                }
            }
            impl #metric::Adaptor<#metric::PerplexityInput> for #name {
                fn adapt(&self) -> #metric::PerplexityInput {
                    #metric::PerplexityInput::new(self.#logits.clone(), self.#targets.clone())
                }
            }
            impl #metric::Adaptor<#metric::ConfusionStatsInput> for #name {
                fn adapt(&self) -> #metric::ConfusionStatsInput {
                    #rt::confusion_input(self.#logits.clone(), self.#targets.clone())
                }
            }
        },
        _ => quote!(),
    };
    // A 16-bit run's metrics read the output in f32 (`Fit::output_casts`): the marked float
    // fields are cast; integer targets and unmarked fields stay.
    let float_targets = targets
        .as_ref()
        .filter(|(_, ty)| tensor_shape(ty).is_some_and(|(_, kind)| kind == "Float"))
        .map(|(t, _)| t);
    let floats = [Some(&loss), logits.as_ref().map(|(l, _)| l), float_targets]
        .into_iter()
        .flatten();
    let cast_floats = quote! {
        impl #rt::CastFloats for #name {
            #[allow(clippy::needless_update)]
            fn cast_floats(self, dtype: #rt::burn::tensor::FloatDType) -> Self {
                Self {
                    #(#floats: self.#floats.cast(dtype),)*
                    ..self
                }
            }
        }
    };
    // Data-parallel training sends outputs between processes; only the marked fields can be
    // rebuilt there.
    let portable = all_marked.then(|| {
        let tensor = quote!(#rt::burn::tensor);
        quote! {
            impl #rt::Portable for #name {
                fn parts(&self) -> ::std::vec::Vec<#tensor::TensorData> {
                    ::std::vec![#(#rt::PortablePart::part(&self.#marked)),*]
                }

                fn from_parts(
                    parts: &mut dyn ::core::iter::Iterator<Item = #tensor::TensorData>,
                    device: &#tensor::Device,
                ) -> ::core::result::Result<Self, ::std::string::String> {
                    ::core::result::Result::Ok(Self {
                        #(#marked: #rt::PortablePart::from_part(parts, device)?,)*
                    })
                }
            }
        }
    });
    quote! {
        #portable
        #cast_floats

        impl #rt::burn::train::ItemLazy for #name {
            // `..self` covers unmarked fields; with every field marked it has nothing to add.
            #[allow(clippy::needless_update)]
            fn sync(self) -> ::core::result::Result<Self, #rt::burn::tensor::ExecutionError> {
                self.#loss.device().flush()?;
                ::core::result::Result::Ok(Self {
                    #(#marked: self.#marked.without_autodiff(),)*
                    ..self
                })
            }
        }

        impl #rt::StepOutput for #name {
            type Checked = Self;

            fn loss(&self) -> #rt::burn::tensor::Tensor<1> {
                self.#loss.clone()
            }
        }

        impl #metric::Adaptor<#rt::metric::SampleLossInput> for #name {
            fn adapt(&self) -> #rt::metric::SampleLossInput {
                #rt::metric::SampleLossInput { loss: self.#loss.clone(), samples: #samples }
            }
        }

        impl #metric::Adaptor<#metric::LossInput> for #name {
            fn adapt(&self) -> #metric::LossInput {
                #metric::LossInput::new(self.#loss.clone())
            }
        }

        #classification
    }
}

/// After an error, `name` as a step output that every metric can read (bodies that never run:
/// the build has failed), so that the rejected derive is one error, not one more at the step's
/// output type and at each metric.
fn stand_in(name: &Ident, metric: &TokenStream) -> TokenStream {
    let rt = Rt;
    let inputs = [
        quote!(#rt::metric::SampleLossInput),
        quote!(#metric::LossInput),
        quote!(#metric::AccuracyInput),
        quote!(#metric::TopKAccuracyInput),
        quote!(#metric::PerplexityInput),
        quote!(#metric::ConfusionStatsInput),
    ];
    quote! {
        impl #rt::burn::train::ItemLazy for #name {
            fn sync(self) -> ::core::result::Result<Self, #rt::burn::tensor::ExecutionError> {
                ::core::unreachable!()
            }
        }

        impl #rt::StepOutput for #name {
            type Checked = Self;

            fn loss(&self) -> #rt::burn::tensor::Tensor<1> {
                ::core::unreachable!()
            }
        }

        #(
            impl #metric::Adaptor<#inputs> for #name {
                fn adapt(&self) -> #inputs {
                    ::core::unreachable!()
                }
            }
        )*
    }
}
