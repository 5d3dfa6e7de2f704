//! Several optimizers through the runtime alone (`fit::steps::several` and `Fit::steps`, no
//! macro): the seed classifier's two layers each with their own optimizer, a step each per
//! batch, against the hand loop a Burn user writes; and the ownership errors.

use std::collections::BTreeMap;

use burn::optim::{AdamConfig, GradientsParams, SgdConfig};
use burn::tensor::Gradients;
use burn::train::ClassificationOutput;
use burn_experiment::config::spec::{NamedOptimizer, OptimizerSpec, Schedule};
use burn_experiment::fit::steps::{Play, several};
use burn_experiment::prelude::*;

use crate::common::*;

/// Both steps compute the classification loss; each one's optimizer owns one layer.
fn play(model: &Classifier, batch: &Batch) -> (Gradients, ClassificationOutput) {
    let out = model.mlp.forward_classification(batch.clone());
    (out.loss.backward(), out)
}

fn optimizers(first: &[&str], second: &[&str]) -> BTreeMap<String, NamedOptimizer> {
    let named = |lr: f64, optimizer: OptimizerSpec, on: &[&str]| NamedOptimizer {
        lr,
        optimizer,
        on: on.iter().map(|p| p.to_string()).collect(),
        every: 1,
        first: None,
        in_epoch: false,
    };
    let adam: OptimizerSpec = serde_json::from_str(
        r#"{"kind": "adam", "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-5, "weight_decay": null}"#,
    )
    .unwrap();
    let sgd: OptimizerSpec = serde_json::from_str(r#"{"kind": "sgd"}"#).unwrap();
    BTreeMap::from([
        ("first".to_owned(), named(0.1, sgd, first)),
        ("second".to_owned(), named(1e-2, adam, second)),
    ])
}

fn steps() -> Vec<(&'static str, Play<Classifier>)> {
    vec![("first", play), ("second", play)]
}

#[test]
fn each_layer_moves_only_by_its_own_optimizer_as_in_the_hand_loop() {
    let (optimizer, schedule, steps) = several(
        &classifier(),
        "",
        &optimizers(&["mlp.fc1"], &["mlp.fc2"]),
        &Schedule::Constant,
        6,
        steps(),
    )
    .unwrap();
    let report = Fit::generated(classifier(), optimizer, schedule)
        .steps(steps)
        .with_options(|o| {
            o.epochs = 1;
            o.batch_size = 16;
            o.write_files = false;
            o.quiet = true;
        })
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap();

    // By hand: per batch, the loss and a step of the first layer's optimizer on its gradients
    // alone, then the same for the second layer on the weights the first step left.
    let mut model = classifier();
    let (mut first, mut second) = (SgdConfig::new().init(), AdamConfig::new().init());
    let loader = burn::data::dataloader::DataLoaderBuilder::new(SampleBatcher)
        .batch_size(16)
        .set_device(device())
        .build(samples(0..96));
    for batch in loader.iter() {
        let batch = batch.unwrap();
        let mut grads = model
            .mlp
            .forward_classification(batch.clone())
            .loss
            .backward();
        let grads = GradientsParams::from_module(&mut grads, &model.mlp.fc1);
        model = first.step(0.1, model, grads);
        let mut grads = model.mlp.forward_classification(batch).loss.backward();
        let grads = GradientsParams::from_module(&mut grads, &model.mlp.fc2);
        model = second.step(1e-2, model, grads);
    }
    assert_eq!(report.model.mlp.weights(), model.mlp.weights());
    assert_ne!(model.mlp.weights(), classifier().mlp.weights());
}

#[test]
fn a_parameter_owned_twice_or_a_path_of_nothing_is_refused() {
    let refused = |first: &[&str], second: &[&str]| {
        several(
            &classifier(),
            "",
            &optimizers(first, second),
            &Schedule::Constant,
            6,
            steps(),
        )
        .err()
        .expect("refused")
        .to_string()
    };
    let twice = refused(&["mlp"], &["mlp.fc2"]);
    assert!(
        twice.contains("`mlp.fc2.weight` is owned by both `first` and `second`"),
        "{twice}"
    );
    let nothing = refused(&["mlp.fc3"], &["mlp.fc2"]);
    assert!(
        nothing.contains("mlp.fc3") && nothing.contains("mlp.fc1.weight"),
        "{nothing}"
    );
    // An optimizer no step takes.
    let unused = several(
        &classifier(),
        "",
        &optimizers(&["mlp.fc1"], &["mlp.fc2"]),
        &Schedule::Constant,
        6,
        vec![("first", play)],
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(unused.contains("`second`, which no step uses"), "{unused}");
}

/// A layer no optimizer owns would never train, silently: the run is refused before it
/// starts, naming the layer's parameters; frozen for the whole run, it is meant to stay, and
/// the run trains the rest.
#[test]
fn a_parameter_no_optimizer_owns_is_refused_unless_frozen() {
    let only_first: BTreeMap<String, NamedOptimizer> = optimizers(&["mlp.fc1"], &[])
        .into_iter()
        .filter(|(name, _)| name == "first")
        .collect();
    let run = |freeze: &[&str], unfreeze: Option<usize>| {
        let (optimizer, schedule, steps) = several(
            &classifier(),
            "",
            &only_first,
            &Schedule::Constant,
            6,
            vec![("first", play as Play<Classifier>)],
        )
        .unwrap();
        Fit::generated(classifier(), optimizer, schedule)
            .steps(steps)
            .with_options(|o| {
                o.epochs = 2;
                o.batch_size = 16;
                o.write_files = false;
                o.quiet = true;
                o.freeze = freeze.iter().map(|p| p.to_string()).collect();
                o.unfreeze = unfreeze;
            })
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
    };
    let refused = run(&[], None).err().expect("refused").to_string();
    assert!(
        refused.contains(
            "no optimizer owns `mlp.fc2.weight`, `mlp.fc2.bias`, so they would never train"
        ) && refused.contains("add it to `freeze`"),
        "{refused}"
    );
    // Frozen only until epoch 2, they would train then: still refused.
    assert!(run(&["mlp.fc2"], Some(2)).is_err());
    let report = run(&["mlp.fc2"], None).unwrap();
    assert_eq!(
        report.model.mlp.fc2.weight.val().into_data(),
        classifier().mlp.fc2.weight.val().into_data()
    );
}
