//! `study.md`, `study.csv` and `study.svg`, rewritten from the trial records whenever a trial
//! ends (each file replaced atomically).

use serde_json::Value;

use super::space::Dist;
use super::study::{State, Study, TrialRecord};
use crate::output::atomic::{replace_file, with_report_lock};
use crate::output::plot::{StudyPoint, study_svg};

/// What the study has done so far, in numbers.
#[derive(Debug, PartialEq)]
pub struct Tally {
    /// Trials in each state.
    pub complete: usize,
    #[allow(missing_docs)]
    pub pruned: usize,
    #[allow(missing_docs)]
    pub failed: usize,
    #[allow(missing_docs)]
    pub running: usize,
    /// Epochs trained by all trials, and what they would have trained unpruned.
    pub epochs: usize,
    #[allow(missing_docs)]
    pub budget: usize,
    /// The best complete trial, its epoch and value.
    pub best: Option<(usize, usize, f64)>,
}

/// Counts `records`.
pub fn tally(study: &Study, records: &[TrialRecord]) -> Tally {
    let objective = &study.definition.objective;
    let count = |state| records.iter().filter(|r| r.state == state).count();
    let mut best: Option<(usize, usize, f64)> = None;
    for record in records.iter().filter(|r| r.state == State::Complete) {
        if let Some((epoch, value)) = record.best(objective) {
            let better = best.is_none_or(|(_, _, b)| objective.loss(value) < objective.loss(b));
            if better {
                best = Some((record.trial, epoch, value));
            }
        }
    }
    Tally {
        complete: count(State::Complete),
        pruned: count(State::Pruned),
        failed: count(State::Failed),
        running: count(State::Running),
        epochs: records.iter().map(|r| r.curve.len()).sum(),
        budget: records
            .iter()
            .map(|r| r.last_epoch.unwrap_or(r.curve.len()))
            .sum(),
        best,
    }
}

/// What the study's MLflow parent run shows: its definition as params (`space.lr`:
/// `log_uniform(0.001, 1)`, `objective`, `sampler`, `pruner`, `seed`, `jobs`: the study's
/// folder is named by them, so they never change), the best complete trial as tags
/// (`dsl.best.trial`, `dsl.best.epoch`, `dsl.best.<key>`) and its value as the metric
/// `best/<split>/<metric>` at the step of the trials ended.
#[allow(clippy::type_complexity)]
pub(crate) fn parent_run(
    study: &Study,
) -> (
    Vec<(String, String)>,
    Vec<(String, String)>,
    Option<(String, f64, u64)>,
) {
    let definition = &study.definition;
    let name = |value: Value| value.as_str().unwrap_or_default().to_owned();
    let mut params: Vec<(String, String)> = definition
        .space
        .iter()
        .map(|p| (format!("space.{}", p.key), p.dist.describe()))
        .collect();
    params.extend([
        ("objective".to_owned(), definition.objective.describe()),
        (
            "sampler".to_owned(),
            name(serde_json::to_value(definition.sampler).unwrap_or_default()),
        ),
        (
            "pruner".to_owned(),
            name(serde_json::to_value(definition.pruner).unwrap_or_default()),
        ),
        ("seed".to_owned(), definition.seed.to_string()),
        ("jobs".to_owned(), definition.jobs.to_string()),
    ]);
    let records = study.records();
    let t = tally(study, &records);
    let ended = (t.complete + t.pruned + t.failed) as u64;
    let Some((trial, epoch, value)) = t.best else {
        return (params, Vec::new(), None);
    };
    let mut tags = vec![
        ("dsl.best.trial".to_owned(), trial.to_string()),
        ("dsl.best.epoch".to_owned(), epoch.to_string()),
    ];
    if let Some(record) = records.iter().find(|r| r.trial == trial) {
        tags.extend(record.params.iter().map(|(key, value)| {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            (format!("dsl.best.{key}"), value)
        }));
    }
    let metric = format!("best/{}", definition.objective.metric.replace('.', "/"));
    (params, tags, Some((metric, value, ended)))
}

/// Rewrites the three files, one process at a time (a job array's trials end together);
/// returns `study.md`.
pub fn write(study: &Study) -> std::io::Result<String> {
    with_report_lock(&study.dir, || rewrite(study))
}

fn rewrite(study: &Study) -> std::io::Result<String> {
    let records = study.records();
    let definition = &study.definition;
    let objective = &definition.objective;
    let t = tally(study, &records);
    let keys: Vec<&str> = definition.space.iter().map(|p| p.key.as_str()).collect();
    let mut md = format!(
        "# Study `{}`\n\n{} by {} sampling (seed {}), pruner {}, {} at a time.\n\n",
        study.dir.file_name().unwrap_or_default().to_string_lossy(),
        objective.describe(),
        serde_json::to_value(definition.sampler)
            .unwrap_or_default()
            .as_str()
            .unwrap_or(""),
        definition.seed,
        serde_json::to_value(definition.pruner)
            .unwrap_or_default()
            .as_str()
            .unwrap_or(""),
        definition.jobs,
    );
    md += &format!(
        "Space: {}.\n\nTrials: {} complete, {} pruned, {} failed, {} running. Epochs trained: {} of {} ({:.0} %).\n\n",
        definition
            .space
            .iter()
            .map(|p| format!("`{}` {}", p.key, p.dist.describe()))
            .collect::<Vec<_>>()
            .join(", "),
        t.complete,
        t.pruned,
        t.failed,
        t.running,
        t.epochs,
        t.budget,
        100.0 * t.epochs as f64 / t.budget.max(1) as f64,
    );
    if let Some((trial, epoch, value)) = t.best {
        let record = &records[records.iter().position(|r| r.trial == trial).unwrap_or(0)];
        md += &format!(
            "Best: trial {trial}, {} = {value} at epoch {epoch}, with {}.\n\n",
            objective.metric,
            settings(&record.params)
        );
    }
    let header: Vec<String> = ["trial", "state"]
        .into_iter()
        .chain(keys.iter().copied())
        .map(str::to_owned)
        .chain([
            format!("best {}", objective.metric),
            "best so far".to_owned(),
            "epochs".to_owned(),
            "run".to_owned(),
        ])
        .collect();
    md += &format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    // The CSV names its columns as data: the metric itself, `best_so_far`.
    let mut csv = header
        .iter()
        .map(|h| match h.strip_prefix("best ") {
            Some("so far") => "best_so_far",
            Some(metric) => metric,
            None => h,
        })
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    let mut so_far: Option<f64> = None;
    let mut points = Vec::new();
    for record in &records {
        let best = record.best(objective);
        if record.state == State::Complete
            && let Some((_, v)) = best
            && so_far.is_none_or(|b| objective.loss(v) < objective.loss(b))
        {
            so_far = Some(v);
        }
        let cells: Vec<String> = [record.trial.to_string(), record.state.as_str().to_owned()]
            .into_iter()
            .chain(keys.iter().map(|key| {
                record
                    .params
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or_else(String::new, |(_, v)| v.to_string())
            }))
            .chain([
                best.map_or_else(String::new, |(_, v)| v.to_string()),
                so_far.map_or_else(String::new, |v| v.to_string()),
                record.curve.len().to_string(),
                record
                    .run
                    .as_ref()
                    .map_or_else(String::new, |r| r.display().to_string()),
            ])
            .collect();
        md += &format!("| {} |\n", cells.join(" | "));
        csv += &format!("{}\n", cells.join(","));
        if let Some((_, value)) = best
            && matches!(record.state, State::Complete | State::Pruned)
        {
            points.push(StudyPoint {
                trial: record.trial,
                objective: value,
                pruned: record.state == State::Pruned,
                keys: definition
                    .space
                    .iter()
                    .map(|p| axis_value(&p.dist, record.params.iter().find(|(k, _)| *k == p.key)))
                    .collect(),
            });
        }
    }
    let axes: Vec<String> = definition
        .space
        .iter()
        .map(|p| match p.dist {
            Dist::LogUniform { .. } => format!("log10 {}", p.key),
            Dist::Choice { .. } => format!("{} (choice index)", p.key),
            _ => p.key.clone(),
        })
        .collect();
    let svg = study_svg(&objective.metric, objective.maximize, &axes, &points)
        .map_err(std::io::Error::other)?;
    replace_file(&study.dir.join("study.md"), md.as_bytes())?;
    replace_file(&study.dir.join("study.csv"), csv.as_bytes())?;
    replace_file(&study.dir.join("study.svg"), svg.as_bytes())?;
    Ok(md)
}

/// `lr=0.01, batch_size=32`.
pub fn settings(params: &[(String, Value)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a trial's value of a key goes on the key's axis.
fn axis_value(dist: &Dist, param: Option<&(String, Value)>) -> f64 {
    let Some((_, value)) = param else {
        return f64::NAN;
    };
    match dist {
        Dist::LogUniform { .. } => value.as_f64().map_or(f64::NAN, f64::log10),
        Dist::Choice { values } => values
            .iter()
            .position(|v| v == value)
            .map_or(f64::NAN, |i| i as f64),
        _ => value.as_f64().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::search::study::tests::definition;

    /// A job array's trials ending together each rewrite the report; the one left holds them
    /// all (one read before another trial's record landed is never renamed over a newer one).
    #[test]
    fn trials_ending_together_leave_a_report_of_every_trial() {
        for _ in 0..20 {
            let tmp = tempfile::tempdir().unwrap();
            let study = Study::new(tmp.path(), "exp", definition(2));
            study.create().unwrap();
            std::thread::scope(|scope| {
                for trial in 0..6 {
                    let study = &study;
                    scope.spawn(move || {
                        study
                            .write(&TrialRecord {
                                trial,
                                state: State::Complete,
                                params: vec![("lr".into(), Value::from(0.1))],
                                curve: vec![(1, Some(trial as f64))],
                                last_epoch: Some(1),
                                run: None,
                                pruned: None,
                                failed: None,
                            })
                            .unwrap();
                        write(study).unwrap();
                    });
                }
            });
            let csv = std::fs::read_to_string(study.dir.join("study.csv")).unwrap();
            assert_eq!(csv.lines().count(), 1 + 6, "{csv}");
        }
    }
}
