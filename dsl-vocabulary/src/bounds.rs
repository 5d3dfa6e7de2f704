//! The values each numeric setting takes: `training!` checks the values written in it at
//! compile time, the runtime checks those from `--set`, `--config` and code (`FitOptions`) before
//! the first step, and sweeps check their values against the same bounds.

/// The values a numeric setting takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// A whole number, at least this.
    Whole(u64),
    /// A number above 0.
    Positive,
    /// A number strictly between 0 and 1.
    Fraction,
}

/// Every numeric setting with its bound (`keep_last`, `every`: of `checkpoint`; `patience`:
/// of `early_stopping` and `plateau`).
pub const BOUNDS: &[(&str, Bound)] = &[
    ("epochs", Bound::Whole(1)),
    ("batch_size", Bound::Whole(1)),
    ("grad_accumulation", Bound::Whole(1)),
    ("workers", Bound::Whole(0)),
    ("seed", Bound::Whole(0)),
    ("shuffle", Bound::Whole(0)),
    ("devices", Bound::Whole(1)),
    ("unfreeze", Bound::Whole(1)),
    ("keep_last", Bound::Whole(1)),
    ("every", Bound::Whole(1)),
    ("patience", Bound::Whole(1)),
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
        .unwrap_or_else(|| panic!("`{key}` has no bound in dsl_vocabulary::bounds"))
}

impl Bound {
    /// Whether `value` lies within (a whole bound needs a whole number; nothing infinite or NaN).
    pub fn admits(self, value: f64) -> bool {
        value.is_finite()
            && match self {
                Bound::Whole(min) => value.fract() == 0.0 && value >= min as f64,
                Bound::Positive => value > 0.0,
                Bound::Fraction => value > 0.0 && value < 1.0,
            }
    }

    /// The values, as a message states them.
    pub fn describe(self) -> &'static str {
        match self {
            Bound::Whole(0) => "a whole number, 0 or more",
            Bound::Whole(_) => "a whole number of at least 1",
            Bound::Positive => "a number above 0",
            Bound::Fraction => "a number between 0 and 1",
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
        assert!(of("seed").admits(0.0) && !of("seed").admits(-1.0));
        assert!(of("ema").admits(0.999) && !of("ema").admits(1.0));
        assert!(!of("grad_clip").admits(0.0) && !of("lr").admits(f64::NAN));
    }
}
