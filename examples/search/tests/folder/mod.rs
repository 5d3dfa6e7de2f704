//! The study folder a study of the example writes, the trial records in it and a trial run's
//! validation losses: shared by the study, figures and Slurm tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The `study-<hash>` folder of the experiment under `artifacts`, once there is one; never more
/// than one.
pub fn find_study(artifacts: &Path) -> Option<PathBuf> {
    let studies: Vec<PathBuf> = std::fs::read_dir(artifacts.join("plane_fit"))
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("study-")
        })
        .collect();
    assert!(studies.len() <= 1, "one study folder: {studies:?}");
    studies.into_iter().next()
}

/// The one study folder under `artifacts`.
pub fn study_dir(artifacts: &Path) -> PathBuf {
    find_study(artifacts).expect("a study folder")
}

/// Every `trial-<K>.json` of `study`, by trial.
pub fn records(study: &Path) -> Vec<Value> {
    let mut records: Vec<Value> = std::fs::read_dir(study)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("trial-") && name.ends_with(".json")
        })
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    records.sort_by_key(|r| r["trial"].as_u64());
    records
}

/// What a trial is, whichever folder it ran in: its values, state and objective per epoch.
pub fn outcome(record: &Value) -> (Value, Value, Value) {
    (
        record["params"].clone(),
        record["state"].clone(),
        record["curve"].clone(),
    )
}

/// The validation losses of a run, per epoch, from its `metrics.csv`.
pub fn valid_losses(run: &Path) -> Vec<(u64, f64)> {
    let csv = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (epoch, split, metric, value) = (col("epoch"), col("split"), col("metric"), col("value"));
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|row| row[split] == "valid" && row[metric] == "loss")
        .map(|row| (row[epoch].parse().unwrap(), row[value].parse().unwrap()))
        .collect()
}
