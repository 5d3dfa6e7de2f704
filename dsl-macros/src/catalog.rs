//! Every name the macro knows, defined once: metrics, optimizers and their arguments, splits.
//! Parse, validate and expand all read these tables (serde's `symbol.rs` idea), so adding a
//! metric or an optimizer argument is one row.

/// The argument a metric takes: `top_k(5)`, `fbeta(0.5)`, or none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum MetricArg {
    None,
    /// A whole number of at least 1.
    Count,
    /// A positive number.
    Positive,
}

/// One metric of `split.<name>`.
pub struct MetricSpec {
    pub name: &'static str,
    pub arg: MetricArg,
    /// The metric type behind it, under `dsl_runtime::__private::metric` (ours) or Burn's
    /// `burn::train::metric`.
    pub burn_type: MetricType,
    /// Constructor in `dsl_runtime::__private::metric`, called with the argument if any.
    pub constructor: &'static str,
    /// The Burn outputs that can feed it, for the docs and the unknown-metric help.
    pub outputs: &'static str,
}

/// Where a metric's type lives.
#[derive(Clone, Copy)]
pub enum MetricType {
    /// Our sample-weighted loss (`dsl_runtime::metric::SampleLoss`).
    Ours(&'static str),
    /// A type of `burn::train::metric`.
    Burn(&'static str),
}

const CLASSIFICATION: &str = "ClassificationOutput";
const CLASSIFICATION_OR_SEQUENCE: &str = "ClassificationOutput, SequenceOutput";
const CLASSIFICATION_OR_MULTILABEL: &str = "ClassificationOutput, MultiLabelClassificationOutput";
const SEQUENCE: &str = "SequenceOutput";

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "loss",
        arg: MetricArg::None,
        burn_type: MetricType::Ours("SampleLoss"),
        constructor: "loss",
        outputs: "every output",
    },
    MetricSpec {
        name: "accuracy",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("AccuracyMetric"),
        constructor: "accuracy",
        outputs: CLASSIFICATION_OR_SEQUENCE,
    },
    MetricSpec {
        name: "top_k",
        arg: MetricArg::Count,
        burn_type: MetricType::Burn("TopKAccuracyMetric"),
        constructor: "top_k",
        outputs: CLASSIFICATION_OR_SEQUENCE,
    },
    MetricSpec {
        name: "precision",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("PrecisionMetric"),
        constructor: "precision",
        outputs: CLASSIFICATION,
    },
    MetricSpec {
        name: "recall",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("RecallMetric"),
        constructor: "recall",
        outputs: CLASSIFICATION,
    },
    MetricSpec {
        name: "f1",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("FBetaScoreMetric"),
        constructor: "f1",
        outputs: CLASSIFICATION,
    },
    MetricSpec {
        name: "fbeta",
        arg: MetricArg::Positive,
        burn_type: MetricType::Burn("FBetaScoreMetric"),
        constructor: "fbeta",
        outputs: CLASSIFICATION,
    },
    MetricSpec {
        name: "auroc",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("AurocMetric"),
        constructor: "auroc",
        outputs: CLASSIFICATION,
    },
    MetricSpec {
        name: "perplexity",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("PerplexityMetric"),
        constructor: "perplexity",
        outputs: CLASSIFICATION_OR_SEQUENCE,
    },
    MetricSpec {
        name: "auc_pr",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("AucPrMetric"),
        constructor: "auc_pr",
        outputs: CLASSIFICATION_OR_MULTILABEL,
    },
    MetricSpec {
        name: "hamming",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("HammingScore"),
        constructor: "hamming",
        outputs: "MultiLabelClassificationOutput",
    },
    MetricSpec {
        name: "cer",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("CharErrorRate"),
        constructor: "cer",
        outputs: SEQUENCE,
    },
    MetricSpec {
        name: "wer",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("WordErrorRate"),
        constructor: "wer",
        outputs: SEQUENCE,
    },
    MetricSpec {
        name: "iteration_speed",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("IterationSpeedMetric"),
        constructor: "iteration_speed",
        outputs: "every output",
    },
    MetricSpec {
        name: "lr",
        arg: MetricArg::None,
        burn_type: MetricType::Burn("LearningRateMetric"),
        constructor: "learning_rate",
        outputs: "every output",
    },
];

/// The row of metric `name`.
pub fn metric(name: &str) -> Option<&'static MetricSpec> {
    METRICS.iter().find(|m| m.name == name)
}

pub fn metric_names() -> Vec<&'static str> {
    METRICS.iter().map(|m| m.name).collect()
}

/// The splits a metric can be recorded on.
pub const SPLITS: &[&str] = &["train", "valid", "test"];

/// The range an optimizer argument must lie in.
#[derive(Clone, Copy)]
pub enum Range {
    /// `[0, 1)`: momentum and the Adam betas.
    UnitHalfOpen,
    /// `(0, ∞)`: epsilon.
    Positive,
    /// `[0, ∞)`: weight decay.
    NonNegative,
}

impl Range {
    pub fn contains(self, v: f64) -> bool {
        v.is_finite()
            && match self {
                Range::UnitHalfOpen => (0.0..1.0).contains(&v),
                Range::Positive => v > 0.0,
                Range::NonNegative => v >= 0.0,
            }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Range::UnitHalfOpen => "in [0, 1)",
            Range::Positive => "positive",
            Range::NonNegative => "0 or more",
        }
    }
}

/// One argument of a named optimizer, spelt as in the config (`beta_1`), with the spelling
/// some users reach for first (`beta1`), accepted with a hint.
pub struct OptimizerArg {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub range: Range,
}

const fn arg(name: &'static str, range: Range) -> OptimizerArg {
    OptimizerArg {
        name,
        alias: None,
        range,
    }
}

const fn aliased(name: &'static str, alias: &'static str, range: Range) -> OptimizerArg {
    OptimizerArg {
        name,
        alias: Some(alias),
        range,
    }
}

const ADAM_ARGS: &[OptimizerArg] = &[
    aliased("beta_1", "beta1", Range::UnitHalfOpen),
    aliased("beta_2", "beta2", Range::UnitHalfOpen),
    arg("epsilon", Range::Positive),
    arg("weight_decay", Range::NonNegative),
];

/// A named optimizer: `sgd(lr = .., momentum = ..)`.
pub struct OptimizerSpec {
    pub name: &'static str,
    pub args: &'static [OptimizerArg],
}

pub const OPTIMIZERS: &[OptimizerSpec] = &[
    OptimizerSpec {
        name: "sgd",
        args: &[
            arg("momentum", Range::UnitHalfOpen),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    OptimizerSpec {
        name: "adam",
        args: ADAM_ARGS,
    },
    OptimizerSpec {
        name: "adamw",
        args: ADAM_ARGS,
    },
    OptimizerSpec {
        name: "rmsprop",
        args: &[
            arg("alpha", Range::UnitHalfOpen),
            arg("momentum", Range::UnitHalfOpen),
            arg("epsilon", Range::Positive),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    OptimizerSpec {
        name: "adagrad",
        args: &[
            arg("lr_decay", Range::NonNegative),
            arg("epsilon", Range::Positive),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    OptimizerSpec {
        name: "lion",
        args: &[
            aliased("beta_1", "beta1", Range::UnitHalfOpen),
            aliased("beta_2", "beta2", Range::UnitHalfOpen),
            arg("weight_decay", Range::NonNegative),
        ],
    },
    OptimizerSpec {
        name: "lamb",
        args: ADAM_ARGS,
    },
];

pub fn optimizer(name: &str) -> Option<&'static OptimizerSpec> {
    OPTIMIZERS.iter().find(|o| o.name == name)
}

impl OptimizerSpec {
    /// The argument written `word`, by its name or its alias.
    pub fn arg(&self, word: &str) -> Option<&'static OptimizerArg> {
        self.args
            .iter()
            .find(|a| a.name == word || a.alias == Some(word))
    }

    pub fn arg_names(&self) -> Vec<&'static str> {
        self.args.iter().map(|a| a.name).collect()
    }
}

/// The fields of every `<Name>Config`, which a hyperparameter of `hparams` may not reuse
/// (`expand::config` checks its list against this one).
pub const CONFIG_KEYS: &[&str] = &[
    "epochs",
    "batch_size",
    "shuffle",
    "workers",
    "lr",
    "optimizer",
    "lr_schedule",
    "grad_accumulation",
    "grad_clip",
    "early_stopping",
    "seed",
    "artifacts",
    "checkpoint",
    "run",
    "resume",
    "init_from",
    "freeze",
    "groups",
    "lora",
    "gradient_checkpointing",
    "ema",
    "device",
    "unfreeze",
    "engine",
    "strategy",
    "devices",
];
