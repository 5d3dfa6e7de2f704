//! `--verify RUN_DIR`: rerun a recorded run from its `config.json` and compare every value of
//! its `metrics.csv`, bit for bit. The fit loop is deterministic (same data, order, seed and
//! weights give the same bits), so any difference has a cause; when one is found, the report
//! names the first diverging step and every recorded fact (versions, git commit, data
//! fingerprints, settings) that differs in the rerun.

use std::path::{Path, PathBuf};

use crate::history::History;
use crate::output::run_dir::CsvValue;
use crate::provenance::Provenance;
use crate::{FitError, FitOptions};

/// A recorded run: its directory, `config.json` and the rows of `metrics.csv`.
pub struct Recorded {
    dir: PathBuf,
    config: serde_json::Value,
    rows: Vec<Row>,
}

/// One row of `metrics.csv`, its value kept as written.
struct Row {
    step: Option<usize>,
    epoch: usize,
    split: String,
    metric: String,
    value: String,
}

impl Recorded {
    /// Reads `dir/config.json` and `dir/metrics.csv`.
    pub fn read(dir: &Path) -> Result<Self, FitError> {
        let invalid = |message: String| FitError::InvalidOption {
            option: "verify",
            message,
        };
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|e| {
                invalid(format!(
                    "cannot read {}: {e}; name a run directory (e.g. artifacts/<name>/run-1)",
                    dir.join(name).display()
                ))
            })
        };
        let config = serde_json::from_str(&read("config.json")?)
            .map_err(|e| invalid(format!("{}/config.json is not JSON: {e}", dir.display())))?;
        let rows = read("metrics.csv")?
            .lines()
            .skip(1)
            .filter_map(|line| {
                let [step, epoch, split, metric, value] = line.split(',').collect::<Vec<_>>()[..]
                else {
                    return None;
                };
                Some(Row {
                    step: step.parse().ok(),
                    epoch: epoch.parse().ok()?,
                    split: split.to_owned(),
                    metric: metric.to_owned(),
                    value: value.to_owned(),
                })
            })
            .collect();
        Ok(Self {
            dir: dir.to_owned(),
            config,
            rows,
        })
    }

    /// The recorded `config.json`.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// Makes `options` (resolved from the recorded config) rerun the recorded run from its
    /// start, writing nothing (no checkpoint either: checkpoints do not change what is
    /// computed): the batch limits the run had are taken from its `config.json`
    /// (they are run options, not part of the experiment's config).
    pub fn prepare(&self, options: &mut FitOptions) {
        let saved: Option<FitOptions> = serde_json::from_value(self.config.clone()).ok();
        if let Some(saved) = saved {
            options.limit_train_batches = saved.limit_train_batches;
            options.limit_valid_batches = saved.limit_valid_batches;
        }
        options.resume = None;
        options.checkpoint = None;
        options.run = None;
        options.first_epoch = 1;
        options.write_files = false;
    }

    /// Compares the rerun's values (`history`) and `config.json` (`config`) with the recorded
    /// ones: `Ok` with a one-line summary when every value is bit-identical, else
    /// [`FitError::NotReproduced`] naming the first difference and its likely causes.
    pub fn check(&self, history: &History, config: &serde_json::Value) -> Result<String, FitError> {
        if config.is_null() {
            return Err(FitError::InvalidOption {
                option: "verify",
                message: "a run on Burn's engine records no per-step values to compare; verify runs of our fit loop".into(),
            });
        }
        let steps = self.rows.iter().filter(|r| r.step.is_some()).count();
        if steps == 0 {
            return Err(FitError::InvalidOption {
                option: "verify",
                message: format!(
                    "{}/metrics.csv has no per-step value to compare: record `train.loss` in `metrics`",
                    self.dir.display()
                ),
            });
        }
        match self.first_difference(history) {
            None => Ok(format!(
                "reproduced {}: {} steps and {} epoch values, bit-identical",
                self.dir.display(),
                count_steps(&self.rows),
                self.rows.len() - steps,
            )),
            Some(difference) => Err(FitError::NotReproduced {
                run: self.dir.clone(),
                difference,
                causes: self.causes(config),
            }),
        }
    }

    /// The first row the rerun does not reproduce: per-step values in step order, then epoch
    /// values in epoch order.
    fn first_difference(&self, history: &History) -> Option<String> {
        let mut ordinal = std::collections::HashMap::<(&str, &str), usize>::new();
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|r| (r.step.is_none(), r.step.unwrap_or(0), r.epoch));
        rows.into_iter().find_map(|row| {
            let series = history
                .series()
                .iter()
                .find(|s| s.split.as_str() == row.split && s.metric == row.metric);
            let rerun = match row.step {
                Some(_) => {
                    let k = ordinal.entry((&row.split, &row.metric)).or_default();
                    *k += 1;
                    series.and_then(|s| s.steps.get(*k - 1).copied())
                }
                None => series.and_then(|s| s.at(row.epoch)),
            };
            let at = match row.step {
                Some(step) => format!("step {step} (epoch {})", row.epoch),
                None => format!("the end of epoch {}", row.epoch),
            };
            let what = format!("{}.{}", row.split, row.metric);
            match rerun.map(|v| CsvValue(v).to_string()) {
                Some(value) if value == row.value => None,
                Some(value) => Some(format!(
                    "{what} at {at}: recorded {}{}, rerun {value}{}",
                    row.value,
                    bits(&row.value),
                    bits(&value)
                )),
                None => Some(format!(
                    "{what} at {at}: recorded {}, the rerun has no value there",
                    row.value
                )),
            }
        })
    }

    /// Every recorded fact that differs in the rerun, and what made the recorded run itself
    /// unrepeatable.
    fn causes(&self, rerun: &serde_json::Value) -> Vec<String> {
        let provenance = |config: &serde_json::Value| {
            serde_json::from_value::<Provenance>(config["provenance"].clone()).ok()
        };
        let mut causes = match (provenance(&self.config), provenance(rerun)) {
            (Some(was), Some(now)) => was.differences(&now),
            _ => vec!["the recorded run has no `provenance` in its config.json (an older version wrote it)".into()],
        };
        let settings = |config: &serde_json::Value| {
            let mut config = config.clone();
            if let Some(map) = config.as_object_mut() {
                for key in [
                    "provenance",
                    "resumed_with_changes",
                    "write_files",
                    "first_epoch",
                ] {
                    map.remove(key);
                }
            }
            config
        };
        causes.extend(
            crate::fit::setting_changes(&settings(&self.config), &settings(rerun))
                .into_iter()
                .map(|change| format!("setting {change}")),
        );
        if let Some(changed) = self.config["resumed_with_changes"].as_array() {
            let changed: Vec<&str> = changed.iter().filter_map(|c| c.as_str()).collect();
            causes.push(format!(
                "the recorded run was resumed with changed settings (--resume-changed): {}",
                changed.join("; ")
            ));
        }
        if self.config["hyperparameters"]["seed"].is_null() {
            causes.push(
                "the recorded run has no `seed`: its initial weights came from the device RNG's state at start-up; set `seed: N` to fix them"
                    .into(),
            );
        }
        causes
    }
}

/// The distinct steps among `rows`.
fn count_steps(rows: &[Row]) -> usize {
    let mut steps: Vec<usize> = rows.iter().filter_map(|r| r.step).collect();
    steps.sort_unstable();
    steps.dedup();
    steps.len()
}

/// ` (f32 bits 0x…)` for a value written as an `f32` (every loss), else nothing.
fn bits(text: &str) -> String {
    match text.parse::<f32>() {
        Ok(v) if CsvValue(f64::from(v)).to_string() == text => {
            format!(" (f32 bits {:#010x})", v.to_bits())
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Split;

    fn row(step: Option<usize>, epoch: usize, split: Split, metric: &str, value: f64) -> Row {
        Row {
            step,
            epoch,
            split: split.as_str().to_owned(),
            metric: metric.to_owned(),
            value: CsvValue(value).to_string(),
        }
    }

    fn recorded(rows: Vec<Row>, config: serde_json::Value) -> Recorded {
        Recorded {
            dir: PathBuf::from("run-1"),
            config,
            rows,
        }
    }

    fn history(steps: &[f64], epoch_value: f64) -> History {
        let mut history = History::default();
        let loss = history.declare(Split::Train, "loss", false);
        for &v in steps {
            history.record_step(loss, v);
        }
        history.record_epoch(loss, 1, epoch_value);
        history
    }

    fn config(seed: Option<u64>, hash: &str) -> serde_json::Value {
        serde_json::json!({
            "batch_size": 2,
            "hyperparameters": { "seed": seed, "lr": 0.1 },
            "provenance": crate::provenance::Provenance::new(Path::new("/")).data(
                "train",
                crate::provenance::DataFingerprint { items: 4, hash: Some(hash.into()) },
            ),
        })
    }

    #[test]
    fn identical_values_are_reproduced() {
        let losses = [f64::from(0.7_f32), f64::from(0.5_f32)];
        let rows = vec![
            row(Some(1), 1, Split::Train, "loss", losses[0]),
            row(Some(2), 1, Split::Train, "loss", losses[1]),
            row(None, 1, Split::Train, "loss", 0.6),
        ];
        let run = recorded(rows, config(Some(1), "aa"));
        let summary = run
            .check(&history(&losses, 0.6), &config(Some(1), "aa"))
            .unwrap();
        assert!(
            summary.contains("2 steps and 1 epoch values, bit-identical"),
            "{summary}"
        );
    }

    #[test]
    fn the_first_diverging_step_and_the_changed_data_are_named() {
        let losses = [f64::from(0.7_f32), f64::from(0.5_f32), f64::from(0.4_f32)];
        let rows = losses
            .iter()
            .enumerate()
            .map(|(i, &v)| row(Some(i + 1), 1, Split::Train, "loss", v))
            .collect();
        let run = recorded(rows, config(Some(1), "aa"));
        // One ulp off at step 2.
        let off = f64::from(f32::from_bits(0.5_f32.to_bits() + 1));
        let rerun = history(&[losses[0], off, losses[2]], 0.6);
        let err = run
            .check(&rerun, &config(Some(1), "bb"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("train.loss at step 2 (epoch 1): recorded 0.5 (f32 bits 0x3f000000), rerun 0.50000006"), "{err}");
        assert!(
            err.contains("data `train`: 4 items, hash aa → 4 items, hash bb"),
            "{err}"
        );
        assert!(!err.contains("seed"), "{err}");
    }

    #[test]
    fn a_run_without_a_seed_is_named_as_the_cause() {
        let rows = vec![row(Some(1), 1, Split::Train, "loss", 0.5)];
        let run = recorded(rows, config(None, "aa"));
        let err = run
            .check(&history(&[0.25], 0.25), &config(None, "aa"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("has no `seed`"), "{err}");
    }

    #[test]
    fn a_shorter_rerun_is_a_difference() {
        let rows = vec![
            row(Some(1), 1, Split::Train, "loss", 0.5),
            row(Some(2), 1, Split::Train, "loss", 0.25),
        ];
        let run = recorded(rows, config(Some(1), "aa"));
        let err = run
            .check(&history(&[0.5], 0.5), &config(Some(1), "aa"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("step 2 (epoch 1): recorded 0.25, the rerun has no value there"),
            "{err}"
        );
    }
}
