//! Whether a trial stops early, at the end of an epoch, from its objective so far and the
//! curves of the trials it may compare with. Burn has no pruner; the rules are Optuna's
//! `MedianPruner` and `SuccessiveHalvingPruner` (ASHA), written here on curves of epochs.
//!
//! Every value here is "lower is better" (a maximized objective is negated before), and a
//! non-finite value is the worst.

use serde::{Deserialize, Serialize};

use burn_experiment_vocabulary::search::{
    ASHA_ETA, ASHA_MIN_EPOCHS, MEDIAN_STARTUP, MEDIAN_WARMUP,
};

/// A trial's objective per epoch, `(epoch, value)`, lower better.
pub type Curve = [(usize, f64)];

/// The rule that stops bad trials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pruner {
    /// Every trial trains to its last epoch.
    #[default]
    None,
    /// Stops a trial whose best value so far is worse than the median of the other trials'
    /// best values by the same epoch.
    Median,
    /// Successive halving: at epochs 2, 6, 18, .. a trial goes on only if its value is in the
    /// best third of the values other trials had at that epoch.
    Asha,
}

impl Pruner {
    /// `none`, `median` or `asha`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "none" => Ok(Pruner::None),
            "median" => Ok(Pruner::Median),
            "asha" => Ok(Pruner::Asha),
            other => Err(format!(
                "--prune `{other}`: the pruners are {}",
                burn_experiment_vocabulary::search::PRUNERS.join(", ")
            )),
        }
    }

    /// Why the trial whose curve is `own` stops after `epoch` (its last epoch would be `last`),
    /// compared with `others`; `None` to go on.
    pub fn decide(
        self,
        epoch: usize,
        last: usize,
        own: &Curve,
        others: &[&Curve],
    ) -> Option<String> {
        if epoch >= last {
            return None;
        }
        match self {
            Pruner::None => None,
            Pruner::Median => median(epoch, own, others),
            Pruner::Asha => asha(epoch, own, others),
        }
    }
}

/// The best value of `curve` up to `epoch`, if it reached `epoch`.
fn best_by(curve: &Curve, epoch: usize) -> Option<f64> {
    curve.iter().any(|&(e, _)| e == epoch).then(|| {
        curve
            .iter()
            .filter(|&&(e, _)| e <= epoch)
            .map(|&(_, v)| if v.is_nan() { f64::INFINITY } else { v })
            .fold(f64::INFINITY, f64::min)
    })
}

fn median(epoch: usize, own: &Curve, others: &[&Curve]) -> Option<String> {
    if epoch <= MEDIAN_WARMUP {
        return None;
    }
    let mut values: Vec<f64> = others.iter().filter_map(|c| best_by(c, epoch)).collect();
    if values.len() < MEDIAN_STARTUP {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    };
    let mine = best_by(own, epoch)?;
    (mine > median).then(|| {
        format!("its best value by epoch {epoch}, {mine}, is worse than the median {median} of {n} earlier trials")
    })
}

fn asha(epoch: usize, own: &Curve, others: &[&Curve]) -> Option<String> {
    // Rungs at ASHA_MIN_EPOCHS · ASHA_ETA^k.
    let mut rung = ASHA_MIN_EPOCHS;
    while rung < epoch {
        rung *= ASHA_ETA;
    }
    if rung != epoch {
        return None;
    }
    let at = |c: &Curve| {
        c.iter()
            .find(|&&(e, _)| e == epoch)
            .map(|&(_, v)| if v.is_nan() { f64::INFINITY } else { v })
    };
    let mine = at(own)?;
    let mut values: Vec<f64> = others.iter().filter_map(|c| at(c)).collect();
    values.push(mine);
    values.sort_by(f64::total_cmp);
    // The best 1/η go on; with fewer than η values, as Optuna, only the best.
    let promoted = (values.len() / ASHA_ETA).max(1);
    let threshold = values[promoted - 1];
    (mine > threshold).then(|| {
        format!(
            "at epoch {epoch} its value {mine} is not among the best {promoted} of {} trials there (1 in {ASHA_ETA} goes on)",
            values.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(values: &[f64]) -> Vec<(usize, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(e, &v)| (e + 1, v))
            .collect()
    }

    #[test]
    fn the_median_rule_waits_for_its_startup_trials_and_its_warm_up() {
        let others: Vec<Vec<(usize, f64)>> = (0..5)
            .map(|k| curve(&[1.0, 0.5 + 0.1 * k as f64, 0.3]))
            .collect();
        let others: Vec<&Curve> = others.iter().map(Vec::as_slice).collect();
        let bad = curve(&[2.0, 0.9]);
        // Not in its warm-up (epoch 1), however bad: from epoch 2 on.
        assert_eq!(MEDIAN_WARMUP, 1);
        assert!(Pruner::Median.decide(1, 3, &bad[..1], &others).is_none());
        let why = Pruner::Median.decide(2, 3, &bad, &others).unwrap();
        assert!(why.contains("median 0.7 of 5 earlier trials"), "{why}");
        assert!(
            Pruner::Median
                .decide(2, 3, &curve(&[2.0, 0.6]), &others)
                .is_none()
        );
        assert!(
            Pruner::Median.decide(2, 3, &bad, &others[..4]).is_none(),
            "startup"
        );
        assert!(
            Pruner::Median
                .decide(3, 3, &curve(&[2.0, 0.9, 0.9]), &others)
                .is_none(),
            "last epoch"
        );
        assert!(Pruner::None.decide(2, 3, &bad, &others).is_none());
    }

    #[test]
    fn successive_halving_keeps_a_third_at_each_rung() {
        assert_eq!((ASHA_MIN_EPOCHS, ASHA_ETA), (2, 3));
        let others: Vec<Vec<(usize, f64)>> = [0.1, 0.2, 0.3, 0.4, 0.5]
            .iter()
            .map(|&v| curve(&[v; 6]))
            .collect();
        let others: Vec<&Curve> = others.iter().map(Vec::as_slice).collect();
        // Six values at epoch 2: the best two go on.
        assert!(
            Pruner::Asha
                .decide(2, 18, &curve(&[9.0, 0.15]), &others)
                .is_none()
        );
        assert!(
            Pruner::Asha
                .decide(2, 18, &curve(&[9.0, 0.25]), &others)
                .is_some()
        );
        // Epochs 1 and 3 are no rung; 6 is.
        assert!(
            Pruner::Asha
                .decide(1, 18, &curve(&[9.0]), &others)
                .is_none()
        );
        assert!(
            Pruner::Asha
                .decide(3, 18, &curve(&[9.0, 0.15, 0.9]), &others)
                .is_none()
        );
        let late = curve(&[9.0, 0.15, 0.9, 0.9, 0.9, 0.9]);
        assert!(Pruner::Asha.decide(6, 18, &late, &others).is_some());
        // The first trial, alone at its rung, goes on; NaN is the worst value.
        assert!(
            Pruner::Asha
                .decide(2, 18, &curve(&[5.0, 5.0]), &[])
                .is_none()
        );
        let nan = curve(&[f64::NAN, f64::NAN]);
        assert!(Pruner::Asha.decide(2, 18, &nan, &others[..2]).is_some());
    }
}
