//! Named optimizers and their arguments: the names `training!` accepts in `sgd(..)`, `adam(..)`,
//! .., the range each argument must lie in (checked at compile time for the values written in
//! the macro, at run time for values from `--set` and `--config`), and the spellings accepted
//! besides the config's own (`beta1` for `beta_1`).

/// The range an optimizer argument must lie in.
#[derive(Clone, Copy)]
pub enum Range {
    /// `[0, 1)`: momentum and the Adam betas.
    UnitHalfOpen,
    /// `(0, ∞)`: epsilon.
    Positive,
    /// `[0, ∞)`: weight decay.
    NonNegative,
}

impl Range {
    /// Whether `v` lies in the range (never for a value that is not finite).
    pub fn contains(self, v: f64) -> bool {
        v.is_finite()
            && match self {
                Range::UnitHalfOpen => (0.0..1.0).contains(&v),
                Range::Positive => v > 0.0,
                Range::NonNegative => v >= 0.0,
            }
    }

    /// The range, as an error states it.
    pub fn describe(self) -> &'static str {
        match self {
            Range::UnitHalfOpen => "in [0, 1)",
            Range::Positive => "positive",
            Range::NonNegative => "0 or more",
        }
    }
}

/// One argument of a named optimizer, spelt as in the config (`beta_1`), with the spelling
/// some users reach for first (`beta1`), accepted with a hint.
pub struct Argument {
    /// As the config spells it.
    pub name: &'static str,
    /// Another spelling accepted.
    pub alias: Option<&'static str>,
    /// The values it takes.
    pub range: Range,
}

const fn arg(name: &'static str, range: Range) -> Argument {
    Argument {
        name,
        alias: None,
        range,
    }
}

const fn aliased(name: &'static str, alias: &'static str, range: Range) -> Argument {
    Argument {
        name,
        alias: Some(alias),
        range,
    }
}

const ADAM_ARGS: &[Argument] = &[
    aliased("beta_1", "beta1", Range::UnitHalfOpen),
    aliased("beta_2", "beta2", Range::UnitHalfOpen),
    arg("epsilon", Range::Positive),
    arg("weight_decay", Range::NonNegative),
];

/// A named optimizer: `sgd(lr = .., momentum = ..)`.
pub struct Optimizer {
    /// As written in `training!` (and the config's `kind`).
    pub name: &'static str,
    /// Its arguments besides the learning rate.
    pub args: &'static [Argument],
}

/// Every named optimizer.
pub const OPTIMIZERS: &[Optimizer] = &[
    Optimizer {
        name: "sgd",
        args: &[
            arg("momentum", Range::UnitHalfOpen),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    Optimizer {
        name: "adam",
        args: ADAM_ARGS,
    },
    Optimizer {
        name: "adamw",
        args: ADAM_ARGS,
    },
    Optimizer {
        name: "rmsprop",
        args: &[
            arg("alpha", Range::UnitHalfOpen),
            arg("momentum", Range::UnitHalfOpen),
            arg("epsilon", Range::Positive),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    Optimizer {
        name: "adagrad",
        args: &[
            arg("lr_decay", Range::NonNegative),
            arg("epsilon", Range::Positive),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    Optimizer {
        name: "lion",
        args: &[
            aliased("beta_1", "beta1", Range::UnitHalfOpen),
            aliased("beta_2", "beta2", Range::UnitHalfOpen),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    Optimizer {
        name: "lamb",
        args: ADAM_ARGS,
    },
];

/// The optimizer written `name`.
pub fn named(name: &str) -> Option<&'static Optimizer> {
    OPTIMIZERS.iter().find(|o| o.name == name)
}

impl Optimizer {
    /// The argument written `word`, by its name or its alias.
    pub fn arg(&self, word: &str) -> Option<&'static Argument> {
        self.args
            .iter()
            .find(|a| a.name == word || a.alias == Some(word))
    }

    /// Its arguments' names, in order.
    pub fn arg_names(&self) -> Vec<&'static str> {
        self.args.iter().map(|a| a.name).collect()
    }
}

/// Every `(alias, name)` spelling of an argument that some optimizer accepts.
pub fn aliases() -> impl Iterator<Item = (&'static str, &'static str)> {
    OPTIMIZERS
        .iter()
        .flat_map(|o| o.args)
        .filter_map(|a| Some((a.alias?, a.name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_found_by_name_or_alias_with_their_range() {
        let adam = named("adam").unwrap();
        assert_eq!(adam.arg("beta1").map(|a| a.name), Some("beta_1"));
        assert!(adam.arg("beta_1").unwrap().range.contains(0.9));
        assert!(!adam.arg("epsilon").unwrap().range.contains(0.0));
        assert!(named("adamx").is_none());
        assert!(aliases().any(|pair| pair == ("beta2", "beta_2")));
    }
}
