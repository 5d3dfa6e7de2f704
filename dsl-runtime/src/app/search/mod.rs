//! Searches: `search: { space: { lr: log_uniform(1e-4, 1e-1) }, trials: 30, objective:
//! min(valid.loss), sampler: tpe, prune: median }` in `training!`, or `--search lr=..` on the
//! command line. The study process draws each trial's values ([`sampler`]), records them in
//! the study folder ([`study`]) and trains the trial as a child process of the experiment's own
//! binary with `--trial K`, at most `--jobs N` at once; the child reports its objective at
//! each epoch's end and stops when the pruner ([`prune`]) says so. A study killed with -9 is
//! resumed by the same command: ended trials stay as they are, a trial that was training goes
//! on from its last checkpoint, with the values it was drawn with.

use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::Value;

pub mod prune;
pub mod report;
pub mod sampler;
pub mod space;
pub mod study;

use crate::config::options::{EpochWatch, Watch};
use crate::error::CliError;
use prune::Pruner;
use sampler::Sampler;
use space::{Dist, Param};
use study::{Definition, Objective, State, Study, TrialRecord};

/// The search `training!` declares: what `cli()` searches, with the flags applied.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    space: Vec<Param>,
    trials: Option<usize>,
    objective: Option<Objective>,
    sampler: Sampler,
    pruner: Pruner,
    seed: u64,
}

impl Declared {
    /// A search of nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Draws `key` from `dist`.
    pub fn param(mut self, key: &str, dist: Dist) -> Self {
        self.space.push(Param {
            key: key.to_owned(),
            dist,
        });
        self
    }

    /// The budget of trials.
    pub fn trials(mut self, trials: usize) -> Self {
        self.trials = Some(trials);
        self
    }

    /// The metric to optimize, `split.metric`, and its direction.
    pub fn objective(mut self, metric: &str, maximize: bool) -> Self {
        self.objective = Some(Objective {
            metric: metric.to_owned(),
            maximize,
        });
        self
    }

    /// How trials are drawn.
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.sampler = sampler;
        self
    }

    /// How bad trials stop early.
    pub fn prune(mut self, pruner: Pruner) -> Self {
        self.pruner = pruner;
        self
    }

    /// The seed trials are drawn with.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// The search flags of the command line.
#[derive(Debug, Default)]
pub struct Flags<'a> {
    /// `--search KEY=DIST`, each.
    pub search: &'a [String],
    /// `--trials`.
    pub trials: Option<usize>,
    /// `--objective`.
    pub objective: Option<&'a str>,
    /// `--sampler`.
    pub sampler: Option<&'a str>,
    /// `--prune`.
    pub prune: Option<&'a str>,
    /// `--search-seed`.
    pub seed: Option<u64>,
    /// `--jobs`, 1 without it.
    pub jobs: usize,
}

impl Flags<'_> {
    /// Whether a flag that only a search reads is given.
    fn any(&self) -> bool {
        self.trials.is_some()
            || self.objective.is_some()
            || self.sampler.is_some()
            || self.prune.is_some()
            || self.seed.is_some()
    }
}

/// The study's definition and budget from `declared` and `flags`; `None` without a search.
/// `config` is the experiment's config as JSON (what each key holds) and `recorded` its
/// metrics (`split.metric`; empty when not known).
pub fn definition(
    declared: Option<&Declared>,
    flags: &Flags<'_>,
    config: &Value,
    recorded: &[String],
) -> Result<Option<(Definition, usize)>, CliError> {
    if declared.is_none() && flags.search.is_empty() {
        if flags.any() {
            return Err(CliError::new(
                "--trials, --objective, --sampler, --prune and --search-seed need a search: add `search: { space: { .. } }` to `training!`, or `--search KEY=DIST`",
            ));
        }
        return Ok(None);
    }
    let mut declared = declared.cloned().unwrap_or_default();
    for flag in flags.search {
        let Some((key, text)) = flag.split_once('=') else {
            return Err(CliError::new(format!(
                "--search expects KEY=DISTRIBUTION, got `{}`; e.g. `--search lr=log_uniform(1e-4,1e-1)`",
                crate::read::shorten(flag)
            )));
        };
        let key = key.trim();
        let current = key.split('.').try_fold(config, |node, part| node.get(part));
        if current.is_none() {
            let keys: Vec<&str> = config
                .as_object()
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let fix = match dsl_vocabulary::closest(key, &keys) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("the keys are: {}", keys.join(", ")),
            };
            return Err(CliError::new(format!(
                "--search: unknown config key `{key}`; {fix}"
            )));
        }
        let dist = Dist::parse(key, text, current).map_err(CliError::new)?;
        match declared.space.iter_mut().find(|p| p.key == key) {
            Some(param) => param.dist = dist,
            None => declared.space.push(Param {
                key: key.to_owned(),
                dist,
            }),
        }
    }
    let objective = match (flags.objective, declared.objective) {
        (Some(text), _) => Objective::parse(text).map_err(CliError::new)?,
        (None, Some(objective)) => objective,
        (None, None) if recorded.is_empty() || recorded.iter().any(|m| m == "valid.loss") => {
            Objective::parse("min(valid.loss)").map_err(CliError::new)?
        }
        (None, None) => {
            return Err(CliError::new(format!(
                "a search needs an objective and this experiment records no `valid.loss`: name one, e.g. `--objective min({})` (recorded: {})",
                recorded[0],
                recorded.join(", ")
            )));
        }
    };
    if !recorded.is_empty() && !recorded.contains(&objective.metric) {
        let known: Vec<&str> = recorded.iter().map(String::as_str).collect();
        let close = dsl_vocabulary::closest(&objective.metric, &known)
            .map_or_else(String::new, |c| format!("did you mean `{c}`? "));
        return Err(CliError::new(format!(
            "the objective `{}` is not recorded: {close}this experiment records {}",
            objective.metric,
            recorded.join(", ")
        )));
    }
    let sampler = match flags.sampler {
        Some(text) => Sampler::parse(text).map_err(CliError::new)?,
        None => declared.sampler,
    };
    let pruner = match flags.prune {
        Some(text) => Pruner::parse(text).map_err(CliError::new)?,
        None => declared.pruner,
    };
    let trials = flags
        .trials
        .or(declared.trials)
        .unwrap_or(dsl_vocabulary::search::TRIALS);
    if trials == 0 {
        return Err(CliError::new("--trials 0: a study runs at least one trial"));
    }
    Ok(Some((
        Definition {
            space: declared.space,
            objective,
            sampler,
            pruner,
            seed: flags.seed.unwrap_or(declared.seed),
            jobs: flags.jobs.max(1),
        },
        trials,
    )))
}

/// How the study process ended.
#[derive(Debug, Default)]
pub struct Ended {
    /// Trials whose process failed.
    pub failed: Vec<usize>,
    /// Ctrl-C or SIGTERM: the trials still training were stopped, to resume.
    pub interrupted: bool,
}

/// Trains trials `0..trials` of `study` as children of this binary (`args` are the process's
/// own; `env` is added), `jobs` at once, each started once the trials it sees have ended. A
/// trial that ended is not trained again; one left running by a killed study is resumed.
pub(crate) fn run(
    study: &Study,
    trials: usize,
    args: &[String],
    env: &[(&str, String)],
    parent: Option<&crate::output::mlflow::SweepParent>,
) -> Result<Ended, CliError> {
    study.create()?;
    let exe = crate::app::sweep::this_program()?;
    let jobs = study.definition.jobs;
    // Ctrl-C reaches the children too; this process waits for them to save and stop.
    let _signals = crate::interrupt::Interrupt::install().ok();
    let mut running: Vec<(usize, Child, Vec<JoinHandle<()>>)> = Vec::new();
    let mut ended = Ended::default();
    let mut next = 0;
    let mut raised_at: Option<std::time::Instant> = None;
    let mut forwarded = false;
    loop {
        // Ctrl-C or a SIGTERM sent to this process alone reaches the trials too, each then
        // saving and stopping, after a grace period: a signal sent to every process (Slurm's
        // `scancel`) reaches them itself, and a second one would end a trial before it saves.
        if crate::interrupt::raised() {
            ended.interrupted = true;
            let since = *raised_at.get_or_insert_with(std::time::Instant::now);
            if !forwarded && since.elapsed() >= std::time::Duration::from_secs(2) {
                forwarded = true;
                for (_, child, _) in &running {
                    // SAFETY: `kill` on a child this process started and has not reaped.
                    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                }
            }
        }
        let stopping = ended.interrupted;
        while !stopping
            && next < trials
            && running.len() < jobs
            && running.iter().all(|(k, ..)| k + jobs > next)
        {
            let record = study.read(next)?;
            if record.as_ref().is_some_and(TrialRecord::finished) {
                next += 1;
                continue;
            }
            let record = match record {
                Some(record) => record,
                None => {
                    let seen = study.visible(next)?.ok_or_else(|| {
                        CliError::new(format!(
                            "trial {next}: an earlier trial it is drawn from has not ended (is another process running this study?)"
                        ))
                    })?;
                    let record = TrialRecord {
                        trial: next,
                        state: State::Running,
                        params: study.suggest(next, &seen),
                        curve: Vec::new(),
                        last_epoch: None,
                        run: None,
                        pruned: None,
                    };
                    study
                        .write(&record)
                        .map_err(|e| CliError::new(e.to_string()))?;
                    record
                }
            };
            let resumed = if record.curve.is_empty() {
                ""
            } else {
                ", resumed"
            };
            say!(
                "study: trial {next} of {trials} started ({}{resumed})",
                report::settings(&record.params)
            );
            let (child, copies) =
                crate::app::sweep::spawn_trial(&exe, &study.dir, args, env, next, jobs <= 1, true)?;
            running.push((next, child, copies));
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        let Some(index) = running
            .iter_mut()
            .position(|(_, child, _)| child.try_wait().ok().flatten().is_some())
        else {
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        };
        let (trial, mut child, copies) = running.swap_remove(index);
        let status = child.wait().ok();
        for copy in copies {
            let _ = copy.join();
        }
        let Some(mut record) = study.read(trial)? else {
            continue;
        };
        match status.and_then(|s| s.code()) {
            Some(0) if record.finished() => {}
            // Stopped by Ctrl-C or SIGTERM: left running, to resume.
            Some(130) => {
                ended.interrupted = true;
                continue;
            }
            _ => {
                record.state = State::Failed;
                study
                    .write(&record)
                    .map_err(|e| CliError::new(e.to_string()))?;
                ended.failed.push(trial);
            }
        }
        let objective = &study.definition.objective;
        let value = record.best(objective).map_or_else(
            || "no value".to_owned(),
            |(e, v)| format!("{} {v} at epoch {e}", objective.metric),
        );
        say!(
            "study: trial {trial} {} after {} epochs ({value})",
            record.state.as_str(),
            record.curve.len()
        );
        if let (Some(parent), Some(run)) = (parent, &record.run) {
            parent.tag_trial(run, record.state.as_str());
        }
        if let Err(e) = report::write(study) {
            say!("warning: cannot write the study's report: {e}");
        }
    }
    ended.failed.sort_unstable();
    Ok(ended)
}

/// Trial K as its own process trains it (`--trial K`): its values, the trials it sees, and the
/// record it keeps while training.
#[derive(Debug)]
pub struct TrialRun {
    study: Study,
    record: TrialRecord,
    seen: Vec<study::TrialRecord>,
    /// A pruned trial trained on to its last epoch (`--promote K`): not pruned again.
    promoted: bool,
}

/// What `--trial K` of a search does.
pub enum Prepared {
    /// Train with these values; resume the trial's run when `resume` names it.
    Train {
        /// The trial, shared with the run's callback.
        trial: Arc<Mutex<TrialRun>>,
        /// Its values.
        params: Vec<(String, Value)>,
        /// Its run, to resume.
        resume: Option<String>,
    },
    /// The trial already ended: nothing to train.
    Ended(State),
}

impl TrialRun {
    /// Trial `trial` of `study`: its record, or (run alone, as a job array's task) its values
    /// drawn once the trials it sees have ended, waited for.
    pub fn prepare(study: Study, trial: usize) -> Result<Prepared, CliError> {
        Self::prepare_as(study, trial, false)
    }

    /// Pruned trial `trial` of `study`, to train on from its checkpoint to its last epoch.
    pub fn promote(study: Study, trial: usize) -> Result<Prepared, CliError> {
        let mut record = study.read(trial)?.filter(|r| r.state == State::Pruned).ok_or_else(|| {
            CliError::new(format!(
                "--promote {trial}: trial {trial} of {} was not pruned; `study.md` lists the pruned ones",
                study.dir.display()
            ))
        })?;
        record.state = State::Running;
        study
            .write(&record)
            .map_err(|e| CliError::new(e.to_string()))?;
        Self::prepare_as(study, trial, true)
    }

    fn prepare_as(study: Study, trial: usize, promoted: bool) -> Result<Prepared, CliError> {
        study.create()?;
        let mut said = false;
        let seen = loop {
            if let Some(seen) = study.visible(trial)? {
                break seen;
            }
            if !said {
                say!(
                    "study: trial {trial} waits for trials {:?} to end (it is drawn from them)",
                    study.seen_by(trial)
                );
                said = true;
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        };
        let record = match study.read(trial)? {
            Some(record) if record.finished() => return Ok(Prepared::Ended(record.state)),
            Some(record) => record,
            None => {
                let record = TrialRecord {
                    trial,
                    state: State::Running,
                    params: study.suggest(trial, &seen),
                    curve: Vec::new(),
                    last_epoch: None,
                    run: None,
                    pruned: None,
                };
                study
                    .write(&record)
                    .map_err(|e| CliError::new(e.to_string()))?;
                record
            }
        };
        // Resumed from the trial's last checkpoint, if it wrote one.
        let resume = record
            .run
            .as_ref()
            .filter(|run| has_checkpoint(run))
            .and_then(|run| run.file_name())
            .map(|name| name.to_string_lossy().into_owned());
        let params = record.params.clone();
        let trial = Arc::new(Mutex::new(TrialRun {
            study,
            record,
            seen,
            promoted,
        }));
        Ok(Prepared::Train {
            trial,
            params,
            resume,
        })
    }

    /// The callback the run reports to.
    pub fn watch(trial: &Arc<Mutex<TrialRun>>) -> Watch {
        Watch(trial.clone())
    }

    /// Records how the trial's process ended: complete or pruned when `trained`, failed
    /// otherwise (left running when interrupted, to resume).
    pub fn finish(&mut self, trained: bool, interrupted: bool) -> std::io::Result<()> {
        self.record.state = match (trained, interrupted) {
            (true, _) if self.record.pruned.is_some() => State::Pruned,
            (true, _) => State::Complete,
            (false, true) => State::Running,
            (false, false) => State::Failed,
        };
        self.study.write(&self.record)?;
        report::write(&self.study).map(drop)
    }

    /// Writes the record; `Some` (the run stops) when it cannot be written.
    fn write(&self) -> Option<String> {
        self.study.write(&self.record).err().map(|e| {
            format!(
                "the study's record of trial {} cannot be written: {e}",
                self.record.trial
            )
        })
    }

    /// Why the trial stops after `epoch`, if the pruner says it does (then recorded).
    fn pruned(&mut self, epoch: usize) -> Option<String> {
        if self.promoted {
            return None;
        }
        let why = self.study.prune(&self.record, epoch, &self.seen)?;
        self.record.pruned = Some(why.clone());
        Some(self.write().unwrap_or(format!("pruned: {why}")))
    }
}

impl EpochWatch for TrialRun {
    fn run_start(
        &mut self,
        run_dir: &Path,
        first_epoch: usize,
        last_epoch: usize,
    ) -> Option<String> {
        self.record.run = Some(run_dir.to_owned());
        self.record.last_epoch = Some(last_epoch);
        // Values past the checkpoint resumed from are trained again.
        self.record.curve.retain(|&(e, _)| e < first_epoch);
        self.record.pruned = None;
        // Killed after the pruner's decision, before the trial's end was recorded.
        if let Some(&(last, _)) = self.record.curve.last()
            && let Some(stop) = self.pruned(last)
        {
            return Some(stop);
        }
        self.write()
    }

    fn epoch_end(&mut self, epoch: usize, history: &crate::history::History) -> Option<String> {
        let objective = &self.study.definition.objective;
        let Some(value) = study::value_at(history, objective, epoch) else {
            return Some(format!(
                "the study's objective `{}` is not recorded by this run",
                objective.metric
            ));
        };
        self.record.curve.retain(|&(e, _)| e < epoch);
        self.record.curve.push((epoch, value));
        self.pruned(epoch).or_else(|| self.write())
    }
}

/// Whether `run` holds a checkpoint to resume from.
fn has_checkpoint(run: &Path) -> bool {
    std::fs::read_dir(run.join("checkpoint")).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("model-") && name.ends_with(".bpk")
        })
    })
}
