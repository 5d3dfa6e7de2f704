//! Every metric value a run recorded, per epoch and (for training) per step.

use serde::{Deserialize, Serialize};

/// The splits of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Batches the model is trained on.
    Train,
    /// Batches the model is evaluated on after each training epoch.
    Valid,
    /// Batches the best (or last) checkpoint is evaluated on once, after training.
    Test,
}

impl Split {
    /// `train`, `valid` or `test`, as in `metrics.csv` and in `training!`.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Valid => "valid",
            Split::Test => "test",
        }
    }

    /// `train.<metric>` or `valid.<metric>`, the per-epoch metrics a sweep ranks by and a
    /// search optimizes, as its split and key; `None` for any other form.
    pub fn epoch_metric(text: &str) -> Option<(Split, &str)> {
        match text.split_once('.')? {
            ("train", key) => Some((Split::Train, key)),
            ("valid", key) => Some((Split::Valid, key)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The values of one metric on one split.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Series {
    /// The split the metric was measured on.
    pub split: Split,
    /// The metric's key (`loss`, `accuracy`, ...).
    pub metric: String,
    /// Whether larger values are better; decides which epoch is "best".
    pub higher_is_better: bool,
    /// `(epoch, value)` for every completed epoch.
    #[serde(with = "non_finite::epochs")]
    pub epochs: Vec<(usize, f64)>,
    /// The value of every training step, for metrics that have a per-batch value. Losses are
    /// stored as the exact `f32` the model produced, widened to `f64`. Not serialized: a
    /// checkpoint's state keeps epochs only, and a resume reads the steps back from
    /// `metrics.csv`.
    #[serde(skip)]
    pub steps: Vec<f64>,
}

/// Metric values in JSON, where NaN and the infinities have no number form: serde_json would
/// write them as `null`, which then fails to read back as a number and makes a checkpoint's
/// state unreadable. They are written as the strings `"NaN"`, `"inf"`, `"-inf"` instead.
mod non_finite {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Value {
        Number(f64),
        Word(String),
    }

    fn to_json(v: f64) -> Value {
        match v {
            v if v.is_finite() => Value::Number(v),
            v if v.is_nan() => Value::Word("NaN".to_owned()),
            v if v > 0.0 => Value::Word("inf".to_owned()),
            _ => Value::Word("-inf".to_owned()),
        }
    }

    fn from_json<E: serde::de::Error>(v: Value) -> Result<f64, E> {
        match v {
            Value::Number(v) => Ok(v),
            Value::Word(w) => match w.as_str() {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => Err(E::custom(format!("`{other}` is not a metric value"))),
            },
        }
    }

    pub mod epochs {
        use super::*;

        pub fn serialize<S: Serializer>(values: &[(usize, f64)], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(values.iter().map(|&(e, v)| (e, to_json(v))))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(usize, f64)>, D::Error> {
            Vec::<(usize, Value)>::deserialize(d)?
                .into_iter()
                .map(|(e, v)| Ok((e, from_json(v)?)))
                .collect()
        }
    }
}

/// Where and how extreme a series got: one row of the summary table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extremes {
    /// Smallest value and its epoch.
    pub min: (f64, usize),
    /// Largest value and its epoch.
    pub max: (f64, usize),
}

impl Series {
    /// The value recorded for `epoch`, if that epoch completed.
    pub fn at(&self, epoch: usize) -> Option<f64> {
        self.epochs
            .iter()
            .find(|(e, _)| *e == epoch)
            .map(|(_, v)| *v)
    }

    /// The per-epoch values in epoch order.
    pub fn values(&self) -> Vec<f64> {
        self.epochs.iter().map(|(_, v)| *v).collect()
    }

    /// Minimum and maximum over epochs (the first epoch wins ties); `None` before any epoch or
    /// when every value is NaN.
    pub fn extremes(&self) -> Option<Extremes> {
        let mut finite = self.epochs.iter().filter(|(_, v)| !v.is_nan());
        let &(e0, v0) = finite.next()?;
        let mut ext = Extremes {
            min: (v0, e0),
            max: (v0, e0),
        };
        for &(e, v) in finite {
            if v < ext.min.0 {
                ext.min = (v, e);
            }
            if v > ext.max.0 {
                ext.max = (v, e);
            }
        }
        Some(ext)
    }

    /// The epoch with the best value, by the metric's direction ([`best_of`]).
    pub fn best_epoch(&self) -> Option<usize> {
        best_of(self.epochs.iter().copied(), self.higher_is_better).map(|(epoch, _)| epoch)
    }
}

/// Whether `value` improves on `best` by more than `min_delta` in the metric's direction: the one
/// rule of "better" that `best(..)` checkpoints, `load_best`, sweep rankings, early stopping and
/// the plateau schedule share. A value that is not finite (a diverged loss) never improves; any
/// finite value improves on none.
pub fn improves(value: f64, best: Option<f64>, higher_is_better: bool, min_delta: f64) -> bool {
    value.is_finite()
        && best.is_none_or(|best| {
            if higher_is_better {
                value > best + min_delta
            } else {
                value < best - min_delta
            }
        })
}

/// The best `(epoch, value)` of `values` by [`improves`]; of equal values, the earliest.
pub fn best_of(
    values: impl IntoIterator<Item = (usize, f64)>,
    higher_is_better: bool,
) -> Option<(usize, f64)> {
    values.into_iter().fold(None, |best, (epoch, value)| {
        if improves(value, best.map(|(_, b)| b), higher_is_better, 0.0) {
            Some((epoch, value))
        } else {
            best
        }
    })
}

/// All series of a run, in the order the metrics were declared (train first).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct History {
    series: Vec<Series>,
}

impl History {
    pub(crate) fn declare(&mut self, split: Split, metric: &str, higher_is_better: bool) -> usize {
        self.series.push(Series {
            split,
            metric: metric.to_owned(),
            higher_is_better,
            epochs: Vec::new(),
            steps: Vec::new(),
        });
        self.series.len() - 1
    }

    pub(crate) fn record_step(&mut self, index: usize, value: f64) {
        self.series[index].steps.push(value);
    }

    pub(crate) fn record_epoch(&mut self, index: usize, epoch: usize, value: f64) {
        self.series[index].epochs.push((epoch, value));
    }

    /// The same series with their epochs' values only: what a checkpoint's state saves, taken
    /// without copying the steps' values (8 bytes a step, megabytes in a long run).
    pub(crate) fn epochs_only(&self) -> History {
        History {
            series: self
                .series
                .iter()
                .map(|s| Series {
                    split: s.split,
                    metric: s.metric.clone(),
                    higher_is_better: s.higher_is_better,
                    epochs: s.epochs.clone(),
                    steps: Vec::new(),
                })
                .collect(),
        }
    }

    /// Every series, train metrics first, each split in declaration order.
    pub fn series(&self) -> &[Series] {
        &self.series
    }

    /// The series of `metric` on `split`.
    pub fn get(&self, split: Split, metric: &str) -> Option<&Series> {
        self.series
            .iter()
            .find(|s| s.split == split && s.metric == metric)
    }

    /// Per-step training losses exactly as the model computed them; empty when `train.loss` was
    /// not recorded.
    pub fn train_losses(&self) -> Vec<f32> {
        self.get(Split::Train, "loss")
            .map(|s| s.steps.iter().map(|&v| v as f32).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[f64], higher_is_better: bool) -> Series {
        Series {
            split: Split::Valid,
            metric: "m".into(),
            higher_is_better,
            epochs: values
                .iter()
                .enumerate()
                .map(|(i, v)| (i + 1, *v))
                .collect(),
            steps: vec![],
        }
    }

    #[test]
    fn one_rule_of_better_skips_what_is_not_finite_and_keeps_the_earliest_tie() {
        use super::{best_of, improves};
        assert!(improves(1.0, None, false, 0.0));
        assert!(!improves(f64::NAN, None, false, 0.0), "NaN is never best");
        assert!(!improves(f64::NEG_INFINITY, Some(1.0), false, 0.0));
        assert!(!improves(0.95, Some(1.0), false, 0.1), "within min_delta");
        let values = [
            (1, f64::NAN),
            (2, 0.5),
            (3, 0.4),
            (4, 0.4),
            (5, f64::INFINITY),
        ];
        assert_eq!(best_of(values, false), Some((3, 0.4)));
        assert_eq!(best_of(values, true), Some((2, 0.5)));
        assert_eq!(best_of([(1, f64::NAN)], true), None);
    }

    #[test]
    fn extremes_name_their_epochs_and_skip_nan() {
        let s = series(&[0.7, f64::NAN, 0.5, 0.9, 0.5], false);
        let ext = s.extremes().unwrap();
        assert_eq!(ext.min, (0.5, 3));
        assert_eq!(ext.max, (0.9, 4));
        assert_eq!(s.best_epoch(), Some(3));
        assert_eq!(series(&[70.0, 80.0, 75.0], true).best_epoch(), Some(2));
        assert_eq!(series(&[f64::NAN], true).extremes(), None);
    }

    #[test]
    fn non_finite_values_survive_a_json_round_trip() {
        let mut s = series(&[0.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY], false);
        s.steps = vec![0.1, f64::NAN, 1e300];
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("null"), "{json}");
        let back: Series = serde_json::from_str(&json).unwrap();
        assert_eq!(back.values()[0], 0.5);
        assert!(back.values()[1].is_nan());
        assert_eq!(back.values()[2..], [f64::INFINITY, f64::NEG_INFINITY]);
        assert!(
            back.steps.is_empty(),
            "steps are metrics.csv's, not the state's"
        );
        assert!(serde_json::from_str::<Series>(&json.replace("\"inf\"", "\"lots\"")).is_err());
    }
}
