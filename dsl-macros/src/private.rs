//! The one path generated code reaches the runtime through (thiserror's `__private` pattern).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// `::burn_experiment::__private`, written once (serde's `crate = ".."` attribute, which takes a
/// string, is the one other place: `expand/config.rs`).
#[derive(Clone, Copy)]
pub struct Rt;

impl ToTokens for Rt {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(quote!(::burn_experiment::__private));
    }
}
