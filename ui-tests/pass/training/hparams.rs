//! The experiment's own hyperparameters, read as `config.<name>` by the model, the step, the
//! loader, a metric and a callback, and swept; a metric from a function of the step output.
use burn::train::ClassificationOutput;
use burn_experiment::metric::Mean;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};

/// Stops after epoch `at`.
struct StopAfter {
    at: usize,
}

impl Callback for StopAfter {
    fn epoch_end(&mut self, end: &EpochEnd<'_>) -> Control {
        if end.epoch >= self.at {
            Control::Stop(format!("epoch {} done", end.epoch))
        } else {
            Control::Continue
        }
    }
}

training! {
    name: Tuned,
    hparams: {
        /// Width of the hidden layer.
        hidden: usize = 16,
        /// Training items, from the first.
        train_items: usize = 32,
        /// A factor on the loss the step returns.
        loss_scale: f32 = 1.0,
        /// The epoch the callback stops after.
        stop_after: usize = 3,
        /// Added to each training item's first input.
        shift: f32 = 0.0,
        /// A label, swept as text.
        tag: String = String::from("plain"),
    },
    model: Mlp = Mlp::with_hidden(config.hidden, 3, device),
    step: |model, batch: Batch| -> ClassificationOutput {
        let mut output = model.forward_classification(batch);
        output.loss = output.loss * config.loss_scale;
        output
    },
    loader: {
        train: samples(0..config.train_items),
        valid: samples(32..48),
        augment: |mut sample, _rng| {
            sample.x[0] += config.shift;
            sample
        },
        batcher: SampleBatcher,
        batch_size: 16,
    },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [
        train.loss,
        valid.loss,
        valid.metric(scale = Mean::higher_is_better(|output: &ClassificationOutput| {
            (f64::from(config.loss_scale), output.targets.dims()[0])
        })),
    ],
    callbacks: [StopAfter { at: config.stop_after }],
    sweep: { hidden: [8, 32], tag: ["a", "b"] },
}

pub fn main() {
    let defaults = Tuned::config();
    assert_eq!((defaults.hidden, defaults.tag.as_str()), (16, "plain"));
    let trials = Tuned::sweep().trials();
    let keys: Vec<&str> = trials[0].iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!((trials.len(), keys), (4, vec!["hidden", "tag"]));

    let device = burn::tensor::Device::flex();
    let train = |config: TunedConfig| {
        Tuned::with_options(config, &device, |options| options.write_files = false).unwrap()
    };
    // One batch per epoch: the first epoch's loss is the step's loss before any update.
    let plain = train(TunedConfig {
        train_items: 16,
        ..Tuned::config()
    });
    let scaled = train(TunedConfig {
        train_items: 16,
        loss_scale: 2.0,
        stop_after: 1,
        ..Tuned::config()
    });
    let first = |report: &FitReport<TunedModel>| report.history.get(Split::Train, "loss").unwrap().values()[0];
    assert_eq!(first(&scaled), 2.0 * first(&plain), "the step read `loss_scale`");
    let shifted = train(TunedConfig {
        train_items: 16,
        shift: 100.0,
        ..Tuned::config()
    });
    assert_ne!(first(&shifted), first(&plain), "`augment` read `shift`");
    let scale = |report: &FitReport<TunedModel>| report.history.get(Split::Valid, "scale").unwrap().values();
    assert_eq!(scale(&scaled), [2.0], "the metric read it, and the callback stopped after epoch 1");
    assert_eq!(scale(&plain), [1.0, 1.0, 1.0]);
    // The model was built with the config's width, and keeps the config it was built with.
    let wide = train(TunedConfig {
        hidden: 32,
        stop_after: 1,
        ..Tuned::config()
    });
    assert_eq!(wide.model.config.hidden, 32);
    // 4 → 32 → 3: (4 + 1) * 32 + (32 + 1) * 3 parameters.
    assert_eq!(burn::module::Module::num_params(&wide.model.model), 259);
}
