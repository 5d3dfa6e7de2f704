//! The study process: trains the trials as child processes of the experiment's own binary,
//! each once the trials it sees have ended, and records how each ended.

use super::report;
use super::study::{State, Study, TrialRecord};
use crate::error::CliError;

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
    if let Some(parent) = parent {
        log_study(parent, study);
    }
    let exe = crate::app::sweep::this_program()?;
    let jobs = study.definition.jobs;
    // Ctrl-C reaches the children too; this process waits for them to save and stop.
    let _signals = crate::interrupt::Interrupt::install().ok();
    let mut running = crate::app::sweep::Running::default();
    // Trials whose process was killed on its own once, and trained again.
    let mut retried = std::collections::BTreeSet::new();
    let mut ended = Ended::default();
    let mut next = 0;
    loop {
        if running.interrupted() {
            ended.interrupted = true;
        }
        let stopping = ended.interrupted;
        while !stopping
            && next < trials
            && running.len() < jobs
            && running.trials().all(|k| k + jobs > next)
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
                    study
                        .draw(next, &seen)
                        .map_err(|e| CliError::new(e.to_string()))?
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
            let spawned =
                crate::app::sweep::spawn_trial(&exe, &study.dir, args, env, next, jobs <= 1, true)?;
            running.push(next, spawned);
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        let Some((trial, status)) = running.next_ended() else {
            continue;
        };
        let Some(mut record) = study.read(trial)? else {
            continue;
        };
        match status.map(|s| (s, s.code())) {
            Some((_, Some(0))) if record.finished() => {}
            // Stopped by Ctrl-C or SIGTERM: left running, to resume.
            Some((_, Some(130))) => {
                ended.interrupted = true;
                continue;
            }
            // Killed by a signal of its own (the OOM killer, a node's failure), not stopped
            // by the study: trained again at once from its last checkpoint, so the trials
            // drawn after it see what the uninterrupted study's did.
            Some((status, None)) if !ended.interrupted && retried.insert(trial) => {
                say!(
                    "study: trial {trial}'s process was killed ({status}); trained again from its last checkpoint"
                );
                let spawned = crate::app::sweep::spawn_trial(
                    &exe,
                    &study.dir,
                    args,
                    env,
                    trial,
                    jobs <= 1,
                    true,
                )?;
                running.push(trial, spawned);
                continue;
            }
            // The trial's process rewrote the report as it ended, unless it died first.
            ended_as => {
                record.state = State::Failed;
                record.failed = Some(match ended_as {
                    Some((status, None)) if retried.contains(&trial) => format!(
                        "its process was killed ({status}) twice, the second time resumed from its checkpoint"
                    ),
                    Some((status, _)) => {
                        format!("its process ended with {status}: trial-{trial}.log says why")
                    }
                    None => "its process could not be waited for".to_owned(),
                });
                study
                    .write(&record)
                    .map_err(|e| CliError::new(e.to_string()))?;
                ended.failed.push(trial);
                if let Err(e) = report::write(study) {
                    say!("warning: cannot write the study's report: {e}");
                }
            }
        }
        let objective = &study.definition.objective;
        let value = record.best(objective).map_or_else(
            || "no value".to_owned(),
            |(e, v)| format!("{} {v} at epoch {e}", objective.metric),
        );
        let why = record
            .failed
            .as_ref()
            .map_or_else(String::new, |why| format!(": {why}"));
        say!(
            "study: trial {trial} {} after {} epochs ({value}){why}",
            record.state.as_str(),
            record.curve.len()
        );
        if let (Some(parent), Some(run)) = (parent, &record.run) {
            parent.tag_trial(run, record.state.as_str());
        }
        if let Some(parent) = parent {
            log_study(parent, study);
        }
    }
    ended.failed.sort_unstable();
    Ok(ended)
}

/// The study's definition and best trial so far, on its MLflow parent run.
fn log_study(parent: &crate::output::mlflow::SweepParent, study: &Study) {
    let (params, tags, best) = report::parent_run(study);
    let best = best
        .as_ref()
        .map(|(key, value, step)| (key.as_str(), *value, *step));
    parent.log(&params, &tags, best);
}
