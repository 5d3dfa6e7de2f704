//! The metric catalogue: every `split.<name>` of `metrics: [..]`, the argument it takes, the
//! runtime constructor and type behind it, and the step outputs that can feed it; and the splits.
//! The macro parses, checks and expands metrics from this table; the runtime's constructors
//! (`burn_experiment::metric`) are the ones it names.

/// The argument a metric takes: `top_k(5)`, `fbeta(0.5)`, or none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum MetricArg {
    /// No argument.
    None,
    /// A whole number of at least 1.
    Count,
    /// A positive number.
    Positive,
}

/// One metric of `split.<name>`.
pub struct MetricSpec {
    /// As written after the split.
    pub name: &'static str,
    /// The argument it takes.
    pub arg: MetricArg,
    /// The metric type behind it, under `burn_experiment::__private::metric` (ours) or Burn's
    /// `burn::train::metric`.
    pub burn_type: MetricType,
    /// Constructor in `burn_experiment::__private::metric`, called with the argument if any.
    pub constructor: &'static str,
    /// The Burn outputs that can feed it, for the docs and the unknown-metric help.
    pub outputs: &'static str,
}

/// Where a metric's type lives.
#[derive(Clone, Copy)]
pub enum MetricType {
    /// Our sample-weighted loss (`burn_experiment::metric::SampleLoss`).
    Ours(&'static str),
    /// A type of `burn::train::metric`.
    Burn(&'static str),
}

const CLASSIFICATION: &str = "ClassificationOutput";
const CLASSIFICATION_OR_SEQUENCE: &str = "ClassificationOutput, SequenceOutput";
const CLASSIFICATION_OR_MULTILABEL: &str = "ClassificationOutput, MultiLabelClassificationOutput";
const SEQUENCE: &str = "SequenceOutput";

/// Burn's step outputs, whose metrics the catalogue's `outputs` name.
pub const BURN_OUTPUTS: [&str; 4] = [
    "ClassificationOutput",
    "RegressionOutput",
    "SequenceOutput",
    "MultiLabelClassificationOutput",
];

/// Metric and Burn output pairs that Burn's types accept though `outputs` does not name them:
/// a multi-label output adapts to the confusion-stats and AUROC inputs, which our multiclass
/// configurations read by arg-max, not by a threshold per label.
const TYPED_ONLY: [(&str, &str); 5] = [
    ("precision", "MultiLabelClassificationOutput"),
    ("recall", "MultiLabelClassificationOutput"),
    ("f1", "MultiLabelClassificationOutput"),
    ("fbeta", "MultiLabelClassificationOutput"),
    ("auroc", "MultiLabelClassificationOutput"),
];

impl MetricSpec {
    /// Whether Burn's output `output` (one of [`BURN_OUTPUTS`]) is one this metric is for.
    pub fn fed_by(&self, output: &str) -> bool {
        self.outputs == "every output" || self.outputs.split(", ").any(|o| o == output)
    }

    /// Whether Burn's types let `output` feed this metric at all: what it is for, and
    /// [`TYPED_ONLY`]. A build recording it for a step declared to return any other Burn
    /// output fails; the macro relies on that.
    pub fn compiles_with(&self, output: &str) -> bool {
        self.fed_by(output) || TYPED_ONLY.contains(&(self.name, output))
    }
}

/// Every metric of the catalogue.
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

/// Whether a larger value of catalogue metric `name` is better (accuracy) or worse (loss), as
/// Burn's metric says in its attributes; `None` for one with no better direction (the rate,
/// the speed) or outside the catalogue. A search that minimizes a metric better high would
/// rank its worst trial best.
pub fn higher_is_better(name: &str) -> Option<bool> {
    match name {
        "accuracy" | "top_k" | "precision" | "recall" | "f1" | "fbeta" | "auroc" | "auc_pr"
        | "hamming" => Some(true),
        "loss" | "perplexity" | "cer" | "wer" => Some(false),
        _ => None,
    }
}

/// The catalogue's names, in order.
pub fn metric_names() -> Vec<&'static str> {
    METRICS.iter().map(|m| m.name).collect()
}

/// The splits a metric can be recorded on.
pub const SPLITS: &[&str] = &["train", "valid", "test"];
