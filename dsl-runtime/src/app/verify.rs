//! `--verify RUN_DIR`: rerun a recorded run from its `config.json` and compare every row of
//! its `metrics.csv`, bit for bit. The rerun is a whole run in a scratch folder, removed
//! afterwards, checkpoints included: the test split is measured on the checkpoint `best(..)`
//! picks, as in the recorded run. The fit loop is deterministic (same data, order, seed and
//! weights give the same bits), so any difference has a cause; when one is found, the report
//! names the first diverging step and every recorded fact (versions, git commit, data
//! fingerprints, settings) that differs in the rerun.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::output::metrics_csv::{HEADER, Key, Row};
use crate::provenance::Provenance;
use crate::{config::options::FitOptions, error::FitError};

/// A recorded run: its directory, `config.json` and the text of `metrics.csv`; and the
/// scratch folder its rerun writes to, removed when this is dropped.
pub struct Recorded {
    dir: PathBuf,
    config: serde_json::Value,
    csv: String,
    scratch: PathBuf,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// One row of `metrics.csv` with its line number (1 is the header).
struct Numbered {
    line: usize,
    key: Key,
    value: String,
}

/// The rows of `metrics.csv` lines that follow the header (whose line is 1), and a note for
/// each line that is not a row.
fn rows(text: &str) -> (Vec<Numbered>, Vec<(usize, String)>) {
    let (mut rows, mut bad) = (Vec::new(), Vec::new());
    for (k, line) in text.lines().enumerate() {
        let number = k + 2;
        match Row::parse(line) {
            Some(Row { key, value }) => rows.push(Numbered {
                line: number,
                key,
                value,
            }),
            None => bad.push((number, format!("line {number} is not a row: `{line}`"))),
        }
    }
    (rows, bad)
}

impl Recorded {
    /// Reads `dir/config.json` and `dir/metrics.csv`.
    pub fn read(dir: &Path) -> Result<Self, FitError> {
        let invalid = |message: String| FitError::InvalidOption {
            option: "verify",
            message,
        };
        let read = |name: &str, bound| {
            crate::read::text(&dir.join(name), bound).map_err(|e| {
                invalid(format!(
                    "cannot read {}: {e}; name a run directory (e.g. artifacts/<name>/run-1)",
                    dir.join(name).display()
                ))
            })
        };
        let config = crate::read::json(read("config.json", crate::read::CONFIG)?.as_bytes())
            .map_err(|e| invalid(format!("{}/config.json is not JSON: {e}", dir.display())))?;
        Ok(Self {
            dir: dir.to_owned(),
            config,
            csv: read("metrics.csv", crate::read::METRICS)?,
            scratch: scratch_dir(),
        })
    }

    /// The recorded `config.json`.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// Makes `options` (resolved from the recorded config) rerun the recorded run from its
    /// start as a fresh run in the scratch folder, nothing written where the user's runs are:
    /// the batch limits the run had are taken from its `config.json` (they are run options,
    /// not part of the experiment's config).
    pub fn prepare(&self, options: &mut FitOptions) {
        let saved: Option<FitOptions> = serde_json::from_value(self.config.clone()).ok();
        if let Some(saved) = saved {
            options.limit_train_batches = saved.limit_train_batches;
            options.limit_valid_batches = saved.limit_valid_batches;
            // An N-rank run is defined as, and tested equal to, one process accumulating N
            // batches per step: that is the rerun.
            if let Some(ranks) = saved.ranks {
                options.grad_accumulation = Some(ranks);
                // Its steps drew from per-batch streams of seed 0 when it had no seed.
                options.seed = saved.seed.or(Some(0));
            }
        }
        options.resume = None;
        options.run = None;
        options.first_epoch = 1;
        options.write_files = true;
        options.artifacts = self.scratch.clone();
    }

    /// Compares the rerun's `metrics.csv` (in `rerun`, its run directory) and its `config.json`
    /// (`config`) with the recorded ones, row by row in file order:
    /// `Ok` with a one-line summary when every row is there, in its place, bit-identical; else
    /// [`FitError::NotReproduced`] naming each difference (a changed value, a row missing,
    /// added, repeated, out of order or unreadable) and the likely causes.
    pub fn check(&self, rerun: &Path, config: &serde_json::Value) -> Result<String, FitError> {
        if config.is_null() {
            return Err(FitError::InvalidOption {
                option: "verify",
                message: "a run on Burn's engine records no per-step values to compare; verify runs of our fit loop".into(),
            });
        }
        let rerun =
            crate::read::text(&rerun.join("metrics.csv"), crate::read::METRICS).map_err(|e| {
                FitError::InvalidOption {
                    option: "verify",
                    message: format!("the rerun's metrics.csv in {}: {e}", rerun.display()),
                }
            })?;
        let rerun = rerun.split_once('\n').map_or("", |(_, rows)| rows);
        let (header, body) = self.csv.split_once('\n').unwrap_or((&self.csv, ""));
        let mut problems = Vec::new();
        if header != HEADER {
            problems.push((1, format!("line 1 is not the header `{HEADER}`")));
        }
        let (recorded, bad) = rows(body);
        problems.extend(bad);
        if problems.is_empty() && !recorded.iter().any(|r| r.key.step.is_some()) {
            return Err(FitError::InvalidOption {
                option: "verify",
                message: format!(
                    "{}/metrics.csv has no per-step value to compare: record `train.loss` in `metrics`",
                    self.dir.display()
                ),
            });
        }
        problems.extend(differences(&recorded, &rows(rerun).0));
        if problems.is_empty() {
            let steps: std::collections::HashSet<usize> =
                recorded.iter().filter_map(|r| r.key.step).collect();
            let epoch_values = recorded.iter().filter(|r| r.key.step.is_none()).count();
            let how = match self.ranks() {
                Some(n) => format!(
                    " (the {n}-rank run rerun in one process accumulating {n} batches per step, the run it equals)"
                ),
                None => String::new(),
            };
            return Ok(format!(
                "reproduced {}: {} steps and {epoch_values} epoch values, bit-identical{how}",
                self.dir.display(),
                steps.len(),
            ));
        }
        problems.sort_by_key(|(line, _)| *line);
        const SHOWN: usize = 5;
        let mut difference: Vec<String> = problems
            .iter()
            .take(SHOWN)
            .map(|(_, problem)| problem.clone())
            .collect();
        if problems.len() > SHOWN {
            difference.push(format!("… and {} more", problems.len() - SHOWN));
        }
        Err(FitError::NotReproduced {
            run: self.dir.clone(),
            difference: difference.join("\n  "),
            causes: self.causes(config),
        })
    }

    /// The number of ranks of a data-parallel recorded run.
    fn ranks(&self) -> Option<u64> {
        self.config["ranks"].as_u64()
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
                // What differs by construction: the rerun's folder, and what a resume and
                // the record of it change.
                for key in [
                    "provenance",
                    "resumed_with_changes",
                    "write_files",
                    "first_epoch",
                    "artifacts",
                    "run",
                    "resume",
                ] {
                    map.remove(key);
                }
                // An N-rank run is rerun as one process accumulating N batches.
                if self.ranks().is_some() {
                    map.remove("ranks");
                    map.remove("grad_accumulation");
                    map.remove("seed");
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

/// A folder of this process for a rerun: unique per `Recorded`, under the system's temporary
/// folder.
fn scratch_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("dsl-verify-{}-{n}", std::process::id()))
}

/// Every way `recorded` differs from `rerun`, each with the recorded line it concerns.
fn differences(recorded: &[Numbered], rerun: &[Numbered]) -> Vec<(usize, String)> {
    let mut problems = Vec::new();
    let position: HashMap<&Key, usize> =
        rerun.iter().enumerate().map(|(i, r)| (&r.key, i)).collect();
    let mut seen: HashMap<&Key, usize> = HashMap::new();
    // Where the rerun writes the last recorded row found in order, and that row's line.
    let mut last: Option<(usize, usize)> = None;
    for row in recorded {
        let line = row.line;
        if let Some(&first) = seen.get(&row.key) {
            problems.push((
                line,
                format!(
                    "line {line}: {} appears again (first at line {first})",
                    row.key
                ),
            ));
            continue;
        }
        seen.insert(&row.key, line);
        let Some(&at) = position.get(&row.key) else {
            problems.push((
                line,
                format!(
                    "line {line}: {} is recorded, but the rerun has no such row",
                    row.key
                ),
            ));
            continue;
        };
        match last {
            Some((before, earlier)) if at < before => problems.push((
                line,
                format!(
                    "line {line}: {} is out of order: the rerun writes it before line {earlier}'s row",
                    row.key
                ),
            )),
            _ => last = Some((at, line)),
        }
        let value = &rerun[at].value;
        if *value != row.value {
            problems.push((
                line,
                format!(
                    "line {line}: {}: recorded {}{}, rerun {value}{}",
                    row.key,
                    row.value,
                    bits(&row.value),
                    bits(value)
                ),
            ));
        }
    }
    // Rows of the rerun that the record lacks, placed after the recorded row before them.
    let mut previous = 1;
    for row in rerun {
        match seen.get(&row.key) {
            Some(&line) => previous = line,
            None => problems.push((
                previous,
                format!(
                    "after line {previous}: {} is missing from the record (the rerun has {})",
                    row.key, row.value
                ),
            )),
        }
    }
    problems
}

/// ` (f64 bits 0x…)`, with the `f32` bits too when the value is exactly an `f32` (a loss).
fn bits(text: &str) -> String {
    let Ok(value) = text.parse::<f64>() else {
        return String::new();
    };
    let narrow = value as f32;
    if f64::from(narrow) == value {
        format!(
            " (f64 bits {:#018x}, f32 bits {:#010x})",
            value.to_bits(),
            narrow.to_bits()
        )
    } else {
        format!(" (f64 bits {:#018x})", value.to_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four steps over two epochs, with epoch rows, as the fit loop writes them.
    const ROWS: &str = "1,1,train,loss,0.699999988079071
2,1,train,loss,0.5
,1,train,loss,0.6
,1,valid,accuracy,50
3,2,train,loss,0.4000000059604645
4,2,train,loss,0.30000001192092896
,2,train,loss,0.35
,2,valid,accuracy,62.5
";

    fn recorded(rows: &str, config: serde_json::Value) -> Recorded {
        Recorded {
            dir: PathBuf::from("run-1"),
            config,
            csv: format!("{HEADER}\n{rows}"),
            scratch: scratch_dir(),
        }
    }

    /// A rerun's run directory, its `metrics.csv` holding [`ROWS`].
    fn rerun() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("metrics.csv"), format!("{HEADER}\n{ROWS}")).unwrap();
        dir
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

    fn verify(recorded_rows: &str) -> Result<String, String> {
        recorded(recorded_rows, config(Some(1), "aa"))
            .check(rerun().path(), &config(Some(1), "aa"))
            .map_err(|e| e.to_string())
    }

    fn lines(edit: impl FnOnce(&mut Vec<&str>)) -> String {
        let mut lines: Vec<&str> = ROWS.lines().collect();
        edit(&mut lines);
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn identical_rows_are_reproduced() {
        let summary = verify(ROWS).unwrap();
        assert!(
            summary.contains("4 steps and 4 epoch values, bit-identical"),
            "{summary}"
        );
    }

    #[test]
    fn every_edit_of_the_record_is_found_and_named() {
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "two rows swapped",
                lines(|l| l.swap(0, 1)),
                "line 3: train.loss at step 1 (epoch 1) is out of order: the rerun writes it before line 2's row",
            ),
            (
                "a step renumbered",
                ROWS.replace("4,2,train", "3,2,train"),
                "line 7: train.loss at step 3 (epoch 2) appears again (first at line 6)",
            ),
            (
                "the last step row deleted",
                lines(|l| {
                    l.remove(5);
                }),
                "after line 6: train.loss at step 4 (epoch 2) is missing from the record (the rerun has 0.30000001192092896)",
            ),
            (
                "an epoch row deleted",
                lines(|l| {
                    l.remove(3);
                }),
                "after line 4: valid.accuracy at the end of epoch 1 is missing from the record",
            ),
            (
                "the file cut to half its lines",
                lines(|l| l.truncate(4)),
                "after line 5: train.loss at step 3 (epoch 2) is missing from the record",
            ),
            (
                "a row cut in the middle",
                ROWS.replace(",2,valid,accuracy,62.5", ",2,valid,accur"),
                "line 9 is not a row: `,2,valid,accur`",
            ),
            (
                "one digit changed",
                ROWS.replace("0.5\n", "0.6\n"),
                "line 3: train.loss at step 2 (epoch 1): recorded 0.6 (f64 bits 0x3fe3333333333333), rerun 0.5 (f64 bits 0x3fe0000000000000, f32 bits 0x3f000000)",
            ),
            (
                "a row added",
                format!("{ROWS}5,2,train,loss,0.25\n"),
                "line 10: train.loss at step 5 (epoch 2) is recorded, but the rerun has no such row",
            ),
            (
                "a step moved to another epoch",
                ROWS.replace("3,2,train", "3,1,train"),
                "line 6: train.loss at step 3 (epoch 1) is recorded, but the rerun has no such row",
            ),
        ];
        for (edit, rows, expected) in cases {
            let err = verify(&rows).expect_err(edit);
            assert!(err.contains(expected), "{edit}: {err}");
        }
        let mut header = recorded(ROWS, config(Some(1), "aa"));
        header.csv = header.csv.replacen("step,", "stp,", 1);
        let err = header
            .check(rerun().path(), &config(Some(1), "aa"))
            .unwrap_err();
        assert!(
            err.to_string().contains("line 1 is not the header"),
            "{err}"
        );
    }

    #[test]
    fn the_changed_data_and_a_missing_seed_are_named_as_causes() {
        let run = recorded(&ROWS.replace("0.5\n", "0.6\n"), config(None, "aa"));
        let err = run
            .check(rerun().path(), &config(None, "bb"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("data `train`: 4 items, hash aa → 4 items, hash bb"),
            "{err}"
        );
        assert!(err.contains("has no `seed`"), "{err}");
    }

    #[test]
    fn a_run_on_burns_engine_cannot_be_verified() {
        let err = recorded(ROWS, config(Some(1), "aa"))
            .check(Path::new("."), &serde_json::Value::Null)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Burn's engine"), "{err}");
    }
}
