//! When a watched metric stops improving: early stopping ends the run, a plateau schedule
//! lowers the learning rate. Both count epochs since the last improvement the same way.

use crate::config::spec::{EarlyStopping, PlateauRule};
use crate::history::{History, Series, improves};

/// The best value of a watched metric so far, and the epochs since it last improved by more
/// than `min_delta` (`history::improves`: the first finite value always counts).
#[derive(Default)]
struct Improvement {
    best: Option<(f64, usize)>,
    stale: usize,
}

impl Improvement {
    /// Takes `series`' value of `epoch` into account.
    fn observe(&mut self, series: &Series, value: f64, epoch: usize, min_delta: f64) {
        let best = self.best.map(|(best, _)| best);
        let improved = improves(value, best, series.higher_is_better, min_delta);
        if improved {
            self.best = Some((value, epoch));
            self.stale = 0;
        } else {
            self.stale += 1;
        }
    }
}

/// Early stopping: counts epochs since the watched metric last improved by more than `min_delta`.
pub(super) struct EarlyStop {
    rule: EarlyStopping,
    seen: Improvement,
}

impl EarlyStop {
    pub(super) fn new(rule: EarlyStopping) -> Self {
        Self {
            rule,
            seen: Improvement::default(),
        }
    }

    pub(super) fn should_stop(&mut self, history: &History, epoch: usize) -> bool {
        let Some(series) = history.get(self.rule.split, &self.rule.metric) else {
            return false;
        };
        let Some(value) = series.at(epoch) else {
            return false;
        };
        self.seen.observe(series, value, epoch, self.rule.min_delta);
        self.seen.stale >= self.rule.patience
    }

    /// Whether the last epoch seen ended the run.
    pub(super) fn stopped(&self) -> bool {
        self.seen.stale >= self.rule.patience
    }

    pub(super) fn reason(&self) -> String {
        let (best, epoch) = self.seen.best.unwrap_or((f64::NAN, 0));
        format!(
            "{}.{} has not improved for {} epochs (best {best:.4} at epoch {epoch})",
            self.rule.split, self.rule.metric, self.seen.stale
        )
    }
}

/// The factor a plateau schedule puts on the base rate during `epoch`, from the values of the
/// epochs before it: a pure function of the history, so a resumed run lowers the rate at the
/// same epochs. As PyTorch's `ReduceLROnPlateau`: more than `patience` epochs without
/// improvement multiply the rate by `factor` and start the count again.
pub(super) fn lr_scale(rule: &PlateauRule, history: &History, epoch: usize) -> f64 {
    let Some(series) = history.get(rule.split, &rule.metric) else {
        return 1.0;
    };
    let (mut seen, mut scale) = (Improvement::default(), 1.0);
    for e in 1..epoch {
        let Some(value) = series.at(e) else {
            continue;
        };
        seen.observe(series, value, e, 0.0);
        if seen.stale > rule.patience {
            scale *= rule.factor;
            seen.stale = 0;
        }
    }
    scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Split;

    #[test]
    fn a_plateau_lowers_the_rate_after_patience_epochs_without_improvement() {
        let mut history = History::default();
        let loss = history.declare(Split::Valid, "loss", false);
        for (epoch, value) in [1.0, 0.9, 0.95, 0.96, 0.8, 0.85, 0.86]
            .into_iter()
            .enumerate()
        {
            history.record_epoch(loss, epoch + 1, value);
        }
        let rule = PlateauRule {
            split: Split::Valid,
            metric: "loss".into(),
            factor: 0.5,
            patience: 1,
        };
        let scales: Vec<f64> = (1..=8)
            .map(|epoch| lr_scale(&rule, &history, epoch))
            .collect();
        // Epochs 3 and 4 do not improve on 0.9: the second is one more than the patience, so
        // epoch 5 runs at half; 0.8 improves; 6 and 7 do not, so epoch 8 runs at a quarter.
        assert_eq!(scales, [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]);
        let accuracy = PlateauRule {
            metric: "accuracy".into(),
            ..rule
        };
        assert_eq!(
            lr_scale(&accuracy, &history, 8),
            1.0,
            "an unrecorded metric changes nothing"
        );
    }
}
