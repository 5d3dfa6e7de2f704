//! The `training!` macro: one invocation per experiment, checked at compile time.
//!
//! Use it through `burn_experiment`, which re-exports it; the full key reference is in
//! `burn_experiment`'s crate documentation. The macro runs in three phases, one module each:
//! `parse` (tokens to an AST that keeps the user's spans), `validate`
//! (rules across keys), `expand` (thin calls into `burn_experiment::__private`). Errors of
//! all phases are collected, so a file with three mistakes shows three errors. Set
//! `DSL_MACROS_DEBUG=1` to print each expansion on stderr at build time.

mod ast;
mod batch;
mod catalog;
mod errors;
mod expand;
mod parse;
mod private;
mod step_output;
mod validate;

use proc_macro::TokenStream;
use quote::quote;

/// Declares a training experiment. See `burn_experiment`'s crate docs for every key.
#[proc_macro]
pub fn training(input: TokenStream) -> TokenStream {
    expand_training(input.into()).into()
}

fn expand_training(input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut errors = errors::Errors::new();
    let mut exp = parse::parse(input, &mut errors);
    validate::validate(&exp, &mut errors);
    let output = match errors.finish() {
        None => {
            // Several steps stand as one where the expansion names the step.
            if let Some(step) = expand::merged_step(&exp) {
                exp.step = Some(step);
            }
            expand::expand(&exp)
        }
        // Still declare everything the user's code can name, so uses of the experiment do not
        // add errors of their own.
        Some(errors) => {
            let dummy = expand::dummy(&exp);
            quote!(#errors #dummy)
        }
    };
    if std::env::var_os("DSL_MACROS_DEBUG").is_some_and(|v| v == "1") {
        eprintln!("{output}");
    }
    output
}

/// Generates `<Name>Batch` and `<Name>Batcher` for a sample struct; see `burn_experiment`'s docs.
#[proc_macro_derive(Batch, attributes(pad))]
pub fn derive_batch(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    batch::derive(input).into()
}

/// Makes a custom output struct trainable and metric-ready (`#[loss]`, `#[logits]`,
/// `#[targets]` fields); see `burn_experiment`'s docs.
#[proc_macro_derive(StepOutput, attributes(loss, logits, targets))]
pub fn derive_step_output(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    step_output::derive(input).into()
}

#[cfg(test)]
mod mutants;
#[cfg(test)]
mod tests;
