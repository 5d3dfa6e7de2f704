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
        for ours in OPTIMIZER_ARGS.iter().flat_map(Synonym::words) {
            let known = ours == "lr"
                || crate::optimizer::OPTIMIZERS
                    .iter()
                    .any(|o| o.arg(ours).is_some());
            assert!(known, "{ours}");
        }
    }
}
