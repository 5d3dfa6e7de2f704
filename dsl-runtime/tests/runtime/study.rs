//! A study's trials as runtime code, without the macro or a child process: each trial's values
//! drawn from the study folder, its objective reported by the run at each epoch, successive
//! halving stopping it at a rung with that epoch's checkpoint, and the records the report and
//! the sampler read.

use std::path::Path;

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::app::search::prune::Pruner;
use burn_experiment::app::search::sampler::Sampler;
use burn_experiment::app::search::space::{Dist, Param};
use burn_experiment::app::search::study::{Definition, Objective, State, Study};
use burn_experiment::app::search::{Prepared, TrialRun, report};
use burn_experiment::checkpoint::Policy;
use burn_experiment::prelude::*;

fn definition() -> Definition {
    Definition {
        space: vec![Param {
            key: "lr".into(),
            dist: Dist::LogUniform {
                low: 1e-3,
                high: 1.0,
            },
        }],
        objective: Objective::parse("min(valid.loss)").unwrap(),
        sampler: Sampler::Random,
        pruner: Pruner::Asha,
        seed: 4,
        jobs: 1,
    }
}

/// Trains trial `k` of `study` as the command line does: its drawn rate, the trial watching.
fn train(study: &Study, k: usize, artifacts: &Path) -> FitReport<Classifier> {
    let Prepared::Train { trial, params, .. } = TrialRun::prepare(study.clone(), k).unwrap() else {
        panic!("trial {k} had ended");
    };
    let lr = params[0].1.as_f64().unwrap();
    let options = FitOptions {
        name: "study".into(),
        artifacts: artifacts.to_owned(),
        epochs: 6,
        batch_size: 16,
        shuffle: Some(3),
        quiet: true,
        checkpoint: Some(vec![Policy::KeepLast { n: 1 }]),
        watch: Some(TrialRun::watch(&trial)),
        ..FitOptions::default()
    };
    let report = Fit::new(classifier(), SgdConfig::new().init(), lr)
        .options(options)
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap();
    trial.lock().unwrap().finish(true, false).unwrap();
    report
}

#[test]
fn trials_report_each_epoch_and_stop_at_a_rung_with_their_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let study = Study::new(tmp.path(), "study", definition());
    let mut pruned = 0;
    for k in 0..6 {
        let report = train(&study, k, tmp.path());
        let record = study.read(k).unwrap().unwrap();
        // The record is the run's: its directory, and its validation loss at every epoch.
        assert_eq!(record.run.as_deref(), Some(report.run_dir.as_path()));
        let losses = &report.history.get(Split::Valid, "loss").unwrap().epochs;
        let curve: Vec<(usize, f64)> = record.curve.iter().map(|&(e, v)| (e, v.unwrap())).collect();
        assert_eq!(&curve, losses);
        match record.state {
            State::Pruned => {
                pruned += 1;
                // Stopped at the first rung (epoch 2) or the second (6 is the last epoch:
                // no rung), after that epoch's checkpoint.
                assert_eq!(report.last_epoch, 2, "{record:?}");
                assert!(
                    report
                        .stopped
                        .as_deref()
                        .unwrap()
                        .starts_with("pruned: at epoch 2")
                );
                assert!(report.run_dir.join("checkpoint/model-2.bpk").exists());
                assert!(record.pruned.is_some());
            }
            State::Complete => assert_eq!(report.last_epoch, 6),
            other => panic!("trial {k} {other:?}"),
        }
    }
    assert!(pruned > 0, "successive halving stops some of 6 trials");
    // The report counts what the records hold.
    let tally = report::tally(&study, &study.records());
    assert_eq!((tally.complete + tally.pruned, tally.pruned), (6, pruned));
    assert_eq!(tally.budget, 36);
    assert_eq!(tally.epochs, 6 * 6 - 4 * pruned);
    let best = tally.best.unwrap();
    let complete = study
        .records()
        .into_iter()
        .filter(|r| r.state == State::Complete);
    let lowest = complete
        .filter_map(|r| r.best(&study.definition.objective))
        .map(|(_, v)| v)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best.2, lowest);
    // A trial that ended is not trained again.
    assert!(matches!(
        TrialRun::prepare(study.clone(), 0).unwrap(),
        Prepared::Ended(_)
    ));
}
