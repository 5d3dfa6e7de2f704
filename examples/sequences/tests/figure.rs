//! The figure the README states: padded, masked sequences of any length are classified.

use sequences::{Sequences, SequencesConfig};

/// The experiment trained in `precision`, and its last validation accuracy.
fn train(
    precision: burn_experiment::Precision,
) -> (burn_experiment::FitReport<sequences::SequencesModel>, f64) {
    let dir = tempfile::tempdir().unwrap();
    let config = SequencesConfig {
        artifacts: dir.path().to_string_lossy().into_owned(),
        precision,
        ..Sequences::config()
    };
    let report =
        Sequences::with_options(config, &burn::tensor::Device::flex(), |o| o.quiet = true).unwrap();
    let accuracy = report
        .history
        .get(burn_experiment::Split::Valid, "accuracy")
        .unwrap()
        .values();
    let last = *accuracy.last().unwrap();
    (report, last)
}

#[test]
fn variable_length_sequences_are_classified_through_the_mask() {
    let (_, last) = train(burn_experiment::Precision::F32);
    assert!(last >= 95.0, "valid accuracy {last}");
    // Lengths vary within a batch: the padding is real.
    let lengths: Vec<usize> = (0..20)
        .map(|k| sequences::sentence(k).tokens.len())
        .collect();
    assert!(lengths.iter().min() < lengths.iter().max(), "{lengths:?}");
    println!("sequences: valid accuracy {last:.1} %");
}

/// In bf16 too (`precision`): the model builds its mask and lengths as floats itself, in the
/// type of the embeddings it multiplies (`.cast(embedded.dtype())`), and still classifies.
#[test]
fn in_bf16_the_model_casts_the_floats_it_builds_and_still_classifies() {
    let (report, last) = train(burn_experiment::Precision::Bf16);
    assert!(last >= 95.0, "bf16 valid accuracy {last}");
    assert!(
        report
            .history
            .train_losses()
            .iter()
            .all(|l| l.to_bits() & 0xffff == 0)
    );
}
