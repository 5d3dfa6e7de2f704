//! Collecting errors instead of stopping at the first one.

/// Every error of one invocation, each at the user's token, merged with `syn::Error::combine`
/// (which keeps each error's whole span: `new_spanned` underlines an expression from its first
/// to its last token). Panics if dropped without [`Errors::finish`], as serde's `Ctxt` does, so
/// no error can be lost silently.
pub struct Errors {
    errors: Option<syn::Error>,
    finished: bool,
}

impl Errors {
    pub fn new() -> Self {
        Self {
            errors: None,
            finished: false,
        }
    }

    pub fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// The messages collected so far, for tests.
    #[cfg(test)]
    pub fn into_messages(mut self) -> Vec<String> {
        self.finished = true;
        self.errors
            .take()
            .into_iter()
            .flatten()
            .map(|e| e.to_string())
            .collect()
    }

    /// The collected errors, to be pushed into another collection or dropped on purpose.
    pub fn take(mut self) -> Option<syn::Error> {
        self.finished = true;
        self.errors.take()
    }

    /// The collected errors as `compile_error!`s, or `None` when there were none.
    pub fn finish(mut self) -> Option<proc_macro2::TokenStream> {
        self.finished = true;
        self.errors.take().map(|e| e.to_compile_error())
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.finished && !std::thread::panicking() {
            panic!("`Errors` dropped without `finish`: errors would be lost");
        }
    }
}

pub use burn_experiment_vocabulary::closest;
