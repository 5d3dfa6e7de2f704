//! A study on disk: `<artifacts>/<name>/study-<hash>/`, named by what decides its trials (the
//! space, objective, sampler, pruner, seed and jobs; not the budget, so `--trials` can extend
//! it), with `study.json` (that definition) and one `trial-<K>.json` per trial: its values,
//! state, objective per epoch and run directory. Every file is replaced atomically, and each
//! trial's record is written by one process at a time: the study process before a trial starts
//! and after it ends, the trial's process while it trains.
//!
//! Trial K is drawn from, and pruned against, trials `0..=K-jobs` alone, which are finished by
//! the time K starts: with one job every earlier trial, with N jobs not the N-1 trials training
//! beside it. So the trials and every pruning decision depend on the seed and on results, never
//! on timing, whatever `--jobs` is (the price: with N jobs, trial K knows N-1 fewer results).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::prune::Pruner;
use super::sampler::Sampler;
use super::space::Param;
use crate::history::{History, Split};
use crate::output::atomic::replace_file;

/// The metric a study optimizes and its direction: `min(valid.loss)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// `split.metric`.
    pub metric: String,
    /// Whether larger values are better.
    pub maximize: bool,
}

impl Objective {
    /// `min(valid.loss)` or `max(valid.accuracy)`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let form = || {
            format!(
                "--objective `{text}`: write `min(split.metric)` or `max(split.metric)`, e.g. `min(valid.loss)`"
            )
        };
        let (direction, rest) = text.trim().split_once('(').ok_or_else(form)?;
        let metric = rest.strip_suffix(')').ok_or_else(form)?.trim();
        let maximize = match direction.trim() {
            "min" => false,
            "max" => true,
            _ => return Err(form()),
        };
        if Split::epoch_metric(metric).is_none() {
            return Err(form());
        }
        Ok(Objective {
            metric: metric.to_owned(),
            maximize,
        })
    }

    /// The split and key of the metric (`parse` made sure it has both).
    pub fn split_key(&self) -> (Split, &str) {
        Split::epoch_metric(&self.metric).unwrap_or((Split::Valid, &self.metric))
    }

    /// `value` as a loss: lower is better, NaN the worst.
    pub fn loss(&self, value: f64) -> f64 {
        match (value.is_nan(), self.maximize) {
            (true, _) => f64::INFINITY,
            (false, true) => -value,
            (false, false) => value,
        }
    }

    /// `min(valid.loss)`.
    pub fn describe(&self) -> String {
        let direction = if self.maximize { "max" } else { "min" };
        format!("{direction}({})", self.metric)
    }
}

/// What decides a study's trials: the folder is named by it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// The keys and their distributions.
    pub space: Vec<Param>,
    /// What is optimized.
    pub objective: Objective,
    /// How trials are drawn.
    pub sampler: Sampler,
    /// How bad trials stop.
    pub pruner: Pruner,
    /// The seed of every draw.
    pub seed: u64,
    /// Trials trained at once: trial K sees trials `0..=K-jobs`.
    pub jobs: usize,
}

/// Where a trial stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Drawn, training or to resume (its process was killed with the study's).
    Running,
    /// Trained to its last epoch.
    Complete,
    /// Stopped by the pruner at an epoch's end, with that epoch's checkpoint.
    Pruned,
    /// Its process failed; its log says why.
    Failed,
}

impl State {
    /// `complete`, `pruned`, ..
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Complete => "complete",
            State::Pruned => "pruned",
            State::Failed => "failed",
        }
    }
}

/// `trial-<K>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Its number, from 0.
    pub trial: usize,
    /// Where it stands.
    pub state: State,
    /// The searched keys with this trial's values.
    pub params: Vec<(String, Value)>,
    /// The objective per epoch as recorded (`null` for a non-finite value).
    pub curve: Vec<(usize, Option<f64>)>,
    /// The last epoch the trial would train.
    #[serde(default)]
    pub last_epoch: Option<usize>,
    /// The trial's run directory, once its first epoch started.
    pub run: Option<PathBuf>,
    /// Why the pruner stopped it.
    pub pruned: Option<String>,
    /// Why its process failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl TrialRecord {
    /// Whether the trial ended (complete, pruned or failed).
    pub fn finished(&self) -> bool {
        self.state != State::Running
    }

    /// Its curve as losses (lower better), for the sampler and pruner.
    pub fn losses(&self, objective: &Objective) -> Vec<(usize, f64)> {
        self.curve
            .iter()
            .map(|&(e, v)| (e, v.map_or(f64::INFINITY, |v| objective.loss(v))))
            .collect()
    }

    /// Its best value as recorded, and the epoch; `None` without a finite value.
    pub fn best(&self, objective: &Objective) -> Option<(usize, f64)> {
        crate::history::best_of(
            self.curve.iter().filter_map(|&(e, v)| Some((e, v?))),
            objective.maximize,
        )
    }

    /// What the sampler is told: its best value as a loss, `+inf` without one.
    fn told(&self, objective: &Objective) -> f64 {
        self.best(objective)
            .map_or(f64::INFINITY, |(_, v)| objective.loss(v))
    }
}

/// A study folder and its definition.
#[derive(Clone, Debug)]
pub struct Study {
    /// `<artifacts>/<name>/study-<hash>`.
    pub dir: PathBuf,
    /// What decides its trials.
    pub definition: Definition,
}

impl Study {
    /// The study of experiment `name` under `artifacts` with `definition`.
    pub fn new(artifacts: &Path, name: &str, definition: Definition) -> Self {
        let bytes = serde_json::to_vec(&definition).unwrap_or_default();
        let dir = artifacts
            .join(name)
            .join(format!("study-{:08x}", crc32c::crc32c(&bytes)));
        Self { dir, definition }
    }

    fn io(&self, source: std::io::Error) -> crate::error::CliError {
        crate::error::CliError::new(format!("study {}: {source}", self.dir.display()))
    }

    /// Creates the folder and writes `study.json`.
    pub fn create(&self) -> Result<(), crate::error::CliError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| self.io(e))?;
        let json = serde_json::to_vec_pretty(&self.definition).map_err(std::io::Error::other);
        json.and_then(|json| replace_file(&self.dir.join("study.json"), &json))
            .map_err(|e| self.io(e))
    }

    /// `trial-<K>.json`, if written: a record that cannot be read is an error, not a trial to
    /// run again.
    pub fn read(&self, trial: usize) -> Result<Option<TrialRecord>, crate::error::CliError> {
        let path = self.dir.join(format!("trial-{trial}.json"));
        match crate::read::bytes(&path, crate::read::SMALL) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                crate::error::CliError::new(format!(
                    "{} is not a trial record ({e}): move it away to run the trial again",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(e)),
        }
    }

    /// Replaces `trial-<K>.json`.
    pub fn write(&self, record: &TrialRecord) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        replace_file(
            &self.dir.join(format!("trial-{}.json", record.trial)),
            &json,
        )
    }

    /// Every record in the folder, by trial.
    pub fn records(&self) -> Vec<TrialRecord> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut records: Vec<TrialRecord> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let k: usize = name
                    .strip_prefix("trial-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()?;
                self.read(k).ok().flatten()
            })
            .collect();
        records.sort_by_key(|r| r.trial);
        records
    }

    /// The trials trial `trial` is drawn from and pruned against: `0..=trial-jobs`.
    pub fn seen_by(&self, trial: usize) -> std::ops::Range<usize> {
        0..(trial + 1).saturating_sub(self.definition.jobs)
    }

    /// The records of [`Study::seen_by`], once every one of them has ended (`None` before).
    pub fn visible(
        &self,
        trial: usize,
    ) -> Result<Option<Vec<TrialRecord>>, crate::error::CliError> {
        let mut seen = Vec::new();
        for k in self.seen_by(trial) {
            match self.read(k)? {
                Some(record) if record.finished() => seen.push(record),
                _ => return Ok(None),
            }
        }
        Ok(Some(seen))
    }

    /// Trial `trial`'s values, drawn from the finished trials it sees. A failed trial counts
    /// as the worst: most often its values made training diverge (a non-finite loss ends a
    /// run), and a sampler not told so would draw there again.
    pub fn suggest(&self, trial: usize, seen: &[TrialRecord]) -> Vec<(String, Value)> {
        let objective = &self.definition.objective;
        let told: Vec<(Vec<(String, Value)>, f64)> = seen
            .iter()
            .map(|r| match r.state {
                State::Failed => (r.params.clone(), f64::INFINITY),
                _ => (r.params.clone(), r.told(objective)),
            })
            .collect();
        self.definition
            .sampler
            .suggest(&self.definition.space, self.definition.seed, trial, &told)
    }

    /// Draws trial `trial`'s values from the trials it sees and records it as running.
    pub fn draw(&self, trial: usize, seen: &[TrialRecord]) -> std::io::Result<TrialRecord> {
        let record = TrialRecord {
            trial,
            state: State::Running,
            params: self.suggest(trial, seen),
            curve: Vec::new(),
            last_epoch: None,
            run: None,
            pruned: None,
            failed: None,
        };
        self.write(&record)?;
        Ok(record)
    }

    /// Why trial `record` stops after `epoch`, against the trials it sees.
    pub fn prune(
        &self,
        record: &TrialRecord,
        epoch: usize,
        seen: &[TrialRecord],
    ) -> Option<String> {
        let objective = &self.definition.objective;
        let own = record.losses(objective);
        // A failed trial's values up to its failure count as any other's.
        let others: Vec<Vec<(usize, f64)>> = seen.iter().map(|r| r.losses(objective)).collect();
        let others: Vec<&[(usize, f64)]> = others.iter().map(Vec::as_slice).collect();
        let last = record.last_epoch.unwrap_or(usize::MAX);
        self.definition.pruner.decide(epoch, last, &own, &others)
    }
}

/// The trial's objective at the end of each epoch up to `epoch` (a non-finite value as `None`),
/// from the run's `history`: `None` when the run does not record it. A resumed run's history
/// holds the epochs before its checkpoint too, so the curve is whole even where the record a
/// kill left behind lags (see `trial::rewritten_at`).
pub fn curve(
    history: &History,
    objective: &Objective,
    epoch: usize,
) -> Option<Vec<(usize, Option<f64>)>> {
    let (split, key) = objective.split_key();
    let series = history.get(split, key)?;
    Some(
        series
            .epochs
            .iter()
            .filter(|&&(e, _)| e <= epoch)
            .map(|&(e, v)| (e, v.is_finite().then_some(v)))
            .collect(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::app::search::space::Dist;

    pub(crate) fn definition(jobs: usize) -> Definition {
        Definition {
            space: vec![Param {
                key: "lr".into(),
                dist: Dist::LogUniform {
                    low: 1e-3,
                    high: 1.0,
                },
            }],
            objective: Objective::parse("min(valid.loss)").unwrap(),
            sampler: Sampler::Tpe,
            pruner: Pruner::Median,
            seed: 1,
            jobs,
        }
    }

    #[test]
    fn objectives_parse_with_their_direction() {
        let max = Objective::parse("max(valid.accuracy)").unwrap();
        assert!(max.maximize && max.metric == "valid.accuracy");
        assert_eq!(max.loss(0.9), -0.9);
        assert_eq!(max.loss(f64::NAN), f64::INFINITY);
        for bad in [
            "valid.loss",
            "least(valid.loss)",
            "min(loss)",
            "min(valid.loss",
        ] {
            assert!(Objective::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_folder_is_named_by_what_decides_the_trials() {
        let a = Study::new(Path::new("x"), "exp", definition(1));
        assert_eq!(a.dir, Study::new(Path::new("x"), "exp", definition(1)).dir);
        assert_ne!(a.dir, Study::new(Path::new("x"), "exp", definition(2)).dir);
        let mut seeded = definition(1);
        seeded.seed = 2;
        assert_ne!(a.dir, Study::new(Path::new("x"), "exp", seeded).dir);
    }

    #[test]
    fn a_trial_sees_the_trials_started_jobs_before_it_once_they_ended() {
        let tmp = tempfile::tempdir().unwrap();
        let study = Study::new(tmp.path(), "exp", definition(2));
        study.create().unwrap();
        assert_eq!(study.seen_by(0), 0..0);
        assert_eq!(study.seen_by(3), 0..2);
        let record = |trial, state| TrialRecord {
            trial,
            state,
            params: vec![("lr".into(), Value::from(0.1))],
            curve: vec![(1, Some(0.5))],
            last_epoch: Some(3),
            run: None,
            pruned: None,
            failed: None,
        };
        study.write(&record(0, State::Complete)).unwrap();
        study.write(&record(1, State::Running)).unwrap();
        assert_eq!(study.visible(2).unwrap().unwrap().len(), 1);
        assert!(study.visible(3).unwrap().is_none(), "trial 1 still trains");
        study.write(&record(1, State::Pruned)).unwrap();
        assert_eq!(study.visible(3).unwrap().unwrap().len(), 2);
        assert_eq!(study.records().len(), 2);
        std::fs::write(study.dir.join("trial-5.json"), b"{").unwrap();
        assert!(
            study
                .read(5)
                .unwrap_err()
                .to_string()
                .contains("is not a trial record")
        );
    }
}
