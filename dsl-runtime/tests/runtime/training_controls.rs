//! Gradient clipping, early stopping, and a model's own optimizer step.

use crate::common::*;
use burn::optim::SgdConfig;
use burn_experiment::config::spec::{EarlyStopping, GradClip};
use burn_experiment::prelude::*;

fn one_step(clip: Option<GradClip>) -> Vec<f32> {
    let dir = tempfile::tempdir().unwrap();
    let report = Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .with_options(|o| {
            o.artifacts = dir.path().to_owned();
            o.batch_size = 96;
            o.grad_clip = clip;
            o.quiet = true;
        })
        .train_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap();
    report
        .model
        .mlp
        .weights()
        .into_iter()
        .map(f32::from_bits)
        .collect()
}

fn distance(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn norm_clipping_bounds_the_update_over_all_parameters_together() {
    let initial: Vec<f32> = mlp(3).weights().into_iter().map(f32::from_bits).collect();
    let free = one_step(None);
    let unclipped_step = distance(&free, &initial);
    // A bound above the gradient norm changes nothing, bit for bit.
    assert_eq!(one_step(Some(GradClip::Norm(1e9))), free);
    // A bound below it scales the whole update to lr * max_norm = 0.1 * 0.01.
    let clipped = one_step(Some(GradClip::Norm(0.01)));
    let step = distance(&clipped, &initial);
    assert!(unclipped_step > 2e-3, "{unclipped_step}");
    assert!((step - 1e-3).abs() < 1e-6, "update norm {step}");
    // Scaling keeps the direction: the clipped update is parallel to the free one.
    let ratio = step / unclipped_step;
    for ((c, f), i) in clipped.iter().zip(&free).zip(&initial) {
        let expected = f64::from(f - i) * ratio;
        assert!((f64::from(c - i) - expected).abs() < 1e-6);
    }
}

/// `param_norm(max)` is Burn's per-parameter clipping (`GradientClippingConfig::Norm` on the
/// optimizer), bit for bit, and not the global norm: on the same steps the two differ.
#[test]
fn param_norm_clipping_is_burns_per_parameter_clipping() {
    use burn::grad_clipping::GradientClippingConfig;
    let setup = HandSetup {
        train: 0..96,
        valid: 96..120,
        batch_size: 16,
        epochs: 2,
        shuffle: Some(3),
        grad_accumulation: 1,
        regression: false,
    };
    let clipped = || {
        SgdConfig::new()
            .with_gradient_clipping(Some(GradientClippingConfig::Norm(0.05)))
            .init()
    };
    let hand = hand_loop(&setup, mlp(3), clipped(), 0.1.into());
    let free = hand_loop(&setup, mlp(3), SgdConfig::new().init(), 0.1.into());
    assert_ne!(free.weights, hand.weights, "the bound clips");
    let fit = |clip: GradClip| {
        let dir = tempfile::tempdir().unwrap();
        Fit::new(classifier(), SgdConfig::new().init(), 0.1)
            .with_options(|o| {
                o.artifacts = dir.path().to_owned();
                o.epochs = setup.epochs;
                o.batch_size = setup.batch_size;
                o.shuffle = setup.shuffle;
                o.grad_clip = Some(clip);
                o.quiet = true;
            })
            .train_metric(metric::loss())
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
            .unwrap()
    };
    let report = fit(GradClip::ParamNorm(0.05));
    assert_bit_identical(&report.history.train_losses(), &hand.losses);
    assert_eq!(report.model.mlp.weights(), hand.weights);
    let global = fit(GradClip::Norm(0.05));
    assert_ne!(global.model.mlp.weights(), hand.weights, "another clipping");
}

#[test]
fn early_stopping_ends_the_run_after_patience_epochs_without_improvement() {
    let dir = tempfile::tempdir().unwrap();
    let fit = |min_delta: f64, metric: &str| {
        Fit::new(classifier(), SgdConfig::new().init(), 0.1)
            .with_options(|o| {
                o.artifacts = dir.path().to_owned();
                o.epochs = 10;
                o.batch_size = 16;
                o.quiet = true;
                o.early_stopping = Some(EarlyStopping {
                    split: Split::Valid,
                    metric: metric.to_owned(),
                    patience: 2,
                    min_delta,
                });
            })
            .valid_metric(metric::loss())
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
    };
    // The loss falls every epoch, but never by 10: epochs 2 and 3 are stale.
    let report = fit(10.0, "loss").unwrap();
    assert_eq!(report.last_epoch, 3);
    assert_eq!(
        report
            .history
            .get(Split::Valid, "loss")
            .unwrap()
            .epochs
            .len(),
        3
    );
    // Without a min delta it keeps improving and runs all 10 epochs.
    assert_eq!(fit(0.0, "loss").unwrap().last_epoch, 10);
    // Watching a metric that is not recorded is refused before training.
    let err = fit(0.0, "f1").err().unwrap();
    assert!(
        err.to_string()
            .contains("watches valid.f1, which is not recorded"),
        "{err}"
    );
}

/// A plateau schedule watching a metric that never improves after epoch 1 (the batch count):
/// the rate halves from epoch 3 on (patience 0), and a resume lowers it at the same epochs.
#[test]
fn a_plateau_schedule_lowers_the_rate_from_the_history_and_resumes_exactly() {
    use burn_experiment::checkpoint::{Policy, Resume};
    use burn_experiment::config::spec::Schedule;
    let schedule = Schedule::Plateau {
        split: Split::Valid,
        metric: "batches".into(),
        factor: 0.5,
        patience: 0,
    };
    let run = |dir: &std::path::Path, epochs: usize, resume: Option<Resume>| {
        Fit::new(
            classifier(),
            SgdConfig::new().init(),
            schedule.build(0.1, 24).unwrap(),
        )
        .with_options(|o| {
            o.artifacts = dir.to_owned();
            o.epochs = epochs;
            o.batch_size = 16;
            o.quiet = true;
            o.plateau = schedule.plateau();
            o.checkpoint = Some(vec![Policy::KeepLast { n: 1 }]);
            o.resume = resume;
        })
        .train_metric(metric::loss())
        .train_metric(metric::learning_rate())
        .valid_metric(metric::Tracked::new("batches", BatchCount::default()))
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .unwrap()
    };
    let (whole_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = run(whole_dir.path(), 4, None);
    // Each step's rate (the epoch value is their mean, with its rounding).
    let lr = whole.history.get(Split::Train, "lr").unwrap().steps.clone();
    let expected: Vec<f64> = [0.1, 0.1, 0.05, 0.025]
        .iter()
        .flat_map(|&rate| [rate; 6])
        .collect();
    assert_eq!(lr, expected);
    run(dir.path(), 2, None);
    let resumed = run(dir.path(), 4, Some(Resume::Latest));
    assert_eq!(resumed.history.get(Split::Train, "lr").unwrap().steps, lr);
    crate::common::assert_bit_identical(
        &resumed.history.train_losses(),
        &whole.history.train_losses(),
    );
}

/// Burn's balanced gradient checkpointing recomputes activations: the same gradients, so the
/// same losses and weights, bit for bit.
#[test]
fn gradient_checkpointing_changes_no_bit() {
    let run = |checkpointing: bool| {
        Fit::new(classifier(), SgdConfig::new().init(), 0.1)
            .with_options(|o| {
                o.write_files = false;
                o.quiet = true;
                o.batch_size = 16;
                o.epochs = 2;
                o.gradient_checkpointing = checkpointing;
            })
            .train_metric(metric::loss())
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
            .unwrap()
    };
    let (plain, checkpointed) = (run(false), run(true));
    crate::common::assert_bit_identical(
        &checkpointed.history.train_losses(),
        &plain.history.train_losses(),
    );
    assert_eq!(checkpointed.model.mlp.weights(), plain.model.mlp.weights());
}

/// The seed classifier with its own `TrainStep::optimize`, which counts the optimizer steps as
/// an override doing work around the step (clamping weights, ...) would run.
#[derive(burn::module::Module, Debug)]
struct Counted {
    mlp: Mlp,
}

static OPTIMIZE_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl burn::train::TrainStep for Counted {
    type Input = Batch;
    type Output = burn::train::ClassificationOutput;

    fn step(&self, batch: Batch) -> burn::train::TrainOutput<Self::Output> {
        let out = self.mlp.forward_classification(batch);
        burn::train::TrainOutput::new(self, out.loss.backward(), out)
    }

    fn optimize(
        self,
        optimizer: &mut burn::optim::ModuleOptimizer,
        lr: burn::lr_scheduler::module_lr_scheduler::ModuleLearningRate,
        grads: burn::optim::GradientsParams,
    ) -> Self {
        OPTIMIZE_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        optimizer.step(lr, self, grads)
    }
}

impl burn::train::InferenceStep for Counted {
    type Input = Batch;
    type Output = burn::train::ClassificationOutput;

    fn step(&self, batch: Batch) -> Self::Output {
        self.mlp.forward_classification(batch)
    }
}

#[test]
fn a_model_s_own_optimize_makes_each_optimizer_step() {
    let report = Fit::new(
        Counted {
            mlp: classifier().mlp,
        },
        SgdConfig::new().init(),
        0.1,
    )
    .with_options(|o| {
        o.epochs = 2;
        o.batch_size = 16;
        o.write_files = false;
        o.quiet = true;
    })
    .train_metric(metric::loss())
    .run(
        &device(),
        Data::new(samples(0..96), samples(96..120), SampleBatcher),
    )
    .unwrap();
    assert_eq!(report.last_epoch, 2);
    assert_eq!(
        OPTIMIZE_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        12,
        "two epochs of six batches"
    );
}

/// Optimizer steps the counting hook saw.
static HOOKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `after_step` runs once per optimizer step (not per batch), on the stepped model, and what it
/// returns is what trains on: a hook that clamps the weights leaves every weight in its bound.
#[test]
fn a_hook_after_each_optimizer_step_sees_and_changes_the_model() {
    use burn::module::{Module, ModuleMapper, Param};
    use burn::tensor::Tensor;
    use std::sync::atomic::Ordering;
    struct Clamp;
    impl ModuleMapper for Clamp {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            param.map(|tensor| tensor.clamp(-0.05, 0.05))
        }
    }
    let fit = |hook: Option<fn(Classifier) -> Classifier>| {
        let dir = tempfile::tempdir().unwrap();
        let fit = Fit::new(classifier(), SgdConfig::new().init(), 0.1).with_options(|o| {
            o.artifacts = dir.path().to_owned();
            o.epochs = 3;
            o.batch_size = 16;
            o.grad_accumulation = Some(2);
            o.quiet = true;
        });
        let fit = match hook {
            Some(hook) => fit.after_step(hook),
            None => fit,
        };
        fit.train_metric(metric::loss())
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
            .unwrap()
    };
    let plain = fit(None);
    let counted = fit(Some(|model| {
        HOOKED.fetch_add(1, Ordering::SeqCst);
        model
    }));
    // 6 batches an epoch, 2 per optimizer step, 3 epochs.
    assert_eq!(HOOKED.load(Ordering::SeqCst), 9);
    assert_eq!(counted.model.mlp.weights(), plain.model.mlp.weights());
    // Clamped with tensor operations on the tracked weights, not re-rooted by hand as Burn's
    // wgan `Clip` does: the runtime makes them leaves again.
    let clamped = fit(Some(|model| Classifier {
        mlp: model.mlp.map(&mut Clamp),
    }));
    let weights = clamped.model.mlp.weights();
    assert!(weights.iter().all(|&w| f32::from_bits(w).abs() <= 0.05));
    assert_ne!(weights, plain.model.mlp.weights());
    // The clamped model is what trained on: its losses differ from the first step after one.
    let (a, b) = (clamped.history.train_losses(), plain.history.train_losses());
    assert_eq!(
        a[..2],
        b[..2],
        "the first optimizer step comes after two batches"
    );
    assert_ne!(a[2..], b[2..]);
}

#[test]
fn a_hook_named_after_an_optimizer_needs_several() {
    let dir = tempfile::tempdir().unwrap();
    let err = Fit::new(classifier(), SgdConfig::new().init(), 0.1)
        .with_options(|o| {
            o.artifacts = dir.path().to_owned();
            o.quiet = true;
        })
        .after_step_of("critic", |model| model)
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("after_step") && err.contains("one optimizer"),
        "{err}"
    );
}

/// `at_epoch_end` sees the model after each epoch's validation, in the run's folder; an error
/// it returns stops the run before that epoch's checkpoint, naming the epoch.
#[test]
fn a_hook_at_each_epoch_end_writes_into_the_run_and_its_error_stops_the_run() {
    let fit = |dir: &std::path::Path,
               hook: burn_experiment::fit::model_hooks::AtEpochEnd<Classifier>| {
        Fit::new(classifier(), SgdConfig::new().init(), 0.1)
            .with_options(|o| {
                o.artifacts = dir.to_owned();
                o.epochs = 3;
                o.batch_size = 16;
                o.checkpoint = Some(vec![]);
                o.quiet = true;
            })
            .at_epoch_end(hook)
            .train_metric(metric::loss())
            .run(
                &device(),
                Data::new(samples(0..96), samples(96..120), SampleBatcher),
            )
    };
    let dir = tempfile::tempdir().unwrap();
    let report = fit(dir.path(), |model, at| {
        let bits: Vec<String> = model.mlp.weights().iter().map(u32::to_string).collect();
        std::fs::write(
            at.run_dir.join(format!("weights-{}.txt", at.epoch)),
            bits.join(","),
        )
        .map_err(|e| e.to_string())
    })
    .unwrap();
    let last: Vec<String> = report
        .model
        .mlp
        .weights()
        .iter()
        .map(u32::to_string)
        .collect();
    let written = std::fs::read_to_string(report.run_dir.join("weights-3.txt")).unwrap();
    assert_eq!(written, last.join(","), "the model at the end of epoch 3");
    assert!(report.run_dir.join("weights-1.txt").exists());

    let dir = tempfile::tempdir().unwrap();
    let err = fit(dir.path(), |_, at| match at.epoch {
        2 => Err("the disk is full".to_owned()),
        _ => Ok(()),
    })
    .err()
    .unwrap()
    .to_string();
    assert_eq!(
        err,
        "the `at_epoch_end` hook failed at epoch 2: the disk is full"
    );
    let checkpoints = dir.path().join("run/run-1/checkpoint");
    assert!(checkpoints.join("model-1.bpk").exists());
    assert!(
        !checkpoints.join("model-2.bpk").exists(),
        "stopped before the checkpoint"
    );
}
