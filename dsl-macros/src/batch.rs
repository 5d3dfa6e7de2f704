//! `#[derive(Batch)]`: a sample struct to a batch struct and a Burn `Batcher`.
//!
//! For `struct Sample { .. }` it generates `SampleBatch` (one tensor per field, batch dimension
//! first) and `SampleBatcher`, a unit struct implementing `Batcher<Sample, SampleBatch>`:
//!
//! | field type | batch field |
//! |------------|-------------|
//! | `f32`, `f64` | `Tensor<1>` of shape `[n]` |
//! | integers (`usize`, `i64`, `u8`, ...): class indices | `Tensor<1, Int>` of shape `[n]` |
//! | `[f32; K]` / `[f64; K]` | `Tensor<2>` of shape `[n, K]` |
//! | `[i64; K]` and other integer arrays | `Tensor<2, Int>` of shape `[n, K]` |
//! | `Vec<f32>` / `Vec<f64>` of one length for every sample | `Tensor<2>` of shape `[n, len]` |

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Type};

use crate::errors::Errors;
use crate::private::Rt;

enum Kind {
    Float,
    Int,
    FloatArray(syn::Expr),
    IntArray(syn::Expr),
    FloatVec,
}

const FLOATS: &[&str] = &["f32", "f64"];
const INTS: &[&str] = &[
    "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
];

fn scalar(ty: &Type) -> Option<String> {
    let Type::Path(path) = ty else { return None };
    let ident = path.path.get_ident()?.to_string();
    (FLOATS.contains(&ident.as_str()) || INTS.contains(&ident.as_str())).then_some(ident)
}

fn kind(ty: &Type) -> Option<Kind> {
    match ty {
        Type::Array(array) => match scalar(&array.elem)? {
            s if FLOATS.contains(&s.as_str()) => Some(Kind::FloatArray(array.len.clone())),
            _ => Some(Kind::IntArray(array.len.clone())),
        },
        Type::Path(path) => {
            if let Some(s) = scalar(ty) {
                return Some(if FLOATS.contains(&s.as_str()) {
                    Kind::Float
                } else {
                    Kind::Int
                });
            }
            let last = path.path.segments.last()?;
            if last.ident != "Vec" {
                return None;
            }
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            match args.args.first()? {
                syn::GenericArgument::Type(inner)
                    if scalar(inner).is_some_and(|s| FLOATS.contains(&s.as_str())) =>
                {
                    Some(Kind::FloatVec)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

pub fn derive(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    let name = &input.ident;
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) if !fields.named.is_empty() => Some(&fields.named),
            other => {
                errors.push(syn::Error::new(
                    other.span().join(name.span()).unwrap_or(name.span()),
                    "`Batch` needs a struct with named fields\nhelp: write `struct Sample { features: [f32; 4], class: usize }`",
                ));
                None
            }
        },
        _ => {
            errors.push(syn::Error::new(
                name.span(),
                "`Batch` can only be derived for a struct\nhelp: describe one sample as a struct with named fields",
            ));
            None
        }
    };
    let mut parts = Vec::new();
    for field in fields.into_iter().flatten() {
        match kind(&field.ty) {
            Some(kind) => parts.push((field.ident.clone().expect("named"), kind, field.ty.span())),
            None => errors.push(syn::Error::new(
                field.ty.span(),
                "`Batch` cannot turn this field type into a tensor\nhelp: use f32/f64, an integer class index (usize, i64, ...), a fixed array of them, or Vec<f32>",
            )),
        }
    }
    let batch = format_ident!("{}Batch", name);
    let batcher = format_ident!("{}Batcher", name);
    let vis = &input.vis;
    if let Some(errors) = errors.finish() {
        // The two types the user's code names, so that a rejected derive is one error, not one
        // more per use of the batcher.
        return quote! {
            #errors
            #vis struct #batch;
            #[derive(Clone, Copy, Debug, Default)]
            #vis struct #batcher;
        };
    }

    let rt = quote!(#Rt::burn);
    let batch_fields = parts.iter().map(|(ident, kind, span)| {
        let ty = match kind {
            Kind::Float => quote!(#rt::tensor::Tensor<1>),
            Kind::Int => quote!(#rt::tensor::Tensor<1, #rt::tensor::Int>),
            Kind::FloatArray(_) | Kind::FloatVec => quote!(#rt::tensor::Tensor<2>),
            Kind::IntArray(_) => quote!(#rt::tensor::Tensor<2, #rt::tensor::Int>),
        };
        quote_spanned!(*span=> #vis #ident: #ty)
    });
    let builds = parts.iter().map(|(ident, kind, _)| {
        let message = format!("`{ident}` has a different length in two samples of one batch");
        match kind {
            Kind::Float => quote! {
                #ident: #rt::tensor::Tensor::from_data(
                    #rt::tensor::TensorData::new(items.iter().map(|s| s.#ident as f32).collect::<::std::vec::Vec<f32>>(), [n]),
                    device,
                )
            },
            Kind::Int => quote! {
                #ident: #rt::tensor::Tensor::from_data(
                    #rt::tensor::TensorData::new(items.iter().map(|s| s.#ident as i64).collect::<::std::vec::Vec<i64>>(), [n]),
                    device,
                )
            },
            Kind::FloatArray(len) => quote! {
                #ident: #rt::tensor::Tensor::from_data(
                    #rt::tensor::TensorData::new(
                        items.iter().flat_map(|s| s.#ident.iter().map(|v| *v as f32)).collect::<::std::vec::Vec<f32>>(),
                        [n, #len],
                    ),
                    device,
                )
            },
            Kind::IntArray(len) => quote! {
                #ident: #rt::tensor::Tensor::from_data(
                    #rt::tensor::TensorData::new(
                        items.iter().flat_map(|s| s.#ident.iter().map(|v| *v as i64)).collect::<::std::vec::Vec<i64>>(),
                        [n, #len],
                    ),
                    device,
                )
            },
            Kind::FloatVec => quote! {
                #ident: {
                    let len = items.first().map_or(0, |s| s.#ident.len());
                    assert!(items.iter().all(|s| s.#ident.len() == len), #message);
                    #rt::tensor::Tensor::from_data(
                        #rt::tensor::TensorData::new(
                            items.iter().flat_map(|s| s.#ident.iter().map(|v| *v as f32)).collect::<::std::vec::Vec<f32>>(),
                            [n, len],
                        ),
                        device,
                    )
                }
            },
        }
    });
    let batch_doc = format!("A batch of [`{name}`]: one tensor per field, batch dimension first.");
    let batcher_doc = format!("Stacks [`{name}`]s into a [`{batch}`] (Burn's `Batcher`).");
    quote! {
        #[doc = #batch_doc]
        #[derive(Clone, Debug)]
        #vis struct #batch {
            #(#batch_fields,)*
        }

        #[doc = #batcher_doc]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #batcher;

        impl #rt::data::dataloader::batcher::Batcher<#name, #batch> for #batcher {
            fn batch(&self, items: ::std::vec::Vec<#name>, device: &#rt::tensor::Device) -> #batch {
                let n = items.len();
                #batch { #(#builds,)* }
            }
        }
    }
}
