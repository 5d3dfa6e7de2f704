//! The keys a `sweep: { .. }` can vary, with the values each takes. `--sweep` reaches any
//! config key at run time, with `--set`'s rules.

use crate::bounds::{self, Bound};

/// What a swept key's values must be.
#[derive(Clone, Copy)]
pub enum Values {
    /// Numbers within the key's bound (`burn_experiment_vocabulary::bounds`).
    Number(Bound),
    /// `true` or `false`.
    Bool,
    /// Text in quotes.
    Text,
}

/// The config keys a sweep can vary: the scalar ones (the optimizer's arguments and the
/// schedule stay as written; `--sweep` reaches any key with `--set`'s rules).
pub const SWEEPABLE: &[&str] = &[
    "lr",
    "batch_size",
    "epochs",
    "seed",
    "shuffle",
    "grad_accumulation",
    "workers",
    "ema",
    "unfreeze",
    "gradient_checkpointing",
    "device",
];

/// The values of sweepable `key`, or `None` for a key a sweep cannot vary.
pub fn values(key: &str) -> Option<Values> {
    if !SWEEPABLE.contains(&key) {
        return None;
    }
    Some(match key {
        "gradient_checkpointing" => Values::Bool,
        "device" => Values::Text,
        number => Values::Number(bounds::of(number)),
    })
}

impl Values {
    /// The values, as an error states them.
    pub fn describe(self) -> &'static str {
        match self {
            Values::Number(Bound::Whole { min: 0, .. }) => "whole numbers (0, 1, 2, ...)",
            Values::Number(Bound::Whole { .. }) => "whole numbers from 1",
            Values::Number(Bound::Positive) => "numbers above 0",
            Values::Number(Bound::Fraction) => "numbers between 0 and 1",
            Values::Bool => "`true` or `false`",
            Values::Text => "names in quotes",
        }
    }

    /// Two values, for an example.
    pub fn example(self) -> &'static str {
        match self {
            Values::Number(Bound::Whole { .. }) => "16, 32",
            Values::Number(Bound::Positive) => "1e-3, 1e-2",
            Values::Number(Bound::Fraction) => "0.99, 0.999",
            Values::Bool => "false, true",
            Values::Text => "\"flex\", \"cuda:0\"",
        }
    }
}

/// The sweepable keys, for the keys table.
pub fn names() -> Vec<&'static str> {
    SWEEPABLE.to_vec()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_sweepable_key_has_values() {
        for key in super::SWEEPABLE {
            assert!(super::values(key).is_some(), "{key}");
        }
        assert!(super::values("optimizer").is_none());
    }
}
