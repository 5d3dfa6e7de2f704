//! The values each numeric setting takes: `training!` checks the values written in it at
//! compile time, the runtime checks those from `--set`, `--config` and code (`FitOptions`) before
//! the first step, and sweeps check their values against the same bounds.

/// The values a numeric setting takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// A whole number from `min` to `max`: counts stop far short of where a loop over them
    /// would run for ever or overflow (`--epochs 18446744073709551615`).
    Whole {
        /// The least value.
        min: u64,
        /// The largest value.
        max: u64,
    },
    /// A number above 0.
    Positive,
    /// A number strictly between 0 and 1.
    Fraction,
}

/// A count of epochs, steps or items: from 1 to `u32::MAX`.
const COUNT: Bound = Bound::Whole {
    min: 1,
    max: u32::MAX as u64,
};

/// A seed: any `u64`.
const SEED: Bound = Bound::Whole {
    min: 0,
    max: u64::MAX,
};

/// Every numeric setting with its bound (`keep_last`, `every`: of `checkpoint`; `patience`:
/// of `early_stopping` and `plateau`).
pub const BOUNDS: &[(&str, Bound)] = &[
    ("epochs", COUNT),
    ("batch_size", COUNT),
    ("grad_accumulation", COUNT),
    ("workers", Bound::Whole { min: 0, max: 1024 }),
    ("seed", SEED),
    ("shuffle", SEED),
    (
        "devices",
        Bound::Whole {
            min: 1,
            max: 65_536,
        },
    ),
    ("unfreeze", COUNT),
    ("keep_last", COUNT),
    ("every", COUNT),
    ("patience", COUNT),
    ("lr", Bound::Positive),
    ("grad_clip", Bound::Positive),
    ("ema", Bound::Fraction),
];

/// The bound of `key`.
///
/// # Panics
/// If `key` is not in [`BOUNDS`]: callers name their settings.
pub fn of(key: &str) -> Bound {
    BOUNDS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, b)| *b)
        .unwrap_or_else(|| panic!("`{key}` has no bound in burn_experiment_vocabulary::bounds"))
}

impl Bound {
    /// Whether `value` lies within (a whole bound needs a whole number; nothing infinite or NaN).
    pub fn admits(self, value: f64) -> bool {
        value.is_finite()
            && match self {
                Bound::Whole { min, max } => {
                    value.fract() == 0.0 && value >= min as f64 && value <= max as f64
                }
                Bound::Positive => value > 0.0,
                Bound::Fraction => value > 0.0 && value < 1.0,
            }
    }

    /// The values, as a message states them.
    pub fn describe(self) -> String {
        match self {
            Bound::Whole { min, max } => format!("a whole number from {min} to {max}"),
            Bound::Positive => "a number above 0".to_owned(),
            Bound::Fraction => "a number between 0 and 1".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_admit_what_they_describe() {
        assert!(of("epochs").admits(1.0) && !of("epochs").admits(0.0));
        assert!(!of("epochs").admits(2.5));
        assert!(of("epochs").admits(4_294_967_295.0) && !of("epochs").admits(4_294_967_296.0));
        assert!(!of("batch_size").admits(9_223_372_036_854_775_808.0));
        assert!(of("seed").admits(18_446_744_073_709_551_615.0));
        assert!(of("seed").admits(0.0) && !of("seed").admits(-1.0));
        assert!(of("ema").admits(0.999) && !of("ema").admits(1.0));
        assert!(!of("grad_clip").admits(0.0) && !of("lr").admits(f64::NAN));
    }
}
