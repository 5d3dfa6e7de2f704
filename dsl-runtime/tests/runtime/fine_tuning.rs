//! Starting from saved weights and freezing parts of the model, against the same done by hand
//! with Burn's API.

use std::path::Path;

use crate::common::*;
use crate::tuned::{options, run};
use burn::module::{Module, ParamGroup};
use burn::optim::SgdConfig;
use burn_experiment::checkpoint::Resume;
use burn_experiment::model::weights::export_safetensors;
use burn_experiment::prelude::*;

/// fc1's weight and bias come first in `Mlp::weights`: 4×16 + 16 values.
const FC1: usize = 80;

fn setup(epochs: usize) -> HandSetup {
    HandSetup {
        train: 0..96,
        valid: 96..120,
        batch_size: 16,
        epochs,
        shuffle: None,
        grad_accumulation: 1,
        regression: false,
    }
}

#[test]
fn frozen_parameters_stay_bit_identical_and_the_rest_trains_as_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(FitOptions {
        freeze: vec!["mlp.fc1".into()],
        ..options(dir.path(), 2)
    })
    .unwrap();
    let initial = mlp(3).weights();
    let trained = report.model.mlp.weights();
    assert_eq!(trained[..FC1], initial[..FC1], "fc1 is frozen");
    assert_ne!(trained[FC1..], initial[FC1..], "fc2 trains");

    let by_hand = mlp(3).freeze_group(ParamGroup::from_predicate("fc1"));
    let hand = hand_loop(&setup(2), by_hand, SgdConfig::new().init(), 0.1.into());
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(trained, hand.weights);
}

#[test]
fn unfreezing_at_an_epoch_trains_from_there_and_resumes_across_it() {
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let two_phase = |dir: &Path, epochs: usize, resume: Option<Resume>| FitOptions {
        freeze: vec!["mlp.fc1".into()],
        unfreeze: Some(2),
        resume,
        ..options(dir, epochs)
    };
    let whole = run(two_phase(whole_dir.path(), 3, None)).unwrap();
    let initial = mlp(3).weights();
    let after_one =
        burn_experiment::inference::evaluate::load_checkpoint(&whole.run_dir, 1, classifier())
            .unwrap();
    assert_eq!(
        after_one.mlp.weights()[..FC1],
        initial[..FC1],
        "frozen in epoch 1"
    );
    assert_ne!(
        whole.model.mlp.weights()[..FC1],
        initial[..FC1],
        "trained from epoch 2"
    );

    run(two_phase(dir.path(), 1, None)).unwrap();
    let resumed = run(two_phase(dir.path(), 3, Some(Resume::Latest))).unwrap();
    assert_bit_identical(
        &resumed.history.train_losses(),
        &whole.history.train_losses(),
    );
    assert_eq!(resumed.model.mlp.weights(), whole.model.mlp.weights());
}

#[test]
fn a_path_that_names_no_parameter_lists_the_models_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let Err(err) = run(FitOptions {
        freeze: vec!["mlp.fc3".into()],
        ..options(dir.path(), 1)
    }) else {
        panic!("froze a path the model does not have");
    };
    let err = err.to_string();
    assert!(
        err.contains("`mlp.fc3` names no parameter of the model"),
        "{err}"
    );
    assert!(
        err.contains("mlp.fc1.weight, mlp.fc1.bias, mlp.fc2.weight"),
        "{err}"
    );
}

#[test]
fn a_run_starts_from_exported_or_checkpointed_weights_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let first = run(options(&dir.path().join("first"), 2)).unwrap();
    let file = dir.path().join("first.safetensors");
    export_safetensors(&first.model, &file).unwrap();
    let checkpoint = first.run_dir.join("checkpoint/model-2.bpk");

    let hand = hand_loop(
        &setup(1),
        first.model.clone().train().mlp,
        SgdConfig::new().init(),
        0.1.into(),
    );
    for weights in [file, checkpoint] {
        let tuned = run(FitOptions {
            init_from: Some(weights.clone()),
            ..options(&dir.path().join("tuned"), 1)
        })
        .unwrap();
        assert_bit_identical(&tuned.history.train_losses(), &hand.losses);
        assert_eq!(
            tuned.model.mlp.weights(),
            hand.weights,
            "{}",
            weights.display()
        );
    }

    let other = dir.path().join("other.safetensors");
    export_safetensors(&Classifier { mlp: mlp(2) }, &other).unwrap();
    let Err(err) = run(FitOptions {
        init_from: Some(other),
        ..options(&dir.path().join("mismatch"), 1)
    }) else {
        panic!("started from weights of another shape");
    };
    let err = err.to_string();
    assert!(err.contains("other.safetensors"), "{err}");
    assert!(err.contains("mlp.fc2"), "names the parameter: {err}");
    assert!(
        err.contains("[16, 3]") && err.contains("[16, 2]"),
        "and both shapes: {err}"
    );
}

#[test]
fn parameter_groups_take_their_own_rate_as_burns_per_group_scheduler_does() {
    use burn::lr_scheduler::LrSchedulerConfig;
    use burn::lr_scheduler::module_lr_scheduler::ModuleLrSchedulerConfig;
    use burn_experiment::config::spec::{GroupLr, Schedule};
    let dir = tempfile::tempdir().unwrap();
    let model = classifier();
    let groups = burn_experiment::model::tuning::lr_groups(
        &model,
        "mlp.",
        &[
            GroupLr {
                path: "fc1".into(),
                lr: 0.0,
            },
            GroupLr {
                path: "fc2.bias".into(),
                lr: 0.02,
            },
        ],
    )
    .unwrap();
    let schedule = Schedule::Constant.build_grouped(0.1, 12, &groups).unwrap();
    let report = Fit::new(model, SgdConfig::new().init(), schedule)
        .options(options(dir.path(), 2))
        .train_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap();
    let initial = mlp(3).weights();
    assert_eq!(
        report.model.mlp.weights()[..FC1],
        initial[..FC1],
        "fc1 at lr 0"
    );

    let by_hand = ModuleLrSchedulerConfig::new(LrSchedulerConfig::Constant(0.1))
        .with_group(
            ParamGroup::from_paths(vec!["fc1.weight", "fc1.bias"]),
            LrSchedulerConfig::Constant(0.0),
        )
        .with_group(
            ParamGroup::from_paths(vec!["fc2.bias"]),
            LrSchedulerConfig::Constant(0.02),
        )
        .init()
        .unwrap();
    let hand = hand_loop(&setup(2), mlp(3), SgdConfig::new().init(), by_hand);
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(report.model.mlp.weights(), hand.weights);
    let plain = hand_loop(&setup(2), mlp(3), SgdConfig::new().init(), 0.1.into());
    assert_ne!(
        hand.weights[FC1..],
        plain.weights[FC1..],
        "fc2.bias at its own rate"
    );
}
