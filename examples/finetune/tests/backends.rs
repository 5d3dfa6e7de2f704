//! A run trained on one backend, used on another: export, predictions, the test split and
//! `init_from` read its files there. The other backend is the one `DSL_TEST_DEVICE` names
//! (`.ci/run` sets `wgpu`, on lavapipe, and `ndarray`); unset, both sides are `flex`.

use std::path::Path;

use burn::tensor::Device;
use burn_experiment::prelude::*;
use finetune::{FineTune, FineTuneConfig, Pretrain, PretrainConfig};

fn test_device() -> Device {
    let name = std::env::var("DSL_TEST_DEVICE").unwrap_or_else(|_| "flex".to_owned());
    burn_experiment::config::device::parse(&name)
        .unwrap_or_else(|e| panic!("DSL_TEST_DEVICE={name}: {e}"))
}

fn quiet(options: &mut FitOptions) {
    options.quiet = true;
}

/// The cells of two `predictions.csv` files: the same rows and columns, every number within
/// the cross-backend tolerance of the backends page (`CROSS_BACKEND` of the runtime's tests).
fn assert_close_csv(a: &Path, b: &Path) {
    let (a, b) = (
        std::fs::read_to_string(a).unwrap(),
        std::fs::read_to_string(b).unwrap(),
    );
    assert_eq!(a.lines().count(), b.lines().count());
    assert_eq!(a.lines().next(), b.lines().next(), "the same columns");
    for (row_a, row_b) in a.lines().zip(b.lines()).skip(1) {
        for (x, y) in row_a.split(',').zip(row_b.split(',')) {
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => {
                    assert!((x - y).abs() <= 1e-6 * x.abs().max(1.0), "{row_a}\n{row_b}")
                }
                _ => assert_eq!(x, y),
            }
        }
    }
}

#[test]
fn a_checkpoint_written_on_one_backend_serves_the_other() {
    let other = test_device();
    for (trained_on, used_on) in [(Device::flex(), other.clone()), (other, Device::flex())] {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().to_string_lossy().into_owned();
        let pretrain = PretrainConfig {
            artifacts: artifacts.clone(),
            epochs: 3,
            ..Pretrain::config()
        };
        Pretrain::with_options(pretrain.clone(), &trained_on, quiet).unwrap();

        // Export: moving the weights changes no bit, so both files are the same bytes.
        let (here, there) = (
            dir.path().join("here.safetensors"),
            dir.path().join("there.safetensors"),
        );
        Pretrain::export_saved(&pretrain, &here, &trained_on).unwrap();
        Pretrain::export_saved(&pretrain, &there, &used_on).unwrap();
        assert!(
            std::fs::read(&here).unwrap() == std::fs::read(&there).unwrap(),
            "exports on {trained_on:?} and {used_on:?} differ"
        );

        // Predictions: the same rows, within the tolerance of the two backends' arithmetic.
        let path = Pretrain::predict_saved(&pretrain, &trained_on).unwrap();
        let kept = dir.path().join("predictions-here.csv");
        std::fs::rename(&path, &kept).unwrap();
        let path = Pretrain::predict_saved(&pretrain, &used_on).unwrap();
        assert_close_csv(&kept, &path);

        // init_from the export on the other backend, then its test split measured back on the
        // first: the same accuracy.
        let tune = FineTuneConfig {
            artifacts,
            init_from: Some(here.to_string_lossy().into_owned()),
            epochs: 2,
            ..FineTune::config()
        };
        let tuned = FineTune::with_options(tune.clone(), &used_on, quiet).unwrap();
        let measured = tuned.test.expect("the test split is measured");
        let again = FineTune::test_saved(&tune, &trained_on).unwrap();
        assert!(measured.get("accuracy").is_some());
        assert_eq!(measured.get("accuracy"), again.get("accuracy"));
    }
}
