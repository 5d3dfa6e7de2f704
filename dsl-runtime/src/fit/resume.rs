//! Finding the checkpoint a run continues from.

use burn::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::optim::ModuleOptimizer;
use burn::train::LearnerModel;

use super::TrainOutputOf;
use crate::checkpoint::{CheckpointDir, CheckpointError, Loaded, Resume, SavedState, Within};
use crate::erased::AnyModule;
use crate::fit::callback::Callbacks;
use crate::history::History;
use crate::metric::SplitMetric;
use crate::{config::options::FitOptions, error::FitError};

/// Where a run starts: the model, optimizer and schedule (restored from a checkpoint when
/// resuming), the history so far, and the first epoch to train.
pub(super) struct Start<M> {
    pub model: M,
    pub optimizer: ModuleOptimizer,
    pub lr_scheduler: ModuleLrScheduler,
    pub history: History,
    pub first_epoch: usize,
    /// The checkpoint's moving average of the weights, if it has one.
    pub ema: Option<burn::store::ModuleRecord>,
    /// How far into `first_epoch` an interrupted run got.
    pub within: Option<Within>,
    /// The settings that differ from the checkpoint's, accepted with `resume_changed`.
    pub changes: Vec<String>,
    /// The checkpoint's record of `metrics.csv`, which the run continues.
    pub metrics: Option<crate::digest::Digest>,
    /// An f16 run's loss scale when the checkpoint was taken.
    pub loss_scale: Option<crate::checkpoint::loss_scale::LossScale>,
}

/// Settings that may differ on resume without changing what the resumed steps compute: the
/// last epoch (a run may be extended), where files go, which checkpoints are kept, how much is
/// printed, the worker count (batches are built in the same order with any number of
/// workers), and how often values are read from the device.
const MAY_CHANGE: &[&str] = &[
    "epochs",
    "checkpoint",
    "resume",
    "resume_changed",
    "run",
    "artifacts",
    "workers",
    "quiet",
    "write_files",
    "init_from",
    "first_epoch",
    "mlflow",
    "read_every",
];

/// The settings `FitOptions` leaves out of its JSON at their default, with that default as a
/// change names it (every other one left out is an `Option`, `none`).
const UNWRITTEN_DEFAULTS: &[(&str, &str)] = &[
    ("precision", "\"f32\""),
    ("freeze", "[]"),
    ("ema_on", "[]"),
    ("gradient_checkpointing", "false"),
];

/// Every setting of `saved` and `current` (run options, then the experiment's own config under
/// `hyperparameters.`) that differs, as `key: saved X, now Y`.
/// `options` as JSON, serialized here rather than in the generic [`restore`], whose code is
/// compiled again in every experiment crate.
fn options_value(options: &FitOptions) -> Result<serde_json::Value, FitError> {
    serde_json::to_value(options).map_err(|e| FitError::InvalidOption {
        option: "options",
        message: format!("cannot be compared with the checkpoint's: {e}"),
    })
}

pub(crate) fn changes(saved: &serde_json::Value, current: &serde_json::Value) -> Vec<String> {
    let (mut saved_flat, mut current_flat) = (Vec::new(), Vec::new());
    flatten("", saved, &mut saved_flat);
    flatten("", current, &mut current_flat);
    let value = |flat: &[(String, String)], key: &str| {
        flat.iter().find(|(k, _)| k == key).map_or_else(
            || {
                // A setting left out of the JSON at its default says that default.
                let own = key.strip_prefix("hyperparameters.").unwrap_or(key);
                UNWRITTEN_DEFAULTS
                    .iter()
                    .find(|(k, _)| *k == own)
                    .map_or("none", |(_, v)| v)
                    .to_owned()
            },
            |(_, v)| v.clone(),
        )
    };
    let mut keys: Vec<&String> = saved_flat
        .iter()
        .chain(&current_flat)
        .map(|(k, _)| k)
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| {
            let own = key.strip_prefix("hyperparameters.").unwrap_or(key);
            !MAY_CHANGE.contains(&own.split('.').next().unwrap_or(own))
        })
        .filter_map(|key| {
            let (was, now) = (value(&saved_flat, key), value(&current_flat, key));
            (was != now).then(|| format!("`{key}`: saved {was}, now {now}"))
        })
        .collect()
}

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&key, value, out);
            }
        }
        leaf => out.push((prefix.to_owned(), leaf.to_string())),
    }
}

/// The start of a run: as given for a fresh run, else loaded from the checkpoint `resume`
/// names, with the training metrics of an interrupted epoch given back their state.
pub(super) fn restore<M: LearnerModel>(
    checkpoints: &CheckpointDir,
    options: &FitOptions,
    hyperparameters: &serde_json::Value,
    (model, optimizer, lr_scheduler): (M, ModuleOptimizer, ModuleLrScheduler),
    declared: History,
    train_metrics: &mut [Box<dyn SplitMetric<TrainOutputOf<M>>>],
    callbacks: &mut Callbacks,
) -> Result<Start<M>, FitError> {
    let fresh = Start {
        model,
        optimizer,
        lr_scheduler,
        history: declared,
        first_epoch: options.first_epoch,
        ema: None,
        within: None,
        changes: Vec::new(),
        metrics: None,
        loss_scale: None,
    };
    let Some(resume) = options.resume else {
        return Ok(fresh);
    };
    let Some(loaded) = load(checkpoints, resume, options.quiet)? else {
        return Ok(fresh);
    };
    let current = options_value(options)?;
    let changes = changes(
        &settings(&loaded.state.options, &loaded.state.hyperparameters),
        &settings(&current, hyperparameters),
    );
    if !changes.is_empty() && !options.resume_changed {
        return Err(FitError::ResumeChanged { changes });
    }
    let history = history(loaded.state.history, &fresh.history)?;
    let model = AnyModule::new(fresh.model)
        .load(loaded.model)
        .map_err(|e| CheckpointError::Mismatch {
            file: checkpoints.model_file(loaded.slot),
            reason: e.to_string(),
        })?
        .into_inner();
    if let Some(within) = &loaded.state.within {
        if within.carried.len() != train_metrics.len() {
            return Err(FitError::InvalidOption {
                option: "resume",
                message: "the interrupted run recorded other training metrics: resume with the same metrics".to_owned(),
            });
        }
        for (metric, carried) in train_metrics.iter_mut().zip(&within.carried) {
            metric.restore(carried)?;
        }
    }
    callbacks
        .restore(&loaded.state.callbacks)
        .map_err(|message| FitError::InvalidOption {
            option: "resume",
            message,
        })?;
    Ok(Start {
        model,
        optimizer: fresh.optimizer.load_record(loaded.optimizer),
        lr_scheduler: fresh.lr_scheduler.load_record(loaded.scheduler),
        history,
        first_epoch: loaded.state.epoch + 1,
        ema: loaded.ema,
        within: loaded.state.within,
        changes,
        metrics: Some(loaded.state.metrics),
        loss_scale: loaded.state.loss_scale,
    })
}

/// A run's options with the experiment's config under `hyperparameters`, as compared on resume.
fn settings(options: &serde_json::Value, hyperparameters: &serde_json::Value) -> serde_json::Value {
    let mut settings = options.clone();
    if let serde_json::Value::Object(map) = &mut settings {
        map.insert("hyperparameters".to_owned(), hyperparameters.clone());
    }
    settings
}

/// The checkpoint to resume from: `None` for `Latest` in a run that has none yet. `Latest` is
/// the checkpoint an interrupted run left inside an epoch when no epoch was completed after
/// it, else the newest epoch. A damaged newest checkpoint falls back to the previous intact
/// one, saying so on stderr; an explicitly requested epoch that is damaged is an error.
fn load(
    checkpoints: &CheckpointDir,
    resume: Resume,
    quiet: bool,
) -> Result<Option<Loaded>, FitError> {
    let loaded = match resume {
        Resume::Epoch(epoch) => Some(checkpoints.load(epoch)?),
        Resume::Latest => {
            let mut damaged = Vec::new();
            let interrupted = match checkpoints.load_interrupted() {
                Ok(loaded) => loaded,
                Err(err @ CheckpointError::Damaged { .. }) => {
                    damaged.push(err.damaged_file());
                    None
                }
                Err(err) => return Err(err.into()),
            };
            let latest = match checkpoints.load_latest() {
                Ok(Some((loaded, skipped))) => {
                    for note in skipped {
                        say!("warning: {note}");
                    }
                    Some(loaded)
                }
                Ok(None) => None,
                // Every epoch damaged: the interrupted run's checkpoint, if intact, is newer.
                Err(CheckpointError::AllDamaged {
                    damaged: epochs, ..
                }) => {
                    damaged.extend(epochs);
                    None
                }
                Err(err) => return Err(err.into()),
            };
            // A run that had checkpoints and has no readable one stops rather than start over
            // in its own directory.
            if interrupted.is_none() && latest.is_none() && !damaged.is_empty() {
                return Err(CheckpointError::AllDamaged {
                    dir: checkpoints.path().to_owned(),
                    damaged,
                }
                .into());
            }
            for file in &damaged {
                say!("warning: skipped the damaged checkpoint file {file}");
            }
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
                    SavedState {
                        epoch,
                        within: Some(within),
                        ..
                    },
                ..
            }) => say!(
                "resuming inside epoch {} after batch {} (step {}) from {}",
                epoch + 1,
                within.batches,
                within.step,
                checkpoints.path().display()
            ),
            Some(loaded) => say!(
                "resuming after epoch {} from {}",
                loaded.state.epoch,
                checkpoints.path().display()
            ),
            None => say!(
                "no checkpoint in {}: starting from epoch 1",
                checkpoints.path().display()
            ),
        }
    }
    Ok(loaded)
}

/// The restored history, which must record the same metrics as this run.
fn history(restored: History, declared: &History) -> Result<History, FitError> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::changes;

    #[test]
    fn only_settings_that_decide_the_training_count_as_changes() {
        let saved = json!({
            "epochs": 3, "batch_size": 16, "workers": 0, "shuffle": 7,
            "hyperparameters": {"lr": 0.1, "optimizer": {"kind": "adam", "beta_1": 0.9}, "epochs": 3},
        });
        let same_run_longer = json!({
            "epochs": 5, "batch_size": 16, "workers": 2, "shuffle": 7,
            "hyperparameters": {"lr": 0.1, "optimizer": {"kind": "adam", "beta_1": 0.9}, "epochs": 5},
        });
        assert_eq!(changes(&saved, &same_run_longer), Vec::<String>::new());
        let other = json!({
            "epochs": 3, "batch_size": 32, "workers": 0, "shuffle": null,
            "hyperparameters": {"lr": 0.1, "optimizer": {"kind": "adam", "beta_1": 0.95}, "epochs": 3},
        });
        assert_eq!(
            changes(&saved, &other),
            [
                "`batch_size`: saved 16, now 32",
                "`hyperparameters.optimizer.beta_1`: saved 0.9, now 0.95",
                "`shuffle`: saved 7, now null",
            ]
        );
    }

    /// A setting written only when it is not its default names the default it stands for.
    #[test]
    fn a_setting_left_unwritten_is_named_by_its_default() {
        let saved = json!({ "precision": "bf16", "ema": 0.999, "epochs": 3 });
        let now = json!({ "epochs": 3 });
        assert_eq!(
            changes(&saved, &now),
            [
                "`ema`: saved 0.999, now none",
                "`precision`: saved \"bf16\", now \"f32\"",
            ]
        );
        assert_eq!(
            changes(&now, &json!({ "precision": "f16", "epochs": 3 })),
            ["`precision`: saved \"f32\", now \"f16\""]
        );
    }
}
