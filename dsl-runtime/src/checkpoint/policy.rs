//! Which epochs' checkpoints to keep.
//!
//! Policies compose as in Burn's `ComposedCheckpointingStrategy`: an epoch is kept while any
//! policy keeps it and deleted once none does. One rule is added: the newest epoch is always
//! kept until the next one is written, because it is where `resume: latest` continues.

use serde::{Deserialize, Serialize};

use crate::history::{History, Split};
use crate::via_value::via_value;

via_value!(Policy);

/// One checkpoint policy of `keep_last(n) | best(split.metric) | every(k)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum Policy {
    /// The `n` newest epochs.
    KeepLast {
        /// How many.
        n: usize,
    },
    /// The epoch where `split.metric` was best, by the metric's direction (loss down,
    /// accuracy up).
    Best {
        /// Split of the metric.
        split: Split,
        /// Key of the metric.
        metric: String,
    },
    /// Every epoch divisible by `k`.
    Every {
        /// The period.
        k: usize,
    },
}

impl Policy {
    fn keeps(&self, epoch: usize, newest: usize, history: &History) -> bool {
        match self {
            Policy::KeepLast { n } => epoch + n > newest,
            Policy::Best { split, metric } => history
                .get(*split, metric)
                .and_then(|s| s.best_epoch())
                .is_some_and(|best| best == epoch),
            Policy::Every { k } => *k > 0 && epoch.is_multiple_of(*k),
        }
    }
}

/// The epochs among `saved` to keep now that `newest` is written (`saved` includes it).
pub fn retained(
    policies: &[Policy],
    saved: &[usize],
    newest: usize,
    history: &History,
) -> Vec<usize> {
    saved
        .iter()
        .copied()
        .filter(|&e| e == newest || policies.iter().any(|p| p.keeps(e, newest, history)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(valid_loss: &[f64]) -> History {
        let mut h = History::default();
        let index = h.declare(Split::Valid, "loss", false);
        for (i, v) in valid_loss.iter().enumerate() {
            h.record_epoch(index, i + 1, *v);
        }
        h
    }

    /// Walks epochs 1..=n, saving each and deleting what the policies release.
    fn walk(policies: &[Policy], losses: &[f64]) -> Vec<usize> {
        let mut saved = Vec::new();
        for epoch in 1..=losses.len() {
            saved.push(epoch);
            saved = retained(policies, &saved, epoch, &history(&losses[..epoch]));
        }
        saved
    }

    fn seed_policies() -> Vec<Policy> {
        vec![
            Policy::KeepLast { n: 2 },
            Policy::Best {
                split: Split::Valid,
                metric: "loss".into(),
            },
        ]
    }

    #[test]
    fn keep_last_2_or_best_keeps_2_and_3_when_the_loss_falls() {
        assert_eq!(walk(&seed_policies(), &[0.74, 0.59, 0.50]), [2, 3]);
    }

    #[test]
    fn keep_last_2_or_best_keeps_1_2_3_when_epoch_1_was_best() {
        assert_eq!(walk(&seed_policies(), &[0.50, 0.59, 0.74]), [1, 2, 3]);
    }

    #[test]
    fn every_keeps_multiples_and_the_newest_is_kept_for_resuming() {
        let every = [Policy::Every { k: 2 }];
        assert_eq!(walk(&every, &[1.0; 5]), [2, 4, 5]);
        assert_eq!(walk(&[], &[1.0; 5]), [5]);
    }
}
