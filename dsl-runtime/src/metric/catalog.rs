//! The metrics a run can record, by the names `training!` uses.
//!
//! Each constructor returns one of Burn's metric types (or [`SampleLoss`]) with its key; the fit
//! loop drives it exactly as Burn's Learner would.

use burn::train::metric::{
    AccuracyMetric, AucPrMetric, AurocMetric, CharErrorRate, ClassReduction, FBetaScoreMetric,
    HammingScore, IterationSpeedMetric, LearningRateMetric, PerplexityMetric, PrecisionMetric,
    RecallMetric, TopKAccuracyMetric, WordErrorRate,
};

use super::{SampleLoss, Tracked};

/// Sample-weighted loss (see [`SampleLoss`]); key `loss`.
pub fn loss() -> Tracked<SampleLoss> {
    Tracked::new("loss", SampleLoss::default())
}

/// Burn's `AccuracyMetric` (percent); key `accuracy`.
pub fn accuracy() -> Tracked<AccuracyMetric> {
    Tracked::new("accuracy", AccuracyMetric::new())
}

/// Burn's `TopKAccuracyMetric` (percent); key `top_k(k)`.
pub fn top_k(k: usize) -> Tracked<TopKAccuracyMetric> {
    Tracked::new(format!("top_k({k})"), TopKAccuracyMetric::new(k))
}

/// Burn's multiclass `PrecisionMetric` on the arg-max class, macro-averaged; key `precision`.
pub fn precision() -> Tracked<PrecisionMetric> {
    Tracked::new(
        "precision",
        PrecisionMetric::multiclass(1, ClassReduction::Macro),
    )
}

/// Burn's multiclass `RecallMetric` on the arg-max class, macro-averaged; key `recall`.
pub fn recall() -> Tracked<RecallMetric> {
    Tracked::new("recall", RecallMetric::multiclass(1, ClassReduction::Macro))
}

/// Burn's `FBetaScoreMetric` with beta 1, macro-averaged; key `f1`.
pub fn f1() -> Tracked<FBetaScoreMetric> {
    Tracked::new(
        "f1",
        FBetaScoreMetric::multiclass(1.0, 1, ClassReduction::Macro),
    )
}

/// Burn's `FBetaScoreMetric` with the given beta, macro-averaged; key `fbeta(beta)`.
pub fn fbeta(beta: f64) -> Tracked<FBetaScoreMetric> {
    Tracked::new(
        format!("fbeta({beta})"),
        FBetaScoreMetric::multiclass(beta, 1, ClassReduction::Macro),
    )
}

/// Burn's multiclass `AurocMetric`, macro-averaged over one-vs-rest classes; key `auroc`.
pub fn auroc() -> Tracked<AurocMetric> {
    Tracked::new("auroc", AurocMetric::multiclass(ClassReduction::Macro))
}

/// Burn's `PerplexityMetric`; key `perplexity`.
pub fn perplexity() -> Tracked<PerplexityMetric> {
    Tracked::new("perplexity", PerplexityMetric::new())
}

/// Burn's `LearningRateMetric`: the learning rate each step used; key `lr`.
pub fn learning_rate() -> Tracked<LearningRateMetric> {
    Tracked::new("lr", LearningRateMetric::new())
}

/// Burn's `AucPrMetric` (average precision), macro-averaged over one-vs-rest classes; key
/// `auc_pr`.
pub fn auc_pr() -> Tracked<AucPrMetric> {
    Tracked::new("auc_pr", AucPrMetric::multiclass(ClassReduction::Macro))
}

/// Burn's `HammingScore` of multi-label outputs (threshold 0.5); key `hamming`.
pub fn hamming() -> Tracked<HammingScore> {
    Tracked::new("hamming", HammingScore::new())
}

/// Burn's `CharErrorRate` of sequence outputs (percent); key `cer`.
pub fn cer() -> Tracked<CharErrorRate> {
    Tracked::new("cer", CharErrorRate::new())
}

/// Burn's `WordErrorRate` of sequence outputs (percent); key `wer`.
pub fn wer() -> Tracked<WordErrorRate> {
    Tracked::new("wer", WordErrorRate::new())
}

/// Burn's `IterationSpeedMetric`: items per second; key `iteration_speed`.
pub fn iteration_speed() -> Tracked<IterationSpeedMetric> {
    Tracked::new("iteration_speed", IterationSpeedMetric::new())
}

#[cfg(test)]
mod tests {
    use burn::data::dataloader::Progress;
    use burn::tensor::{Device, Int, Tensor};
    use burn::train::metric::MetricMetadata;
    use burn::train::{
        ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput, SequenceOutput,
    };

    use super::*;
    use crate::metric::SplitMetric;
    use crate::model::contract::Measurable;

    fn metadata() -> MetricMetadata {
        MetricMetadata {
            progress: Progress {
                items_processed: 2,
                items_total: 2,
                unit: None,
            },
            iteration: Some(1),
            lr: None,
        }
    }

    fn multilabel(logits: [[f32; 2]; 2], device: &Device) -> MultiLabelClassificationOutput {
        MultiLabelClassificationOutput {
            loss: Tensor::from_floats([0.0], device),
            output: Tensor::from_floats(logits, device),
            targets: Tensor::<2, Int>::from_ints([[1, 0], [1, 1]], device),
        }
    }

    #[test]
    fn the_metrics_added_from_burn_box_for_the_outputs_the_docs_name() {
        // Compile-time half: each is accepted for the outputs its catalogue row lists.
        let _: Box<dyn SplitMetric<ClassificationOutput>> =
            <ClassificationOutput as Measurable<_>>::boxed(auc_pr());
        let _: Box<dyn SplitMetric<MultiLabelClassificationOutput>> =
            <MultiLabelClassificationOutput as Measurable<_>>::boxed(auc_pr());
        let _: Box<dyn SplitMetric<SequenceOutput>> =
            <SequenceOutput as Measurable<_>>::boxed(cer());
        let _: Box<dyn SplitMetric<SequenceOutput>> =
            <SequenceOutput as Measurable<_>>::boxed(wer());
        let _: Box<dyn SplitMetric<RegressionOutput>> =
            <RegressionOutput as Measurable<_>>::boxed(iteration_speed());
        let keys = [
            auc_pr().key().to_owned(),
            hamming().key().to_owned(),
            cer().key().to_owned(),
            wer().key().to_owned(),
            iteration_speed().key().to_owned(),
        ];
        assert_eq!(keys, ["auc_pr", "hamming", "cer", "wer", "iteration_speed"]);
    }

    /// Whether `O` can feed `M`, asked of the trait system at compile time (a method found
    /// without an autoref when `O: Measurable<M>` holds, through one otherwise).
    struct Probe<O, M>(std::marker::PhantomData<(O, M)>);
    trait Fed {
        fn fed(&self) -> bool {
            true
        }
    }
    impl<O: Measurable<M>, M: burn::train::metric::Metric> Fed for Probe<O, M> {}
    trait NotFed {
        fn fed(&self) -> bool {
            false
        }
    }
    impl<O, M> NotFed for &Probe<O, M> {}

    /// The macro turns a metric the declared Burn output cannot feed (by the catalogue) into a
    /// check at the step's body and a registration never run (`never_fed`): sound only while
    /// the catalogue's `compiles_with` is exactly what Burn implements, for every row and
    /// output.
    #[test]
    fn the_catalogue_says_what_each_burn_output_feeds() {
        use burn::train::metric::*;
        macro_rules! fed {
            ($output:ty: $($name:literal => $metric:ty),* $(,)?) => {
                vec![$(($name, (&Probe::<$output, $metric>(std::marker::PhantomData)).fed())),*]
            };
        }
        macro_rules! each_metric {
            ($output:ty) => {
                fed!($output:
                    "loss" => crate::metric::SampleLoss,
                    "accuracy" => AccuracyMetric,
                    "top_k" => TopKAccuracyMetric,
                    "precision" => PrecisionMetric,
                    "recall" => RecallMetric,
                    "f1" => FBetaScoreMetric,
                    "fbeta" => FBetaScoreMetric,
                    "auroc" => AurocMetric,
                    "perplexity" => PerplexityMetric,
                    "auc_pr" => AucPrMetric,
                    "hamming" => HammingScore,
                    "cer" => CharErrorRate,
                    "wer" => WordErrorRate,
                    "iteration_speed" => IterationSpeedMetric,
                    "lr" => LearningRateMetric,
                )
            };
        }
        let probed = [
            ("ClassificationOutput", each_metric!(ClassificationOutput)),
            ("RegressionOutput", each_metric!(RegressionOutput)),
            ("SequenceOutput", each_metric!(SequenceOutput)),
            (
                "MultiLabelClassificationOutput",
                each_metric!(MultiLabelClassificationOutput),
            ),
        ];
        let outputs: Vec<&str> = probed.iter().map(|(o, _)| *o).collect();
        assert_eq!(outputs, burn_experiment_vocabulary::metrics::BURN_OUTPUTS);
        let mut wrong = Vec::new();
        for (output, metrics) in probed {
            let names: Vec<&str> = metrics.iter().map(|(n, _)| *n).collect();
            assert_eq!(
                names,
                burn_experiment_vocabulary::metrics::metric_names(),
                "every row, in order"
            );
            for (name, fed) in metrics {
                if burn_experiment_vocabulary::metrics::metric(name)
                    .unwrap()
                    .compiles_with(output)
                    != fed
                {
                    let burn = if fed { "feeds" } else { "cannot feed" };
                    wrong.push(format!("Burn's `{output}` {burn} `{name}`"));
                }
            }
        }
        assert!(wrong.is_empty(), "the catalogue says otherwise: {wrong:#?}");
    }

    #[test]
    fn hamming_scores_multi_label_outputs() {
        let device = Device::flex();
        let score = |logits| {
            let mut metric: Box<dyn SplitMetric<MultiLabelClassificationOutput>> =
                <MultiLabelClassificationOutput as Measurable<_>>::boxed(hamming());
            metric
                .update(&multilabel(logits, &device), &metadata())
                .unwrap();
            metric.finish_epoch().unwrap()
        };
        let right = score([[4.0, -4.0], [4.0, 4.0]]);
        let one_wrong = score([[4.0, 4.0], [4.0, 4.0]]);
        assert!(right > one_wrong, "{right} vs {one_wrong}");
        assert_eq!(one_wrong / right, 0.75, "one label of four wrong");
    }

    /// The vocabulary's direction of each catalogue metric (which a search's objective is
    /// checked against at compile time) is the one Burn's metric declares.
    #[test]
    fn the_vocabularys_directions_are_burns() {
        use burn_experiment_vocabulary::metrics::higher_is_better;
        let burn: [(&str, bool); 13] = [
            (
                "loss",
                SplitMetric::<ClassificationOutput>::higher_is_better(&loss()),
            ),
            (
                "accuracy",
                SplitMetric::<ClassificationOutput>::higher_is_better(&accuracy()),
            ),
            (
                "top_k",
                SplitMetric::<ClassificationOutput>::higher_is_better(&top_k(2)),
            ),
            (
                "precision",
                SplitMetric::<ClassificationOutput>::higher_is_better(&precision()),
            ),
            (
                "recall",
                SplitMetric::<ClassificationOutput>::higher_is_better(&recall()),
            ),
            (
                "f1",
                SplitMetric::<ClassificationOutput>::higher_is_better(&f1()),
            ),
            (
                "fbeta",
                SplitMetric::<ClassificationOutput>::higher_is_better(&fbeta(0.5)),
            ),
            (
                "auroc",
                SplitMetric::<ClassificationOutput>::higher_is_better(&auroc()),
            ),
            (
                "perplexity",
                SplitMetric::<ClassificationOutput>::higher_is_better(&perplexity()),
            ),
            (
                "auc_pr",
                SplitMetric::<ClassificationOutput>::higher_is_better(&auc_pr()),
            ),
            (
                "hamming",
                SplitMetric::<MultiLabelClassificationOutput>::higher_is_better(&hamming()),
            ),
            (
                "cer",
                SplitMetric::<SequenceOutput>::higher_is_better(&cer()),
            ),
            (
                "wer",
                SplitMetric::<SequenceOutput>::higher_is_better(&wer()),
            ),
        ];
        for (name, higher) in burn {
            assert_eq!(higher_is_better(name), Some(higher), "{name}");
        }
    }
}
