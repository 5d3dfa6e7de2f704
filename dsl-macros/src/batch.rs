//! `#[derive(Batch)]`: a sample struct to a batch struct and a Burn `Batcher`.
//!
//! For `struct Sample { .. }` it generates `SampleBatch` (one tensor per field, batch dimension
//! first), `SampleBatcher`, a unit struct implementing `Batcher<Sample, SampleBatch>`, and the
//! runtime's `Fingerprint` for `Sample`, so the run's dataset fingerprint hashes the fields'
//! values instead of formatting them, and `CastFloats` for the batch, which a 16-bit run
//! (`precision: bf16`) casts its float tensors with:
//!
//! | field type | batch field |
//! |------------|-------------|
//! | `f32`, `f64` | `Tensor<1>` of shape `[n]` |
//! | integers (`usize`, `i64`, `u8`, ...): class indices | `Tensor<1, Int>` of shape `[n]` |
//! | `[f32; K]` / `[f64; K]` | `Tensor<2>` of shape `[n, K]` |
//! | `[[f32; W]; H]`, `[[[f32; W]; H]; C]` (images) | `Tensor<3>` `[n, H, W]`, `Tensor<4>` `[n, C, H, W]` |
//! | `[i64; K]` and other integer arrays (nested too) | `Tensor<2, Int>` `[n, K]` (one rank more per level) |
//! | `Vec<f32>` / `Vec<f64>` of one length for every sample | `Tensor<2>` of shape `[n, len]` (a batch whose lengths vary panics naming the field, the sample and `#[pad]`) |
//! | `Vec<f32>` / `Vec<f64>` of any length with `#[pad(v)]` | `Tensor<2>` `[n, longest]` padded with `v`, plus `<field>_mask` and `<field>_lengths` as below |
//! | `Vec<usize>` and other integer vectors of any length (token ids) | `Tensor<2, Int>` `[n, longest]` padded with `#[pad(v)]` (0 by default), plus `<field>_mask: Tensor<2, Bool>` (true at real tokens) and `<field>_lengths: Tensor<1, Int>` |

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Type};

use crate::errors::Errors;
use crate::private::Rt;
use burn_experiment_vocabulary::one_edit_from;

enum Kind {
    Float,
    Int,
    /// A fixed array, nested to one level per dimension.
    FloatArray(Vec<syn::Expr>),
    IntArray(Vec<syn::Expr>),
    FloatVec,
    /// Integer sequences of any length, padded with this value.
    IntSeq(i64),
    /// Float sequences of any length (`#[pad(v)]` on a `Vec<f32>`), padded with this value.
    FloatSeq(f64),
}

/// A field's `#[pad(v)]`.
#[derive(Clone, Copy)]
struct Pad {
    value: f64,
    /// Written as a whole number (what a token id needs).
    whole: bool,
}

/// The most array levels a field may nest: a `Tensor<4>` with the batch dimension.
const MAX_ARRAY_LEVELS: usize = 3;

/// The lengths of a (nested) fixed array, outermost first, and its scalar type.
fn array_dims(ty: &Type) -> Option<(Vec<syn::Expr>, String)> {
    match ty {
        Type::Array(array) => {
            let (mut dims, scalar) = array_dims(&array.elem)?;
            dims.insert(0, array.len.clone());
            Some((dims, scalar))
        }
        other => scalar(other).map(|s| (Vec::new(), s)),
    }
}

const FLOATS: &[&str] = &["f32", "f64"];
const INTS: &[&str] = &[
    "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
];

/// A scalar field type, or the one a name one edit away means (`usiz`): rustc reports the
/// misspelt name at the field, with its fix, and the derive, reading the field as meant, adds
/// no error of its own nor a guessed batch that the user's code would then trip over.
fn scalar(ty: &Type) -> Option<String> {
    let Type::Path(path) = ty else { return None };
    let ident = path.path.get_ident()?.to_string();
    let known: Vec<&str> = FLOATS.iter().chain(INTS).copied().collect();
    one_edit_from(&ident, &known).map(str::to_owned)
}

fn kind(ty: &Type, pad: Option<Pad>) -> Option<Kind> {
    match ty {
        Type::Array(_) => {
            let (dims, scalar) = array_dims(ty)?;
            if dims.len() > MAX_ARRAY_LEVELS {
                return None;
            }
            Some(if FLOATS.contains(&scalar.as_str()) {
                Kind::FloatArray(dims)
            } else {
                Kind::IntArray(dims)
            })
        }
        Type::Path(path) => {
            if let Some(s) = scalar(ty) {
                return Some(if FLOATS.contains(&s.as_str()) {
                    Kind::Float
                } else {
                    Kind::Int
                });
            }
            let last = path.path.segments.last()?;
            one_edit_from(&last.ident.to_string(), &["Vec"])?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            match args.args.first()? {
                syn::GenericArgument::Type(inner) => match scalar(inner)? {
                    s if FLOATS.contains(&s.as_str()) => Some(match pad {
                        Some(pad) => Kind::FloatSeq(pad.value),
                        None => Kind::FloatVec,
                    }),
                    _ => Some(Kind::IntSeq(pad.map_or(0, |p| p.value as i64))),
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// The value of a field's `#[pad(v)]` (a number), if it has one.
fn pad_value(field: &syn::Field) -> syn::Result<Option<Pad>> {
    let Some(attr) = field.attrs.iter().find(|a| a.path().is_ident("pad")) else {
        return Ok(None);
    };
    let value: syn::Expr = attr.parse_args().map_err(|_| {
        syn::Error::new(
            attr.span(),
            "`#[pad(..)]` takes the padding value\nhelp: write e.g. `#[pad(0)]` (a token id) or `#[pad(0.0)]`",
        )
    })?;
    let (negative, lit) = match &value {
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => (true, &**expr),
        other => (false, other),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    match lit {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => Ok(Some(Pad {
            value: sign * int.base10_parse::<i64>()? as f64,
            whole: true,
        })),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(float),
            ..
        }) => Ok(Some(Pad {
            value: sign * float.base10_parse::<f64>()?,
            whole: false,
        })),
        _ => Err(syn::Error::new(
            value.span(),
            "`#[pad(..)]` takes a number: the padding value\nhelp: write e.g. `#[pad(0)]` (a token id) or `#[pad(0.0)]`",
        )),
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
    // Every field with its kind, a rejected one's guessed: the stand-in batch after an error.
    let mut guessed = Vec::new();
    for field in fields.into_iter().flatten() {
        let ident = field.ident.clone().expect("named");
        guessed.push((
            ident,
            kind(&field.ty, None).unwrap_or(Kind::Float),
            field.ty.span(),
        ));
        let pad = match pad_value(field) {
            Ok(pad) => pad,
            Err(err) => {
                errors.push(err);
                continue;
            }
        };
        match kind(&field.ty, pad) {
            Some(kind) if pad.is_some() && !matches!(kind, Kind::IntSeq(_) | Kind::FloatSeq(_)) => {
                errors.push(syn::Error::new(
                    field.ty.span(),
                    "`#[pad(..)]` is for variable-length sequences\nhelp: remove it, or make the field a `Vec` (of f32 values, or of token ids)",
                ));
            }
            Some(Kind::IntSeq(_)) if pad.is_some_and(|p| !p.whole) => {
                errors.push(syn::Error::new(
                    field.ty.span(),
                    "a `Vec` of token ids is padded with a token id\nhelp: write a whole number, e.g. `#[pad(0)]`",
                ));
            }
            Some(kind) => parts.push((field.ident.clone().expect("named"), kind, field.ty.span())),
            None => errors.push(syn::Error::new(
                field.ty.span(),
                "`Batch` cannot turn this field type into a tensor\nhelp: use f32/f64, an integer class index (usize, i64, ...), a fixed array of them nested up to 3 levels, Vec<f32>, or a Vec of integer token ids",
            )),
        }
    }
    let batch = format_ident!("{}Batch", name);
    let batcher = format_ident!("{}Batcher", name);
    let vis = &input.vis;
    let rt = quote!(#Rt::burn);
    if let Some(errors) = errors.finish() {
        // The two types the user's code names, the batch with every field (a rejected one with
        // a guessed tensor), so that a rejected derive is one error, not one more per use of
        // the batcher or of a field in the step.
        let fields = batch_fields(&guessed, vis);
        return quote! {
            #errors
            #[derive(Clone, Debug)]
            #vis struct #batch {
                #(#fields,)*
            }
            #[derive(Clone, Copy, Debug, Default)]
            #vis struct #batcher;
            impl #rt::data::dataloader::batcher::Batcher<#name, #batch> for #batcher {
                fn batch(&self, _: ::std::vec::Vec<#name>, _: &#rt::tensor::Device) -> #batch {
                    ::core::unreachable!()
                }
            }
            impl #Rt::CastFloats for #batch {
                fn cast_floats(self, _: #rt::tensor::FloatDType) -> Self {
                    ::core::unreachable!()
                }
            }
        };
    }
    let batch_fields = batch_fields(&parts, vis);
    let builds = parts.iter().map(|(ident, kind, _)| {
        let message = format!(
            "`{ident}` has length {{}} in a batch's first sample and {{}} in its sample {{}}: a \
             `Vec<f32>` field of `#[derive(Batch)]` has one length; to batch samples of varying \
             length, add `#[pad(0.0)]` to the field (it is then padded to the longest, with \
             `{ident}_mask` and `{ident}_lengths`)"
        );
        let field = ident.to_string();
        match kind {
            Kind::Float => quote! {
                #ident: #rt::tensor::Tensor::from_data(
                    #rt::tensor::TensorData::new(items.iter().map(|s| s.#ident as f32).collect::<::std::vec::Vec<f32>>(), [n]),
                    device,
                )
            },
            Kind::Int => quote! {
                #ident: #rt::tensor::Tensor::from_data(
                    #rt::tensor::TensorData::new(#Rt::checked_ints(#field, items.iter().map(|s| s.#ident as i64).collect(), device), [n]),
                    device,
                )
            },
            Kind::FloatArray(dims) | Kind::IntArray(dims) => {
                let (elem, scalar) = match kind {
                    Kind::FloatArray(_) => (quote!(f32), quote!(f32)),
                    _ => (quote!(i64), quote!(i64)),
                };
                // One `.flatten()` per nested level below the first.
                let flatten = (1..dims.len()).map(|_| quote!(.flatten()));
                let values = quote! {
                    items.iter().flat_map(|s| s.#ident.iter() #(#flatten)* .map(|v| *v as #scalar)).collect::<::std::vec::Vec<#elem>>()
                };
                let values = match kind {
                    Kind::FloatArray(_) => values,
                    _ => quote!(#Rt::checked_ints(#field, #values, device)),
                };
                quote! {
                    #ident: #rt::tensor::Tensor::from_data(
                        #rt::tensor::TensorData::new(#values, [n, #(#dims),*]),
                        device,
                    )
                }
            }
            Kind::IntSeq(pad) => {
                let (mask, lengths) = (format_ident!("{ident}_mask"), format_ident!("{ident}_lengths"));
                quote! {
                    #ident: {
                        let longest = items.iter().map(|s| s.#ident.len()).max().unwrap_or(0);
                        let tokens: ::std::vec::Vec<i64> = items
                            .iter()
                            .flat_map(|s| {
                                s.#ident.iter().map(|v| *v as i64)
                                    .chain(::std::iter::repeat(#pad).take(longest - s.#ident.len()))
                            })
                            .collect();
                        let tokens = #Rt::checked_ints(#field, tokens, device);
                        #rt::tensor::Tensor::from_data(#rt::tensor::TensorData::new(tokens, [n, longest]), device)
                    },
                    #mask: {
                        let longest = items.iter().map(|s| s.#ident.len()).max().unwrap_or(0);
                        let real: ::std::vec::Vec<bool> = items
                            .iter()
                            .flat_map(|s| (0..longest).map(move |i| i < s.#ident.len()))
                            .collect();
                        #rt::tensor::Tensor::from_data(#rt::tensor::TensorData::new(real, [n, longest]), device)
                    },
                    #lengths: #rt::tensor::Tensor::from_data(
                        #rt::tensor::TensorData::new(
                            items.iter().map(|s| s.#ident.len() as i64).collect::<::std::vec::Vec<i64>>(),
                            [n],
                        ),
                        device,
                    )
                }
            }
            Kind::FloatVec => quote! {
                #ident: {
                    let len = items.first().map_or(0, |s| s.#ident.len());
                    if let Some(k) = items.iter().position(|s| s.#ident.len() != len) {
                        panic!(#message, len, items[k].#ident.len(), k);
                    }
                    #rt::tensor::Tensor::from_data(
                        #rt::tensor::TensorData::new(
                            items.iter().flat_map(|s| s.#ident.iter().map(|v| *v as f32)).collect::<::std::vec::Vec<f32>>(),
                            [n, len],
                        ),
                        device,
                    )
                }
            },
            Kind::FloatSeq(pad) => {
                let (mask, lengths) = (format_ident!("{ident}_mask"), format_ident!("{ident}_lengths"));
                let pad = *pad as f32;
                quote! {
                    #ident: {
                        let longest = items.iter().map(|s| s.#ident.len()).max().unwrap_or(0);
                        let values: ::std::vec::Vec<f32> = items
                            .iter()
                            .flat_map(|s| {
                                s.#ident.iter().map(|v| *v as f32)
                                    .chain(::std::iter::repeat(#pad).take(longest - s.#ident.len()))
                            })
                            .collect();
                        #rt::tensor::Tensor::from_data(#rt::tensor::TensorData::new(values, [n, longest]), device)
                    },
                    #mask: {
                        let longest = items.iter().map(|s| s.#ident.len()).max().unwrap_or(0);
                        let real: ::std::vec::Vec<bool> = items
                            .iter()
                            .flat_map(|s| (0..longest).map(move |i| i < s.#ident.len()))
                            .collect();
                        #rt::tensor::Tensor::from_data(#rt::tensor::TensorData::new(real, [n, longest]), device)
                    },
                    #lengths: #rt::tensor::Tensor::from_data(
                        #rt::tensor::TensorData::new(
                            items.iter().map(|s| s.#ident.len() as i64).collect::<::std::vec::Vec<i64>>(),
                            [n],
                        ),
                        device,
                    )
                }
            }
        }
    });
    // The sample's values for its dataset's fingerprint, read without formatting them.
    let feeds = parts
        .iter()
        .map(|(ident, _, _)| quote!(#Rt::Fingerprint::fingerprint(&self.#ident, hasher);));
    let fingerprint = quote! {
        impl #Rt::Fingerprint for #name {
            fn fingerprint(&self, hasher: &mut #Rt::ItemHasher) {
                #(#feeds)*
            }
        }
    };
    // A 16-bit run (`precision`) casts the float tensors; integer and boolean ones stay.
    let casts = tensor_names(&parts).map(|(ident, float)| match float {
        true => quote!(#ident: self.#ident.cast(dtype)),
        false => quote!(#ident: self.#ident),
    });
    let cast_floats = quote! {
        impl #Rt::CastFloats for #batch {
            fn cast_floats(self, dtype: #rt::tensor::FloatDType) -> Self {
                Self { #(#casts,)* }
            }
        }
    };
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

        #fingerprint

        #cast_floats
    }
}

/// Every tensor field of the batch struct, in order, and whether it holds floats: a padded
/// sequence's mask and lengths too.
fn tensor_names(
    parts: &[(syn::Ident, Kind, proc_macro2::Span)],
) -> impl Iterator<Item = (syn::Ident, bool)> + '_ {
    parts.iter().flat_map(|(ident, kind, _)| {
        let float = matches!(
            kind,
            Kind::Float | Kind::FloatArray(_) | Kind::FloatVec | Kind::FloatSeq(_)
        );
        match kind {
            Kind::IntSeq(_) | Kind::FloatSeq(_) => vec![
                (ident.clone(), float),
                (format_ident!("{ident}_mask"), false),
                (format_ident!("{ident}_lengths"), false),
            ],
            _ => vec![(ident.clone(), float)],
        }
    })
}

/// The batch struct's fields, one tensor per sample field (three for a padded sequence).
fn batch_fields(
    parts: &[(syn::Ident, Kind, proc_macro2::Span)],
    vis: &syn::Visibility,
) -> Vec<TokenStream> {
    let rt = quote!(#Rt::burn);
    parts
        .iter()
        .map(|(ident, kind, span)| {
            let int = quote!(#rt::tensor::Int);
            match kind {
                Kind::Float => quote_spanned!(*span=> #vis #ident: #rt::tensor::Tensor<1>),
                Kind::Int => quote_spanned!(*span=> #vis #ident: #rt::tensor::Tensor<1, #int>),
                Kind::FloatVec => quote_spanned!(*span=> #vis #ident: #rt::tensor::Tensor<2>),
                Kind::FloatArray(dims) => {
                    let rank = dims.len() + 1;
                    quote_spanned!(*span=> #vis #ident: #rt::tensor::Tensor<#rank>)
                }
                Kind::IntArray(dims) => {
                    let rank = dims.len() + 1;
                    quote_spanned!(*span=> #vis #ident: #rt::tensor::Tensor<#rank, #int>)
                }
                Kind::IntSeq(_) | Kind::FloatSeq(_) => {
                    let (mask, lengths) = (
                        format_ident!("{ident}_mask"),
                        format_ident!("{ident}_lengths"),
                    );
                    let doc = format!("`{ident}` padded to the longest sample: `[n, longest]`.");
                    let tensor = match kind {
                        Kind::IntSeq(_) => quote!(#rt::tensor::Tensor<2, #int>),
                        _ => quote!(#rt::tensor::Tensor<2>),
                    };
                    let mask_doc = format!(
                        "Where `{ident}` holds a real value (not padding): `[n, longest]`."
                    );
                    let lengths_doc = format!("The length of each sample's `{ident}`: `[n]`.");
                    quote_spanned! {*span=>
                        #[doc = #doc]
                        #vis #ident: #tensor,
                        #[doc = #mask_doc]
                        #vis #mask: #rt::tensor::Tensor<2, #rt::tensor::Bool>,
                        #[doc = #lengths_doc]
                        #vis #lengths: #rt::tensor::Tensor<1, #int>
                    }
                }
            }
        })
        .collect()
}
