//! The keys a `sweep: { .. }` can vary, with the values each takes. `--sweep` reaches any
//! config key at run time, with `--set`'s rules.

/// What a swept key's values must be.
#[derive(Clone, Copy)]
pub enum Values {
    /// A whole number, at least this.
    Whole(u64),
    /// A positive number.
    Positive,
    /// A number in (0, 1).
    Fraction,
    /// `true` or `false`.
    Bool,
    /// Text in quotes.
    Text,
}

/// The config keys a sweep can vary: the scalar ones (the optimizer's arguments and the
/// schedule stay as written; `--sweep` reaches any key with `--set`'s rules).
pub const SWEEPABLE: &[(&str, Values)] = &[
    ("lr", Values::Positive),
    ("batch_size", Values::Whole(1)),
    ("epochs", Values::Whole(1)),
    ("seed", Values::Whole(0)),
    ("shuffle", Values::Whole(0)),
    ("grad_accumulation", Values::Whole(1)),
    ("workers", Values::Whole(0)),
    ("ema", Values::Fraction),
    ("unfreeze", Values::Whole(1)),
    ("gradient_checkpointing", Values::Bool),
    ("device", Values::Text),
];

impl Values {
    /// The values, as an error states them.
    pub fn describe(self) -> &'static str {
        match self {
            Values::Whole(0) => "whole numbers (0, 1, 2, ...)",
            Values::Whole(_) => "whole numbers from 1",
            Values::Positive => "numbers above 0",
            Values::Fraction => "numbers between 0 and 1",
            Values::Bool => "`true` or `false`",
            Values::Text => "names in quotes",
        }
    }

    /// Two values, for an example.
    pub fn example(self) -> &'static str {
        match self {
            Values::Whole(_) => "16, 32",
            Values::Positive => "1e-3, 1e-2",
            Values::Fraction => "0.99, 0.999",
            Values::Bool => "false, true",
            Values::Text => "\"flex\", \"cuda:0\"",
        }
    }
}

/// The sweepable keys, for the keys table.
pub fn names() -> Vec<&'static str> {
    SWEEPABLE.iter().map(|(k, _)| *k).collect()
}
