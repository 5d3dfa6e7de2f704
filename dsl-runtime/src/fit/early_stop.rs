//! Early stopping: stop when a metric has stopped improving.

use crate::history::History;
use crate::spec::EarlyStopping;

/// Early stopping: counts epochs since the watched metric last improved by more than `min_delta`.
pub(super) struct Plateau {
    rule: EarlyStopping,
    best: Option<(f64, usize)>,
    stale: usize,
}

impl Plateau {
    pub(super) fn new(rule: EarlyStopping) -> Self {
        Self {
            rule,
            best: None,
            stale: 0,
        }
    }

    pub(super) fn should_stop(&mut self, history: &History, epoch: usize) -> bool {
        let Some(series) = history.get(self.rule.split, &self.rule.metric) else {
            return false;
        };
        let Some(value) = series.at(epoch) else {
            return false;
        };
        let improved = match self.best {
            None => true,
            Some((best, _)) if series.higher_is_better => value > best + self.rule.min_delta,
            Some((best, _)) => value < best - self.rule.min_delta,
        };
        if improved {
            self.best = Some((value, epoch));
            self.stale = 0;
        } else {
            self.stale += 1;
        }
        self.stale >= self.rule.patience
    }

    pub(super) fn reason(&self) -> String {
        let (best, epoch) = self.best.unwrap_or((f64::NAN, 0));
        format!(
            "{}.{} has not improved for {} epochs (best {best:.4} at epoch {epoch})",
            self.rule.split, self.rule.metric, self.stale
        )
    }
}
