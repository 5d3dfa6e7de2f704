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

/// The known word closest to `word`, if it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_near_misses_only() {
        let keys = ["epochs", "metrics", "optimizer"];
        assert_eq!(closest("epoch", &keys), Some("epochs"));
        assert_eq!(closest("optimiser", &keys), Some("optimizer"));
        assert_eq!(closest("colour", &keys), None);
    }
}
