//! Predictions of a trained model, as outputs and as CSV; weights exported as safetensors.

use std::sync::Arc;

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::inference::predict::{predict, write_predictions};
use burn_experiment::model::weights::{export_safetensors, load_weights};
use burn_experiment::prelude::*;

#[test]
fn predict_gives_each_batchs_output_in_order_and_the_csv_one_row_per_sample() {
    let model = classifier();
    let outputs = predict(
        &model,
        Arc::new(samples(0..40)),
        Arc::new(SampleBatcher),
        16,
    )
    .unwrap();
    let sizes: Vec<usize> = outputs.iter().map(|o| o.targets.dims()[0]).collect();
    assert_eq!(sizes, [16, 16, 8]);
    let classes: Vec<i64> = outputs
        .iter()
        .flat_map(|o| {
            o.targets
                .clone()
                .into_data_as::<i64>()
                .try_to_vec::<i64>()
                .unwrap()
        })
        .collect();
    assert_eq!(
        classes,
        (0..40).map(|k| sample(k).class).collect::<Vec<_>>()
    );

    let dir = tempfile::tempdir().unwrap();
    let path = write_predictions(dir.path(), &outputs).unwrap();
    let csv = std::fs::read_to_string(path).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("index,predicted,target,p_0,p_1,p_2"));
    let logits: Vec<f32> = outputs
        .iter()
        .flat_map(|o| o.output.clone().into_data().try_to_vec::<f32>().unwrap())
        .collect();
    let mut rows = 0;
    for (k, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], k.to_string());
        assert_eq!(cells[2], sample(k).class.to_string());
        let p: Vec<f64> = cells[3..].iter().map(|c| c.parse().unwrap()).collect();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-5, "{line}");
        let row = &logits[k * 3..k * 3 + 3];
        let argmax = (0..3).fold(0, |b, c| if row[c] > row[b] { c } else { b });
        assert_eq!(cells[1], argmax.to_string(), "{line}");
        rows += 1;
    }
    assert_eq!(rows, 40);
}

#[test]
fn exported_weights_read_back_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    // Trained, so that its weights differ from a fresh model's.
    let trained = Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .with_options(|o| {
            o.write_files = false;
            o.quiet = true;
            o.batch_size = 16;
        })
        .run(
            &device(),
            Data::new(samples(0..32), samples(32..48), SampleBatcher),
        )
        .unwrap()
        .model;
    export_safetensors(&trained, &path).unwrap();
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "no temporary file left beside the export");
    let fresh = classifier();
    assert_ne!(fresh.mlp.weights(), trained.mlp.weights());
    let loaded = load_weights(fresh, &path).unwrap();
    assert_eq!(loaded.mlp.weights(), trained.mlp.weights());

    let other = Classifier { mlp: mlp(2) };
    let Err(err) = load_weights(other, &path) else {
        panic!("a model of another shape took the weights");
    };
    assert!(err.to_string().contains("model.safetensors"), "{err}");
}
