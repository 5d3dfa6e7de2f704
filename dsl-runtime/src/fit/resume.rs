//! Finding the checkpoint a run continues from.

use crate::checkpoint::{CheckpointDir, Loaded, Resume};
use crate::history::History;

use super::FitError;

/// The checkpoint to resume from: `None` for `Latest` in a run that has none yet. A damaged
/// newest epoch falls back to the previous intact one, saying so on stderr; an explicitly
/// requested epoch that is damaged is an error.
pub(super) fn load(
    checkpoints: &CheckpointDir,
    resume: Resume,
    quiet: bool,
) -> Result<Option<Loaded>, FitError> {
    let loaded = match resume {
        Resume::Epoch(epoch) => Some(checkpoints.load(epoch)?),
        Resume::Latest => match checkpoints.load_latest()? {
            Some((loaded, skipped)) => {
                for note in skipped {
                    eprintln!("warning: {note}");
                }
                Some(loaded)
            }
            None => None,
        },
    };
    if !quiet {
        match &loaded {
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
