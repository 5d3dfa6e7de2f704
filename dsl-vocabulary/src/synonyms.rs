//! The words users bring from other trainers (PyTorch Lightning, Keras, Hugging Face's
//! `Trainer`, PyTorch), with ours: an unknown word that is one of them is answered with what we
//! call it and how to write it, in `training!` and on the command line (`--set`, `--config`,
//! `--sweep`) alike, rather than with the list of every key.

/// A word of another trainer and ours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Synonym {
    /// Their word (`num_workers`).
    pub theirs: &'static str,
    /// Whose word it is (`PyTorch`).
    pub from: &'static str,
    /// Ours (`workers`; `beta_1, beta_2` where one of theirs is two of ours), or `None` where
    /// we have no such setting.
    pub ours: Option<&'static str>,
    /// How to write ours, or why there is none.
    pub write: &'static str,
}

impl Synonym {
    /// The help line: their word, ours, and how to write it.
    pub fn help(&self) -> String {
        let named: Vec<String> = self.words().map(|w| format!("`{w}`")).collect();
        match &named[..] {
            [] => format!("`{}` is {}'s word; {}", self.theirs, self.from, self.write),
            [one] => format!(
                "`{}` is {}'s word; ours is {one}: {}",
                self.theirs, self.from, self.write
            ),
            [init @ .., last] => format!(
                "`{}` is {}'s word; ours are {} and {last}: {}",
                self.theirs,
                self.from,
                init.join(", "),
                self.write
            ),
        }
    }

    /// Each of our words (one, or two for `betas`); none where we have no such setting.
    pub fn words(&self) -> impl Iterator<Item = &'static str> {
        self.ours.into_iter().flat_map(|ours| ours.split(", "))
    }
}

const fn word(
    theirs: &'static str,
    from: &'static str,
    ours: &'static str,
    write: &'static str,
) -> Synonym {
    Synonym {
        theirs,
        from,
        ours: Some(ours),
        write,
    }
}

const LIGHTNING: &str = "Lightning";
const HUGGING_FACE: &str = "Hugging Face";
const KERAS: &str = "Keras";
const PYTORCH: &str = "PyTorch";

/// Keys of `training!` and of the config.
pub const KEYS: &[Synonym] = &[
    word(
        "num_workers",
        PYTORCH,
        "workers",
        "`loader: { .., workers: 4 }`, or `--workers 4`",
    ),
    word(
        "max_epochs",
        LIGHTNING,
        "epochs",
        "`epochs: 20`, or `--epochs 20`",
    ),
    word(
        "num_train_epochs",
        HUGGING_FACE,
        "epochs",
        "`epochs: 20`, or `--epochs 20`",
    ),
    word(
        "n_epochs",
        "scikit-learn",
        "epochs",
        "`epochs: 20`, or `--epochs 20`",
    ),
    word(
        "accumulate_grad_batches",
        LIGHTNING,
        "grad_accumulation",
        "`grad_accumulation: 4`",
    ),
    word(
        "gradient_accumulation_steps",
        HUGGING_FACE,
        "grad_accumulation",
        "`grad_accumulation: 4`",
    ),
    word(
        "fp16",
        HUGGING_FACE,
        "precision",
        "`precision: f16`, or `--precision f16`",
    ),
    word(
        "bf16",
        HUGGING_FACE,
        "precision",
        "`precision: bf16`, or `--precision bf16`",
    ),
    word(
        "mixed_precision",
        HUGGING_FACE,
        "precision",
        "`precision: bf16` (or `f16`), or `--precision bf16`",
    ),
    word(
        "learning_rate",
        KERAS,
        "lr",
        "the optimizer's argument, `optimizer: adam(lr = 1e-3)`, or `--lr 1e-3` (a sweep: `lr: [1e-3, 1e-2]`)",
    ),
    word(
        "gradient_clip_val",
        LIGHTNING,
        "grad_clip",
        "`grad_clip: norm(1.0)` (or `value(0.5)`)",
    ),
    word(
        "max_grad_norm",
        HUGGING_FACE,
        "grad_clip",
        "`grad_clip: norm(1.0)`",
    ),
    word(
        "output_dir",
        HUGGING_FACE,
        "artifacts",
        "`artifacts: \"runs\"`, or `--artifacts runs`",
    ),
    word(
        "default_root_dir",
        LIGHTNING,
        "artifacts",
        "`artifacts: \"runs\"`, or `--artifacts runs`",
    ),
    word(
        "save_top_k",
        LIGHTNING,
        "checkpoint",
        "`checkpoint: keep_last(3) | best(valid.loss)`",
    ),
    word(
        "save_total_limit",
        HUGGING_FACE,
        "checkpoint",
        "`checkpoint: keep_last(3)`",
    ),
    word(
        "every_n_epochs",
        LIGHTNING,
        "checkpoint",
        "`checkpoint: every(5)`",
    ),
    word(
        "monitor",
        LIGHTNING,
        "checkpoint",
        "the watched metric is named where it is used: `checkpoint: best(valid.loss)`, `early_stopping: patience(5, valid.loss)`",
    ),
    word(
        "mode",
        LIGHTNING,
        "checkpoint",
        "each metric knows its direction: `best(valid.accuracy)` keeps the highest accuracy, `best(valid.loss)` the lowest loss",
    ),
    word(
        "lr_scheduler",
        HUGGING_FACE,
        "lr_schedule",
        "`lr_schedule: cosine(min = 1e-5)`",
    ),
    word(
        "scheduler",
        PYTORCH,
        "lr_schedule",
        "`lr_schedule: cosine(min = 1e-5)`",
    ),
    word(
        "resume_from_checkpoint",
        HUGGING_FACE,
        "resume",
        "`resume: latest`, or `--resume latest`",
    ),
    word(
        "ckpt_path",
        LIGHTNING,
        "resume",
        "`resume: latest`, or `--resume latest` (`--resume 3` for epoch 3)",
    ),
    word(
        "per_device_train_batch_size",
        HUGGING_FACE,
        "batch_size",
        "`loader: { .., batch_size: 32 }`, or `--batch-size 32`",
    ),
    word(
        "early_stopping_patience",
        HUGGING_FACE,
        "early_stopping",
        "`early_stopping: patience(5, valid.loss)`",
    ),
    word(
        "patience",
        KERAS,
        "early_stopping",
        "`early_stopping: patience(5, valid.loss)`",
    ),
    word(
        "accelerator",
        LIGHTNING,
        "device",
        "`device: \"cuda\"`, or `--device wgpu`",
    ),
    word(
        "gpus",
        LIGHTNING,
        "device",
        "`device: \"cuda:0\"`, or `--device cuda`",
    ),
    word("manual_seed", PYTORCH, "seed", "`seed: 42`, or `--seed 42`"),
    word(
        "deterministic",
        LIGHTNING,
        "seed",
        "every run is deterministic given its seed: `seed: 42`, or `--seed 42`",
    ),
    word(
        "warmup_steps",
        HUGGING_FACE,
        "lr_schedule",
        "a warm-up wraps the schedule: `lr_schedule: warm_up(steps = 100, then = cosine(min = 0.0))`",
    ),
    word(
        "warmup_ratio",
        HUGGING_FACE,
        "lr_schedule",
        "a warm-up is counted in steps: `lr_schedule: warm_up(steps = 100, then = linear(final = 0.0))`",
    ),
    word(
        "lr_scheduler_type",
        HUGGING_FACE,
        "lr_schedule",
        "`lr_schedule: linear(final = 0.0)` (or `cosine(min = 0.0)`, `constant`)",
    ),
    word(
        "num_nodes",
        LIGHTNING,
        "data_parallel",
        "processes, on one node or several, are MPI's: `data_parallel: mpi`, then `mpirun -n 8 ./train`",
    ),
    word(
        "gradient_clip_algorithm",
        LIGHTNING,
        "grad_clip",
        "the algorithm is the rule's name: `grad_clip: norm(1.0)` or `grad_clip: value(0.5)`",
    ),
    word(
        "loss_scale",
        KERAS,
        "precision",
        "f16's loss scale is dynamic and automatic (from 2^15, halved on overflow): `precision: f16`",
    ),
    word(
        "metric_for_best_model",
        HUGGING_FACE,
        "checkpoint",
        "`checkpoint: best(valid.accuracy)`",
    ),
    word(
        "load_best_model_at_end",
        HUGGING_FACE,
        "checkpoint",
        "keep the best epoch with `checkpoint: best(valid.loss)`, then `--evaluate best` or `--resume best`",
    ),
    word(
        "dataloader_num_workers",
        HUGGING_FACE,
        "workers",
        "`loader: { .., workers: 4 }`, or `--workers 4`",
    ),
    word(
        "weight_decay",
        HUGGING_FACE,
        "optimizer",
        "the optimizer's argument: `optimizer: adamw(lr = 1e-3, weight_decay = 0.01)`",
    ),
    Synonym {
        theirs: "timeout",
        from: "Optuna",
        ours: None,
        write: "a study is bounded by its trials, not by time: `search: { .., trials: 30 }` (a killed study resumes where it stopped)",
    },
    Synonym {
        theirs: "max_steps",
        from: LIGHTNING,
        ours: None,
        write: "a run is counted in epochs: `epochs: 20`, or `--limit-train-batches N` to cut each epoch short",
    },
    Synonym {
        theirs: "fast_dev_run",
        from: LIGHTNING,
        ours: None,
        write: "it is a flag of the command line: `--fast-dev-run`",
    },
];

/// Keys of `search: { .. }`, as Optuna and Ray Tune write them.
pub const SEARCH: &[Synonym] = &[
    word(
        "direction",
        "Optuna",
        "objective",
        "the direction goes with the metric: `objective: max(valid.accuracy)` or `objective: min(valid.loss)`",
    ),
    word(
        "metric",
        "Ray Tune",
        "objective",
        "the metric goes with its direction: `objective: min(valid.loss)`",
    ),
    word(
        "n_trials",
        "Optuna",
        "trials",
        "`trials: 30`, or `--trials 30`",
    ),
    word(
        "num_samples",
        "Ray Tune",
        "trials",
        "`trials: 30`, or `--trials 30`",
    ),
    word(
        "pruner",
        "Optuna",
        "prune",
        "`prune: asha` (or `median`, `none`), or `--prune asha`",
    ),
    word(
        "scheduler",
        "Ray Tune",
        "prune",
        "`prune: asha` (or `median`, `none`), or `--prune asha`",
    ),
    word(
        "param_space",
        "Ray Tune",
        "space",
        "`space: { lr: log_uniform(1e-4, 1e-1) }`",
    ),
    Synonym {
        theirs: "timeout",
        from: "Optuna",
        ours: None,
        write: "a study is bounded by its trials, not by time: `trials: 30` (a killed study resumes where it stopped)",
    },
];

/// Learning-rate schedules, as PyTorch, Keras and Hugging Face name them.
pub const SCHEDULES: &[Synonym] = &[
    word(
        "StepLR",
        PYTORCH,
        "step",
        "`lr_schedule: step(every_epochs = 10, gamma = 0.1)` (PyTorch's `step_size` counts epochs)",
    ),
    word(
        "MultiStepLR",
        PYTORCH,
        "step",
        "a step every few epochs: `lr_schedule: step(every_epochs = 10, gamma = 0.1)`",
    ),
    word(
        "CosineAnnealingLR",
        PYTORCH,
        "cosine",
        "`lr_schedule: cosine(min = 1e-5)`, over the whole run",
    ),
    word(
        "ExponentialLR",
        PYTORCH,
        "exponential",
        "`lr_schedule: exponential(gamma = 0.95)`",
    ),
    word(
        "LinearLR",
        PYTORCH,
        "linear",
        "`lr_schedule: linear(final = 1e-5)`, over the whole run",
    ),
    word(
        "ReduceLROnPlateau",
        PYTORCH,
        "plateau",
        "`lr_schedule: plateau(valid.loss, factor = 0.1, patience = 10)`",
    ),
    word(
        "OneCycleLR",
        PYTORCH,
        "warm_up",
        "a rise then a fall: `lr_schedule: warm_up(steps = 100, then = cosine(min = 0.0))`",
    ),
    word(
        "CosineDecay",
        KERAS,
        "cosine",
        "`lr_schedule: cosine(min = 1e-5)`, over the whole run",
    ),
    word(
        "ExponentialDecay",
        KERAS,
        "exponential",
        "`lr_schedule: exponential(gamma = 0.95)`",
    ),
    word(
        "get_linear_schedule_with_warmup",
        HUGGING_FACE,
        "warm_up",
        "`lr_schedule: warm_up(steps = 100, then = linear(final = 0.0))`",
    ),
    word(
        "get_cosine_schedule_with_warmup",
        HUGGING_FACE,
        "warm_up",
        "`lr_schedule: warm_up(steps = 100, then = cosine(min = 0.0))`",
    ),
    Synonym {
        theirs: "LambdaLR",
        from: PYTORCH,
        ours: None,
        write: "a rate of your own is a Burn `LrScheduler` written as an expression: `lr_schedule: MyScheduler::new(..)`",
    },
];

/// Callbacks of Keras and Lightning whose work is one of our keys.
pub const CALLBACKS: &[Synonym] = &[
    word(
        "EarlyStopping",
        LIGHTNING,
        "early_stopping",
        "a key, not a callback: `early_stopping: patience(3, valid.loss)`",
    ),
    word(
        "ModelCheckpoint",
        LIGHTNING,
        "checkpoint",
        "a key, not a callback: `checkpoint: keep_last(2) | best(valid.loss)`",
    ),
    word(
        "ReduceLROnPlateau",
        KERAS,
        "lr_schedule",
        "a schedule, not a callback: `lr_schedule: plateau(valid.loss, factor = 0.1, patience = 10)`",
    ),
    word(
        "LearningRateScheduler",
        KERAS,
        "lr_schedule",
        "a key, not a callback: `lr_schedule: cosine(min = 1e-5)`",
    ),
    word(
        "LearningRateMonitor",
        LIGHTNING,
        "metrics",
        "the rate is a metric: `metrics: [.., train.lr]`",
    ),
    word(
        "StochasticWeightAveraging",
        LIGHTNING,
        "ema",
        "an average of the weights is a key: `ema: 0.999` (an exponential moving average)",
    ),
    word(
        "GradientAccumulationScheduler",
        LIGHTNING,
        "grad_accumulation",
        "a key, not a callback: `grad_accumulation: 4`",
    ),
    Synonym {
        theirs: "TensorBoard",
        from: KERAS,
        ours: None,
        write: "every run writes TensorBoard's events already (`events.out.tfevents.run` in its folder): remove the callback",
    },
    Synonym {
        theirs: "CSVLogger",
        from: KERAS,
        ours: None,
        write: "every run writes `metrics.csv` already: remove the callback",
    },
    Synonym {
        theirs: "ModelSummary",
        from: LIGHTNING,
        ours: None,
        write: "`--print-config` shows the run's settings; remove the callback",
    },
];

/// Arguments of `early_stopping` and `checkpoint` rules as Keras and Lightning write them.
pub const POLICY_ARGS: &[Synonym] = &[
    Synonym {
        theirs: "mode",
        from: LIGHTNING,
        ours: None,
        write: "each metric knows its direction: `patience(3, valid.accuracy)` stops when accuracy stops rising, `patience(3, valid.loss)` when the loss stops falling",
    },
    Synonym {
        theirs: "monitor",
        from: LIGHTNING,
        ours: None,
        write: "the metric is the rule's argument: `patience(3, valid.loss)`, `best(valid.loss)`",
    },
    Synonym {
        theirs: "restore_best_weights",
        from: KERAS,
        ours: None,
        write: "keep the best epoch with `checkpoint: best(valid.loss)`, then `--evaluate best` or `--resume best`",
    },
    Synonym {
        theirs: "verbose",
        from: KERAS,
        ours: None,
        write: "a stop is always said, printed and in `summary.md`: remove the argument",
    },
];

/// Arguments of the optimizers.
pub const OPTIMIZER_ARGS: &[Synonym] = &[
    word(
        "betas",
        PYTORCH,
        "beta_1, beta_2",
        "two arguments, `adam(lr = 1e-3, beta_1 = 0.9, beta_2 = 0.999)`",
    ),
    word(
        "eps",
        PYTORCH,
        "epsilon",
        "`adam(lr = 1e-3, epsilon = 1e-8)`",
    ),
    word("learning_rate", KERAS, "lr", "`adam(lr = 1e-3)`"),
    Synonym {
        theirs: "params",
        from: PYTORCH,
        ours: None,
        write: "the optimizer steps the experiment's model, every parameter (or those `groups:` names): write only the rates, `adam(lr = 1e-3)`",
    },
    Synonym {
        theirs: "amsgrad",
        from: PYTORCH,
        ours: None,
        write: "`adam(..)` takes no switch for it; Burn's `AdamConfig` has one: write the optimizer as an expression, `optimizer: AdamConfig::new().with_amsgrad(true).init()`, with `lr: ..` beside it",
    },
    Synonym {
        theirs: "nesterov",
        from: PYTORCH,
        ours: None,
        write: "`sgd(..)` takes no switch for it; Burn's `MomentumConfig` has one: write the optimizer as an expression, `optimizer: SgdConfig::new().with_momentum(Some(MomentumConfig::new().with_nesterov(true))).init()`, with `lr: ..` beside it",
    },
];

/// Metrics.
pub const METRICS: &[Synonym] = &[
    word("f1_score", "scikit-learn", "f1", "`valid.f1`"),
    word("acc", KERAS, "accuracy", "`valid.accuracy`"),
    word(
        "top_k_categorical_accuracy",
        KERAS,
        "top_k",
        "`valid.top_k(5)`",
    ),
    word(
        "val_loss",
        KERAS,
        "loss",
        "the split goes first: `valid.loss`",
    ),
    word(
        "val_accuracy",
        KERAS,
        "accuracy",
        "the split goes first: `valid.accuracy`",
    ),
    word(
        "val_acc",
        KERAS,
        "accuracy",
        "the split goes first: `valid.accuracy`",
    ),
    word(
        "train_loss",
        LIGHTNING,
        "loss",
        "the split goes first: `train.loss`",
    ),
    word(
        "train_acc",
        LIGHTNING,
        "accuracy",
        "the split goes first: `train.accuracy`",
    ),
];

/// The synonym `word` is among `table`'s.
pub fn find(table: &'static [Synonym], word: &str) -> Option<&'static Synonym> {
    table.iter().find(|s| s.theirs == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn their_words_name_ours_and_ours_exist() {
        let workers = find(KEYS, "num_workers").unwrap();
        assert_eq!(
            workers.help(),
            "`num_workers` is PyTorch's word; ours is `workers`: `loader: { .., workers: 4 }`, or `--workers 4`"
        );
        assert!(
            find(OPTIMIZER_ARGS, "betas")
                .unwrap()
                .help()
                .contains("ours are `beta_1` and `beta_2`: two arguments")
        );
        assert!(
            find(OPTIMIZER_ARGS, "amsgrad")
                .unwrap()
                .help()
                .contains("AdamConfig::new().with_amsgrad(true)")
        );
        assert_eq!(find(KEYS, "workers"), None, "ours are not theirs");
        // Every word we answer with is one of our keys (or of `loader`'s), optimizer arguments
        // or metrics.
        for ours in KEYS.iter().flat_map(Synonym::words) {
            let loader = ["workers", "batch_size"].contains(&ours);
            assert!(loader || crate::keys::names().contains(&ours), "{ours}");
        }
        for ours in METRICS.iter().flat_map(Synonym::words) {
            assert!(crate::metrics::metric(ours).is_some(), "{ours}");
        }
        for ours in CALLBACKS.iter().flat_map(Synonym::words) {
            assert!(crate::keys::names().contains(&ours), "{ours}");
        }
        for ours in SEARCH.iter().flat_map(Synonym::words) {
            assert!(crate::search::ENTRIES.contains(&ours), "{ours}");
        }
        assert!(POLICY_ARGS.iter().all(|s| s.ours.is_none()));
        for ours in OPTIMIZER_ARGS.iter().flat_map(Synonym::words) {
            let known = ours == "lr"
                || crate::optimizer::OPTIMIZERS
                    .iter()
                    .any(|o| o.arg(ours).is_some());
            assert!(known, "{ours}");
        }
    }
}
