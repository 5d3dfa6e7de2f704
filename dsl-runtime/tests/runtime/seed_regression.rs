//! `Fit` against a hand-written Burn loop on the seed regression task: 200 train / 64 valid
//! samples, batch 32 (six batches of 32 and one of 8), MLP 4→16→1, Adam 1e-2, 3 epochs.

use crate::common::*;
use burn::optim::AdamConfig;
use burn_experiment::prelude::*;

#[test]
fn adam_regression_is_bit_identical_and_its_epoch_loss_is_sample_weighted() {
    let setup = HandSetup {
        train: 0..200,
        valid: 200..264,
        batch_size: 32,
        epochs: 3,
        shuffle: None,
        grad_accumulation: 1,
        regression: true,
    };
    let hand = hand_loop(&setup, mlp(1), AdamConfig::new().init(), 1e-2.into());
    let dir = tempfile::tempdir().unwrap();
    let report = Fit::new(Regressor { mlp: mlp(1) }, AdamConfig::new().init(), 1e-2)
        .with_options(|o| {
            o.artifacts = dir.path().to_owned();
            o.epochs = 3;
            o.batch_size = 32;
            o.quiet = true;
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..200), samples(200..264), SampleBatcher),
        )
        .unwrap();

    let losses = report.history.train_losses();
    assert_eq!(losses.len(), 21);
    assert_bit_identical(&losses, &hand.losses);
    assert_eq!(report.model.mlp.weights(), hand.weights);

    // Epoch loss = sum(loss_b * n_b) / sum(n_b) over the batches 32 x 6 + 8.
    let sizes = [32.0, 32.0, 32.0, 32.0, 32.0, 32.0, 8.0];
    let by_hand: Vec<f64> = hand
        .losses
        .chunks(7)
        .map(|epoch| {
            let sum: f64 = epoch
                .iter()
                .zip(sizes)
                .map(|(l, n)| f64::from(*l) * n)
                .sum();
            sum / 200.0
        })
        .collect();
    let train = report.history.get(Split::Train, "loss").unwrap().values();
    assert_eq!(train, by_hand);
    // Burn's LossMetric would give the plain mean of the 7 batch losses: a different figure.
    let batch_mean: f64 = hand.losses[..7].iter().map(|l| f64::from(*l)).sum::<f64>() / 7.0;
    assert_ne!(train[0], batch_mean);
    assert_eq!(
        report.history.get(Split::Valid, "loss").unwrap().values(),
        hand.valid_loss
    );
}
