//! Finding the checkpoint a run continues from.

use crate::checkpoint::{CheckpointDir, CheckpointError, EpochState, Loaded, Resume};
use crate::history::History;

use super::FitError;

/// The checkpoint to resume from: `None` for `Latest` in a run that has none yet. `Latest` is
/// the checkpoint an interrupted run left inside an epoch when no epoch was completed after
/// it, else the newest epoch. A damaged newest checkpoint falls back to the previous intact
/// one, saying so on stderr; an explicitly requested epoch that is damaged is an error.
pub(super) fn load(
    checkpoints: &CheckpointDir,
    resume: Resume,
    quiet: bool,
) -> Result<Option<Loaded>, FitError> {
    let loaded = match resume {
        Resume::Epoch(epoch) => Some(checkpoints.load(epoch)?),
        Resume::Latest => {
            let interrupted = match checkpoints.load_interrupted() {
                Ok(loaded) => loaded,
                Err(err @ CheckpointError::Damaged { .. }) => {
                    eprintln!("warning: the interrupted run's checkpoint is skipped: {err}");
                    None
                }
                Err(err) => return Err(err.into()),
            };
            let latest = match checkpoints.load_latest()? {
                Some((loaded, skipped)) => {
                    for note in skipped {
                        eprintln!("warning: {note}");
                    }
                    Some(loaded)
                }
                None => None,
            };
            match (interrupted, latest) {
                (Some(inside), Some(after)) if after.state.epoch > inside.state.epoch => {
                    Some(after)
                }
                (Some(inside), _) => Some(inside),
                (None, latest) => latest,
            }
        }
    };
    if !quiet {
        match &loaded {
            Some(Loaded {
                state:
                    EpochState {
                        epoch,
                        within: Some(within),
                        ..
                    },
                ..
            }) => eprintln!(
                "resuming inside epoch {} after batch {} (step {}) from {}",
                epoch + 1,
                within.batches,
                within.step,
                checkpoints.path().display()
            ),
            Some(loaded) => eprintln!(
                "resuming after epoch {} from {}",
                loaded.state.epoch,
                checkpoints.path().display()
            ),
            None => eprintln!(
                "no checkpoint in {}: starting from epoch 1",
                checkpoints.path().display()
            ),
        }
    }
    Ok(loaded)
}

/// The restored history, which must record the same metrics as this run.
pub(super) fn history(restored: History, declared: &History) -> Result<History, FitError> {
    let names = |h: &History| -> Vec<String> {
        h.series()
            .iter()
            .map(|s| format!("{}.{}", s.split, s.metric))
            .collect()
    };
    if names(&restored) != names(declared) {
        return Err(FitError::InvalidOption {
            option: "resume",
            message: format!(
                "the checkpoint recorded metrics {:?} but this run records {:?}: resume with the same metrics",
                names(&restored),
                names(declared)
            ),
        });
    }
    Ok(restored)
}
