//! Checkpoints on disk: resuming bit for bit, damaged and mismatched files, a diverging run.

use std::path::Path;

use crate::common::*;
use burn::lr_scheduler::step::StepLrSchedulerConfig;
use burn::optim::{AdamConfig, SgdConfig};
use burn_experiment::checkpoint::{CheckpointDir, Policy, Resume};
use burn_experiment::output::tensorboard::{EVENTS_FILE, read_scalars};
use burn_experiment::prelude::*;

fn options(dir: &Path, epochs: usize, resume: Option<Resume>) -> FitOptions {
    FitOptions {
        name: "ckpt".into(),
        artifacts: dir.to_owned(),
        epochs,
        batch_size: 16,
        shuffle: Some(7),
        quiet: true,
        checkpoint: Some(vec![
            Policy::KeepLast { n: 2 },
            Policy::Best {
                split: Split::Valid,
                metric: "loss".into(),
            },
        ]),
        resume,
        ..FitOptions::default()
    }
}

fn run(
    dir: &Path,
    outputs: usize,
    epochs: usize,
    resume: Option<Resume>,
) -> Result<FitReport<Classifier>, FitError> {
    run_counting(dir, outputs, epochs, resume, CountingBatcher::default())
}

/// Batches per epoch: 96 training samples and 24 validation samples in batches of 16.
const TRAIN_BATCHES: usize = 6;
const VALID_BATCHES: usize = 2;

/// [`run`] with a batcher that counts what this call built.
fn run_counting(
    dir: &Path,
    outputs: usize,
    epochs: usize,
    resume: Option<Resume>,
    batcher: CountingBatcher,
) -> Result<FitReport<Classifier>, FitError> {
    Fit::new(
        Classifier { mlp: mlp(outputs) },
        AdamConfig::new().init(),
        1e-2,
    )
    .options(options(dir, epochs, resume))
    .train_metric(metric::loss())
    .valid_metric(metric::loss())
    .valid_metric(metric::accuracy())
    .run(
        &device(),
        Data::new(samples(0..96), samples(96..120), batcher),
    )
}

fn csv(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("ckpt/run-1/metrics.csv")).unwrap()
}

#[test]
fn a_run_resumed_after_epoch_3_equals_an_uninterrupted_run_bit_for_bit() {
    let whole = tempfile::tempdir().unwrap();
    let reference = run(whole.path(), 3, 5, None).unwrap();

    let parts = tempfile::tempdir().unwrap();
    run(parts.path(), 3, 3, None).unwrap();
    let counting = CountingBatcher::default();
    let resumed = run_counting(parts.path(), 3, 5, Some(Resume::Latest), counting.clone()).unwrap();
    // It continued after epoch 3: only epochs 4 and 5 were trained and validated.
    assert_eq!(counting.count(), 2 * (TRAIN_BATCHES + VALID_BATCHES));

    assert_eq!(resumed.model.mlp.weights(), reference.model.mlp.weights());
    assert_bit_identical(
        &resumed.history.train_losses(),
        &reference.history.train_losses(),
    );
    for (a, b) in resumed
        .history
        .series()
        .iter()
        .zip(reference.history.series())
    {
        assert_eq!(a.epochs, b.epochs, "{}.{}", a.split, a.metric);
    }
    assert_eq!(csv(parts.path()), csv(whole.path()));
    // The TensorBoard file, rewritten at the resume, holds each value once, as in one run.
    let events = |dir: &Path| {
        let mut scalars = read_scalars(&dir.join("ckpt/run-1").join(EVENTS_FILE)).unwrap();
        scalars.sort_by(|a, b| (&a.tag, a.step).cmp(&(&b.tag, b.step)));
        scalars
    };
    assert_eq!(events(parts.path()), events(whole.path()));
    assert!(events(whole.path()).len() > 5 * TRAIN_BATCHES);
    // keep_last(2) | best(valid.loss) with a falling loss: epochs 4 and 5 remain.
    let kept = CheckpointDir::new(&parts.path().join("ckpt/run-1"))
        .epochs()
        .unwrap();
    assert_eq!(kept, [4, 5]);
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_previous_epoch() {
    let whole = tempfile::tempdir().unwrap();
    let reference = run(whole.path(), 3, 4, None).unwrap();

    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, 3, None).unwrap();
    let model_3 = dir.path().join("ckpt/run-1/checkpoint/model-3.bpk");
    let bytes = std::fs::read(&model_3).unwrap();
    std::fs::write(&model_3, &bytes[..bytes.len() / 2]).unwrap();

    // Asked for explicitly, the damaged epoch is an error naming the file.
    let err = run(dir.path(), 3, 4, Some(Resume::Epoch(3))).err().unwrap();
    let text = err.to_string();
    assert!(text.contains("model-3.bpk is damaged"), "{text}");
    // `latest` skips it and resumes after epoch 2 (epochs 3 and 4 are trained), reaching the
    // same result.
    let counting = CountingBatcher::default();
    let resumed = run_counting(dir.path(), 3, 4, Some(Resume::Latest), counting.clone()).unwrap();
    assert_eq!(counting.count(), 2 * (TRAIN_BATCHES + VALID_BATCHES));
    assert_eq!(resumed.model.mlp.weights(), reference.model.mlp.weights());
    assert_eq!(csv(dir.path()), csv(whole.path()));
}

#[test]
fn a_damaged_state_file_is_reported_and_latest_falls_back_past_it() {
    let whole = tempfile::tempdir().unwrap();
    let reference = run(whole.path(), 3, 3, None).unwrap();
    for damage in ["flip", "truncate"] {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), 3, 2, None).unwrap();
        let state_2 = dir.path().join("ckpt/run-1/checkpoint/state-2.json");
        let mut bytes = std::fs::read(&state_2).unwrap();
        match damage {
            // A digit of the epoch's history: still valid JSON, so only the hash can tell.
            "flip" => {
                let at = bytes.iter().rposition(u8::is_ascii_digit).unwrap();
                bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
            }
            _ => bytes.truncate(bytes.len() / 2),
        }
        std::fs::write(&state_2, bytes).unwrap();
        let err = run(dir.path(), 3, 3, Some(Resume::Epoch(2))).err().unwrap();
        assert!(
            err.to_string().contains("state-2.json is damaged"),
            "{damage}: {err}"
        );
        // `latest` resumes after epoch 1 (epochs 2 and 3 are trained) and reaches the
        // uninterrupted result.
        let counting = CountingBatcher::default();
        let resumed =
            run_counting(dir.path(), 3, 3, Some(Resume::Latest), counting.clone()).unwrap();
        assert_eq!(
            counting.count(),
            2 * (TRAIN_BATCHES + VALID_BATCHES),
            "{damage}"
        );
        assert_eq!(
            resumed.model.mlp.weights(),
            reference.model.mlp.weights(),
            "{damage}"
        );
        assert_eq!(csv(dir.path()), csv(whole.path()), "{damage}");
    }
}

#[test]
fn a_flipped_byte_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, 2, None).unwrap();
    let optim_2 = dir.path().join("ckpt/run-1/checkpoint/optim-2.bpk");
    let mut bytes = std::fs::read(&optim_2).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&optim_2, bytes).unwrap();
    let err = run(dir.path(), 3, 3, Some(Resume::Epoch(2))).err().unwrap();
    assert!(err.to_string().contains("optim-2.bpk is damaged"), "{err}");
}

#[test]
fn a_checkpoint_of_another_model_shape_names_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, 1, None).unwrap();
    let err = run(dir.path(), 4, 2, Some(Resume::Latest)).err().unwrap();
    let text = err.to_string();
    assert!(text.contains("does not fit this model"), "{text}");
    assert!(text.contains("fc2"), "{text}");
}

#[test]
fn a_missing_epoch_lists_the_available_ones() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, 2, None).unwrap();
    let err = run(dir.path(), 3, 3, Some(Resume::Epoch(9))).err().unwrap();
    assert!(
        err.to_string().contains("no checkpoint for epoch 9") && err.to_string().contains("[1, 2]"),
        "{err}"
    );
}

/// A run whose rate grows a million-fold every 6 steps (one epoch): the loss blows up after a
/// while. `with_train_loss` records `train.loss` (read every step) or only validation metrics.
fn diverging_run(dir: &Path, with_train_loss: bool) -> FitError {
    let schedule = StepLrSchedulerConfig::new(0.1, 6)
        .with_gamma(1e6)
        .init()
        .unwrap();
    let fit = Fit::new(classifier(), SgdConfig::new().init(), schedule).options(FitOptions {
        shuffle: None,
        ..options(dir, 10, None)
    });
    let fit = if with_train_loss {
        fit.train_metric(metric::loss())
    } else {
        fit.valid_metric(metric::accuracy())
    };
    fit.valid_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .err()
        .expect("diverges")
}

#[test]
fn a_diverging_run_stops_with_its_last_good_checkpoint_intact() {
    let dir = tempfile::tempdir().unwrap();
    let err = diverging_run(dir.path(), true);
    let FitError::NonFiniteLoss { epoch, .. } = err else {
        panic!("{err}");
    };
    assert!(epoch >= 2, "diverged in epoch {epoch}");
    let checkpoints = CheckpointDir::new(&dir.path().join("ckpt/run-1"));
    let newest = *checkpoints.epochs().unwrap().last().unwrap();
    assert_eq!(newest, epoch - 1);
    checkpoints
        .load(newest)
        .expect("the last good checkpoint loads");
}

#[test]
fn a_diverging_run_that_records_no_training_loss_stops_at_the_end_of_the_epoch() {
    let dir = tempfile::tempdir().unwrap();
    // Only validation metrics: no per-step loss is read, so the check at the end of each epoch
    // is what stops the run.
    let err = diverging_run(dir.path(), false);
    let FitError::NonFiniteWeights { epoch, count } = err else {
        panic!("{err}");
    };
    assert!(epoch >= 2 && count > 0, "epoch {epoch}, {count} weights");
    let checkpoints = CheckpointDir::new(&dir.path().join("ckpt/run-1"));
    let newest = *checkpoints.epochs().unwrap().last().unwrap();
    assert_eq!(newest, epoch - 1, "the diverged epoch was checkpointed");
    let loaded = checkpoints
        .load(newest)
        .expect("the last good checkpoint loads");
    // Whatever the validation loss reached on the way (it may be infinite), the state file
    // holding it reads back.
    assert_eq!(
        loaded
            .state
            .history
            .get(Split::Valid, "loss")
            .unwrap()
            .epochs
            .len(),
        newest
    );
}

#[test]
fn early_stopping_patience_counts_across_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let fit = |epochs: usize, resume: Option<Resume>| {
        Fit::new(classifier(), AdamConfig::new().init(), 1e-2)
            .options(FitOptions {
                early_stopping: Some(burn_experiment::config::spec::EarlyStopping {
                    split: Split::Valid,
                    metric: "loss".into(),
                    patience: 2,
                    // The loss falls every epoch, but never by this much: epochs 2, 3 are stale.
                    min_delta: 10.0,
                }),
                ..options(dir.path(), epochs, resume)
            })
            .valid_metric(metric::loss())
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
            .unwrap()
    };
    assert_eq!(fit(2, None).last_epoch, 2);
    // Epochs 1 and 2 are replayed from the checkpoint's history: one stale epoch so far, so
    // the run stops after epoch 3, as an uninterrupted one does.
    let resumed = fit(10, Some(Resume::Latest));
    assert_eq!(resumed.last_epoch, 3);
    assert_eq!(
        resumed
            .history
            .get(Split::Valid, "loss")
            .unwrap()
            .epochs
            .len(),
        3
    );
}

#[test]
fn every_kept_checkpoint_damaged_stops_instead_of_training_again_over_the_run() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, 3, None).unwrap();
    let before = csv(dir.path());
    let folder = dir.path().join("ckpt/run-1/checkpoint");
    assert_eq!(
        CheckpointDir::new(&folder.join("..")).epochs().unwrap(),
        [2, 3]
    );
    for file in ["model-2.bpk", "state-3.json"] {
        let bytes = std::fs::read(folder.join(file)).unwrap();
        std::fs::write(folder.join(file), &bytes[..bytes.len() / 2]).unwrap();
    }
    let counting = CountingBatcher::default();
    let err = run_counting(dir.path(), 3, 4, Some(Resume::Latest), counting.clone())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no readable checkpoint in"), "{err}");
    assert!(
        err.contains("model-2.bpk (") && err.contains("state-3.json ("),
        "{err}"
    );
    assert!(
        err.contains("start a fresh run (without --resume)"),
        "{err}"
    );
    // Nothing was trained and the run's records are as they were.
    assert_eq!(counting.count(), 0);
    assert_eq!(csv(dir.path()), before);
}

/// `options` with other checkpoint policies.
fn run_keeping(dir: &Path, epochs: usize, resume: Option<Resume>, policies: Vec<Policy>) {
    Fit::new(Classifier { mlp: mlp(3) }, AdamConfig::new().init(), 1e-2)
        .options(FitOptions {
            checkpoint: Some(policies),
            ..options(dir, epochs, resume)
        })
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .valid_metric(metric::accuracy())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), CountingBatcher::default()),
        )
        .unwrap();
}

#[test]
fn a_resume_deletes_what_the_policy_no_longer_keeps_even_with_nothing_left_to_train() {
    // Epochs a killed run left before its deletions were carried out (every epoch kept).
    let dir = tempfile::tempdir().unwrap();
    let epochs = || {
        CheckpointDir::new(&dir.path().join("ckpt/run-1"))
            .epochs()
            .unwrap()
    };
    run_keeping(dir.path(), 4, None, vec![Policy::Every { k: 1 }]);
    assert_eq!(epochs(), [1, 2, 3, 4]);
    // The last epoch is complete: nothing to train, and the folder holds what keep_last(2) says.
    let keep_last_2 = vec![Policy::KeepLast { n: 2 }];
    run_keeping(dir.path(), 4, Some(Resume::Latest), keep_last_2.clone());
    assert_eq!(epochs(), [3, 4]);
    let files = std::fs::read_dir(dir.path().join("ckpt/run-1/checkpoint"))
        .unwrap()
        .count();
    assert_eq!(files, 2 * 4, "four files per kept epoch, nothing else");
    // A longer resume keeps applying it.
    run_keeping(dir.path(), 6, Some(Resume::Latest), keep_last_2);
    assert_eq!(epochs(), [5, 6]);
}

/// A checkpoint written while training went on holds the state of its own epoch. On wgpu the
/// optimizer's record once held the Adam moments of the next epoch (its bytes were read on the
/// writer thread from a staging buffer the device had reused), so a resume from any epoch but
/// the last diverged; `.ci/run` runs this on wgpu.
#[test]
fn a_checkpoint_written_mid_run_resumes_like_the_uninterrupted_run() {
    let whole = tempfile::tempdir().unwrap();
    let reference = run(whole.path(), 3, 3, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, 3, None).unwrap();
    let counting = CountingBatcher::default();
    let resumed = run_counting(dir.path(), 3, 3, Some(Resume::Epoch(2)), counting.clone()).unwrap();
    assert_eq!(
        counting.count(),
        TRAIN_BATCHES + VALID_BATCHES,
        "epoch 3 alone"
    );
    assert_eq!(resumed.model.mlp.weights(), reference.model.mlp.weights());
}
