//! One trial as its own process trains it (`--trial K`, `--promote K`): its values drawn or
//! read back, its run resumed, its objective reported at each epoch's end and the pruner asked.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::report;
use super::study::{self, State, Study, TrialRecord};
use crate::config::options::{EpochWatch, Watch};
use crate::error::CliError;

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
    /// Train with these values, in the trial's run when it has one.
    Train {
        /// The trial, shared with the run's callback.
        trial: Arc<Mutex<TrialRun>>,
        /// Its values.
        params: Vec<(String, Value)>,
        /// Its run (`run-3`), when an earlier process started it.
        run: Option<String>,
        /// Whether that run is resumed from its checkpoint (else it starts again).
        resume: bool,
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
            None => study
                .draw(trial, &seen)
                .map_err(|e| CliError::new(e.to_string()))?,
        };
        // Resumed from the trial's last checkpoint, if it wrote one; else trained anew in the
        // same run folder, so that no folder is left that no record names.
        let (run, resume) = match &record.run {
            Some(run) => crate::app::sweep::go_on_in(run, &study.dir, trial)?
                .map_or((None, false), |(name, resume)| (Some(name), resume)),
            None => (None, false),
        };
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
            run,
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
        let Some(curve) = study::curve(history, objective, epoch) else {
            return Some(format!(
                "the study's objective `{}` is not recorded by this run",
                objective.metric
            ));
        };
        self.record.curve = curve;
        self.pruned(epoch)
            .or_else(|| rewritten_at(epoch).then(|| self.write()).flatten())
    }
}

/// Whether the record is rewritten at the end of `epoch` (it is also at a pruning decision and
/// at the trial's end): every epoch up to 64, then 64 times per doubling of the epoch. The
/// record holds the whole curve, so rewriting it every epoch would write O(E²) bytes over E
/// epochs (about 240 MB for 3000 of the example's); this writes O(E). What a kill leaves may
/// lag by up to 1/64 of the epochs trained; the resumed run's history fills the curve back in
/// ([`study::curve`]).
fn rewritten_at(epoch: usize) -> bool {
    let stride = 1 << (epoch / 64).max(1).ilog2();
    epoch.is_multiple_of(stride)
}

/// Whether `run` holds a checkpoint to resume from.
pub(crate) fn has_checkpoint(run: &Path) -> bool {
    std::fs::read_dir(run.join("checkpoint")).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("model-") && name.ends_with(".bpk")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::search::study::tests::definition;
    use crate::history::{History, Split};

    #[test]
    fn the_record_is_rewritten_every_epoch_at_first_then_in_linear_bytes() {
        assert!((1..=64).all(rewritten_at));
        assert!(!rewritten_at(129) && rewritten_at(130) && !rewritten_at(258));
        // A record's size grows with its epochs: epoch e's rewrite costs about e.
        for epochs in [1_000, 10_000, 100_000] {
            let cost: usize = (1..=epochs).filter(|&e| rewritten_at(e)).sum();
            assert!(cost <= 130 * epochs, "{epochs} epochs: {cost}");
        }
    }

    /// Killed at epoch 129 (its record last rewritten at 128), resumed from that epoch's
    /// checkpoint: the curve the resumed trial records holds epoch 129 again, from the run's
    /// restored history.
    #[test]
    fn a_record_left_behind_by_a_kill_is_filled_in_from_the_resumed_history() {
        let tmp = tempfile::tempdir().unwrap();
        let study = Study::new(tmp.path(), "exp", definition(1));
        let mut history = History::default();
        let loss = history.declare(Split::Valid, "loss", false);
        let trial = |study: &Study| match TrialRun::prepare(study.clone(), 0).unwrap() {
            Prepared::Train { trial, .. } => trial,
            Prepared::Ended(state) => panic!("trial 0 {state:?}"),
        };
        let first = trial(&study);
        let mut first = first.lock().unwrap();
        assert_eq!(first.run_start(tmp.path(), 1, 1000), None);
        for epoch in 1..=129 {
            history.record_epoch(loss, epoch, 1.0 / epoch as f64);
            assert_eq!(first.epoch_end(epoch, &history), None);
        }
        let left = study.read(0).unwrap().unwrap();
        assert_eq!(left.curve.len(), 128);
        let resumed = trial(&study);
        let mut resumed = resumed.lock().unwrap();
        assert_eq!(resumed.run_start(tmp.path(), 130, 1000), None);
        history.record_epoch(loss, 130, 1.0 / 130.0);
        assert_eq!(resumed.epoch_end(130, &history), None);
        let record = study.read(0).unwrap().unwrap();
        let epochs: Vec<usize> = record.curve.iter().map(|&(e, _)| e).collect();
        assert_eq!(epochs, (1..=130).collect::<Vec<_>>());
        assert_eq!(record.curve[128], (129, Some(1.0 / 129.0)));
    }

    /// A trial killed before its first checkpoint starts again in the run its record names,
    /// emptied, rather than in a new run that leaves the old one named by no record; with a
    /// checkpoint, that run is resumed.
    #[test]
    fn a_trial_keeps_its_run_whether_it_resumes_or_starts_again() {
        let tmp = tempfile::tempdir().unwrap();
        let study = Study::new(tmp.path(), "exp", definition(1));
        study.create().unwrap();
        let run = study.dir.parent().unwrap().join("run-4");
        std::fs::create_dir_all(run.join("checkpoint")).unwrap();
        std::fs::write(run.join("metrics.csv"), "step,epoch,split,metric,value\n").unwrap();
        let mut record = study.draw(0, &[]).unwrap();
        record.run = Some(run.clone());
        study.write(&record).unwrap();
        let prepared = |study: &Study| match TrialRun::prepare(study.clone(), 0).unwrap() {
            Prepared::Train { run, resume, .. } => (run, resume),
            Prepared::Ended(state) => panic!("trial 0 {state:?}"),
        };
        assert_eq!(prepared(&study), (Some("run-4".to_owned()), false));
        assert!(
            !run.exists(),
            "the run without a checkpoint is emptied to start again"
        );
        std::fs::create_dir_all(run.join("checkpoint")).unwrap();
        std::fs::write(run.join("checkpoint/model-3.bpk"), b"").unwrap();
        assert_eq!(prepared(&study), (Some("run-4".to_owned()), true));
        assert!(run.join("checkpoint/model-3.bpk").exists());
    }
}
