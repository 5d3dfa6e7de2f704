//! The words of a search (`search: { .. }` in `training!`, `--search` on the command line):
//! the distributions a key is drawn from, the samplers and pruners, and their defaults. The
//! macro checks a distribution's bounds with [`check`] and the command line with the same
//! function, so both refuse the same ranges with the same words.

use crate::bounds::Bound;

/// The entries of `search: { .. }`, in the order the keys table lists them.
pub const ENTRIES: &[&str] = &["space", "trials", "objective", "sampler", "prune", "seed"];

/// The distributions of `space: { key: <distribution>, .. }`, each with an example.
pub const DISTRIBUTIONS: &[(&str, &str)] = &[
    ("log_uniform", "log_uniform(1e-4, 1e-1)"),
    ("uniform", "uniform(0.0, 0.5)"),
    ("int", "int(16, 128)"),
    ("choice", "choice([16, 32, 64])"),
];

/// The samplers: `tpe` (Tree-structured Parzen Estimator, the `tpe` crate) and `random`.
pub const SAMPLERS: &[&str] = &["tpe", "random"];

/// The pruners: none, the median rule, and asynchronous successive halving.
pub const PRUNERS: &[&str] = &["none", "median", "asha"];

/// Trials TPE draws at random before it models the results (Optuna's default).
pub const TPE_STARTUP: usize = 10;

/// The median rule prunes nothing until this many earlier trials reached the epoch (Optuna's
/// `MedianPruner` default).
pub const MEDIAN_STARTUP: usize = 5;

/// The median rule prunes nothing in a trial's first epochs, this many (Optuna's
/// `n_warmup_steps`, whose default is 0): at epoch 1 the trials' order is mostly their starting
/// point's, and deciding there stopped good trials too; as ASHA's first rung, the first
/// decision is at epoch 2.
pub const MEDIAN_WARMUP: usize = 1;

/// Successive halving's first rung, in epochs (its "minimum resource"): 2, since on the search
/// example a rung at epoch 1 stopped the best trial on 2 of 5 seeds (at epoch 1 the trials'
/// order is mostly their starting point's).
pub const ASHA_MIN_EPOCHS: usize = 2;

/// Successive halving's reduction factor: at each rung, one trial in this many goes on.
pub const ASHA_ETA: usize = 3;

/// A study's trials when neither `trials` nor `--trials` says.
pub const TRIALS: usize = 20;

/// What a distribution's key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// A float (`lr`, `ema`, an `f64` hyperparameter).
    Float,
    /// A whole number (`batch_size`, a `usize` hyperparameter).
    Whole,
    /// Anything else: only `choice` fits.
    Other,
}

impl Holds {
    /// What a built-in config key holds, from its bound.
    pub fn of_bound(bound: Bound) -> Self {
        match bound {
            Bound::Whole { .. } => Holds::Whole,
            Bound::Positive | Bound::Fraction => Holds::Float,
        }
    }
}

/// Whether distribution `name` over `low..high` fits a key holding `holds` within `bound`;
/// `Err` holds what is wrong and what to write. `choice` is checked value by value elsewhere.
pub fn check(
    key: &str,
    name: &str,
    low: f64,
    high: f64,
    holds: Holds,
    bound: Option<Bound>,
) -> Result<(), (String, String)> {
    let example = DISTRIBUTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, e)| e);
    let wrong = |what: String, fix: String| Err((what, fix));
    match (name, holds) {
        ("log_uniform" | "uniform", Holds::Whole) => {
            return wrong(
                format!("`{key}` is a whole number"),
                "draw it with `int(low, high)` or `choice([..])`".to_owned(),
            );
        }
        ("int", Holds::Float) => {
            return wrong(
                format!("`{key}` is a float"),
                "draw it with `uniform(low, high)` or `log_uniform(low, high)`".to_owned(),
            );
        }
        (_, Holds::Other) => {
            return wrong(
                format!("`{key}` is not a number"),
                "draw it with `choice([..])`".to_owned(),
            );
        }
        _ => {}
    }
    if !low.is_finite() || !high.is_finite() || low >= high {
        return wrong(
            format!("`{name}` needs low < high"),
            format!("write e.g. `{example}`"),
        );
    }
    if name == "int" && (low.fract() != 0.0 || high.fract() != 0.0) {
        return wrong(
            "`int` takes whole bounds".to_owned(),
            format!("write e.g. `{example}`"),
        );
    }
    if name == "log_uniform" && low <= 0.0 {
        return wrong(
            "`log_uniform` needs low > 0 (it draws the logarithm)".to_owned(),
            format!("write e.g. `{example}`, or `uniform(..)` for a range through 0"),
        );
    }
    if let Some(bound) = bound
        && !(bound.admits(low) && bound.admits(high))
    {
        return wrong(
            format!(
                "`{key}` must be {}: `{name}({low}, {high})` reaches outside",
                bound.describe()
            ),
            "keep both bounds within it".to_owned(),
        );
    }
    Ok(())
}

/// The names of the distributions, for a list in an error.
pub fn distribution_names() -> Vec<&'static str> {
    DISTRIBUTIONS.iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_against_the_key() {
        let lr = Some(crate::bounds::of("lr"));
        assert!(check("lr", "log_uniform", 1e-4, 1e-1, Holds::Float, lr).is_ok());
        let (what, _) = check("lr", "log_uniform", 0.0, 1e-1, Holds::Float, lr).unwrap_err();
        assert!(what.contains("needs low > 0"), "{what}");
        let (what, _) = check("lr", "uniform", 0.5, 0.1, Holds::Float, lr).unwrap_err();
        assert!(what.contains("low < high"), "{what}");
        let (what, _) = check("lr", "uniform", -1.0, 0.1, Holds::Float, lr).unwrap_err();
        assert!(what.contains("reaches outside"), "{what}");
        let (_, fix) = check("batch_size", "uniform", 8.0, 64.0, Holds::Whole, None).unwrap_err();
        assert!(fix.contains("`int(low, high)`"), "{fix}");
        let (what, _) = check("lr", "int", 1.0, 3.0, Holds::Float, None).unwrap_err();
        assert!(what.contains("is a float"), "{what}");
        assert!(check("width", "int", 4.5, 8.0, Holds::Whole, None).is_err());
    }
}
