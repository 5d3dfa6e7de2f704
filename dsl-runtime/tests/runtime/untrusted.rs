//! Every file a run reads back is untrusted input: valid files of each kind, mutated at random
//! (bit flips, truncation, extension, deleted spans, JSON numbers replaced by extreme values and
//! re-sealed so that only the content checks can catch them), must give either a clear error or
//! a resume that ends exactly as an uninterrupted run — never a panic.
//!
//! `FUZZ_CASES` sets the cases per file kind (100 by default, the run `.ci/run` does); the long
//! run is `FUZZ_CASES=10000 cargo test -p burn-experiment --test runtime untrusted -- --nocapture`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use crate::common::*;
use burn::optim::AdamConfig;
use burn_experiment::app::cli::Args;
use burn_experiment::checkpoint::{CheckpointDir, Policy, Resume};
use burn_experiment::prelude::*;

fn options(dir: &Path, epochs: usize, resume: Option<Resume>) -> FitOptions {
    FitOptions {
        name: "fuzz".into(),
        artifacts: dir.to_owned(),
        epochs,
        batch_size: 16,
        shuffle: Some(7),
        quiet: true,
        checkpoint: Some(vec![Policy::KeepLast { n: 2 }]),
        resume,
        ..FitOptions::default()
    }
}

fn run(
    dir: &Path,
    epochs: usize,
    resume: Option<Resume>,
) -> Result<FitReport<Classifier>, FitError> {
    Fit::new(classifier(), AdamConfig::new().init(), 1e-2)
        .options(options(dir, epochs, resume))
        .train_metric(metric::loss())
        .valid_metric(metric::loss())
        .run(
            &device(),
            Data::new(samples(0..96), samples(96..120), SampleBatcher),
        )
}

/// xorshift64: reproducible cases without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The numbers a JSON field is most likely to be mishandled with.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "1e308",
    "-1e308",
    "\"NaN\"",
    "\"inf\"",
    "null",
    "[]",
    "{}",
    "true",
    "\"3\"",
];

/// FNV-1a, as the runtime seals a state file with it.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn seal(json: &[u8]) -> Vec<u8> {
    let head = format!("{{\"fnv1a\":\"{:016x}\",\"state\":", fnv1a(json));
    [head.as_bytes(), json, b"}"].concat()
}

/// The JSON inside a sealed state file.
fn unsealed(file: &[u8]) -> &[u8] {
    &file[b"{\"fnv1a\":\"0123456789abcdef\",\"state\":".len()..file.len() - 1]
}

/// One random mutation of `bytes`; `sealed` files get their JSON edited and sealed again half
/// of the time, as someone editing a state file by hand would.
fn mutate(bytes: &[u8], sealed: bool, rng: &mut Rng) -> (String, Vec<u8>) {
    let mut out = bytes.to_vec();
    match rng.below(6) {
        0 => {
            let at = rng.below(out.len());
            out[at] ^= 1 << rng.below(8);
            ("bit flip".into(), out)
        }
        1 => {
            out.truncate(rng.below(out.len()));
            ("truncation".into(), out)
        }
        2 => {
            let extra = rng.below(64) + 1;
            out.extend((0..extra).map(|_| rng.next() as u8));
            ("extension".into(), out)
        }
        3 => {
            let start = rng.below(out.len());
            let end = (start + rng.below(32) + 1).min(out.len());
            out.drain(start..end);
            ("deleted span".into(), out)
        }
        _ => {
            let json = if sealed { unsealed(bytes) } else { bytes };
            let text = String::from_utf8_lossy(json).into_owned();
            // A number token at random, replaced by an extreme value.
            let starts: Vec<usize> = text
                .char_indices()
                .filter(|&(i, c)| {
                    c.is_ascii_digit()
                        && !text[..i]
                            .ends_with(|p: char| p.is_ascii_alphanumeric() || p == '.' || p == '-')
                })
                .map(|(i, _)| i)
                .collect();
            if starts.is_empty() {
                return ("no number to edit".into(), out);
            }
            let start = starts[rng.below(starts.len())];
            let len = text[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+'))
                .unwrap_or(text.len() - start);
            let value = EXTREMES[rng.below(EXTREMES.len())];
            let edited = format!("{}{value}{}", &text[..start], &text[start + len..]);
            let out = if sealed {
                seal(edited.as_bytes())
            } else {
                edited.into_bytes()
            };
            (format!("number -> {value}"), out)
        }
    }
}

/// What the cases of one file kind gave.
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    /// Changed files that loading the epoch refused (the resume then falls back to epoch 1).
    detected: usize,
    /// Changed files that loaded: only a re-sealed edit that kept the state consistent.
    undetected: Vec<String>,
    errors: usize,
    /// The errors' messages.
    messages: Vec<String>,
    resumed_equal: usize,
    resumed_different: Vec<String>,
    panics: Vec<String>,
}

/// Mutates `file` (relative to the run directory) `cases` times; after each, resumes a copy of
/// the two-epoch run to epoch 3 and compares with `reference`.
fn fuzz_checkpoint_file(file: &str, sealed: bool, seed: u64, reference: &[u32]) -> Tally {
    let pristine = tempfile::tempdir().unwrap();
    run(pristine.path(), 2, None).unwrap();
    let run_dir = pristine.path().join("fuzz/run-1");
    let original = std::fs::read(run_dir.join(file)).unwrap();
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for case in 0..cases() {
        let (what, bytes) = mutate(&original, sealed, &mut rng);
        let scratch = tempfile::tempdir().unwrap();
        copy_dir(&run_dir, &scratch.path().join("fuzz/run-1"));
        std::fs::write(scratch.path().join("fuzz/run-1").join(file), &bytes).unwrap();
        tally.cases += 1;
        if bytes != original && file.starts_with("checkpoint/") {
            let checkpoints = CheckpointDir::new(&scratch.path().join("fuzz/run-1"));
            match catch_unwind(AssertUnwindSafe(|| checkpoints.load(2))) {
                Err(_) => tally.panics.push(format!("case {case}: {what} (load)")),
                Ok(Err(_)) => tally.detected += 1,
                Ok(Ok(_)) => tally.undetected.push(format!("case {case}: {what}")),
            }
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            run(scratch.path(), 3, Some(Resume::Latest))
        }));
        match outcome {
            Err(_) => tally.panics.push(format!("case {case}: {what}")),
            Ok(Err(err)) => {
                assert!(!err.to_string().is_empty());
                tally.errors += 1;
                tally.messages.push(err.to_string());
            }
            Ok(Ok(report)) if report.model.mlp.weights() == reference => tally.resumed_equal += 1,
            Ok(Ok(_)) => tally.resumed_different.push(format!("case {case}: {what}")),
        }
    }
    tally
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn cases() -> usize {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100)
}

fn reference() -> Vec<u32> {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 3, None).unwrap().model.mlp.weights()
}

fn check(kind: &str, tally: &Tally) {
    println!("{kind}: {tally:?}");
    assert!(
        tally.panics.is_empty(),
        "{kind}: panics in {:?}",
        tally.panics
    );
    assert!(
        tally.resumed_different.is_empty(),
        "{kind}: resumes that differ from an uninterrupted run: {:?}",
        tally.resumed_different
    );
    assert_eq!(tally.cases, cases());
}

#[test]
fn untrusted_state_files() {
    let tally = fuzz_checkpoint_file("checkpoint/state-2.json", true, 0x5747_e001, &reference());
    check("state-2.json", &tally);
    // Every changed byte is caught by the seal; only an edit sealed again can load, and then
    // only if what it says stays consistent (a metric value changed, say).
    assert!(
        tally
            .undetected
            .iter()
            .all(|case| case.contains("number ->")),
        "{:?}",
        tally.undetected
    );
    assert!(tally.detected > tally.cases / 2, "{tally:?}");
}

#[test]
fn untrusted_model_records() {
    let tally = fuzz_checkpoint_file("checkpoint/model-2.bpk", false, 0x5747_e002, &reference());
    check("model-2.bpk", &tally);
    assert!(tally.undetected.is_empty(), "{:?}", tally.undetected);
}

#[test]
fn untrusted_metrics_csv() {
    // metrics.csv holds the per-step record a resume continues: a change to the rows the
    // checkpoint recorded is refused, naming the file (never dropped silently); bytes after
    // them (what an interrupted process appended) are cut off, and the resume ends as the
    // uninterrupted run.
    let tally = fuzz_checkpoint_file("metrics.csv", false, 0x5747_e003, &reference());
    check("metrics.csv", &tally);
    assert_eq!(tally.errors + tally.resumed_equal, tally.cases, "{tally:?}");
    assert!(tally.errors > 0 && tally.resumed_equal > 0, "{tally:?}");
    for message in &tally.messages {
        assert!(
            message.contains("metrics.csv does not hold the rows the checkpoint recorded"),
            "{message}"
        );
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    epochs: usize,
    lr: f64,
    batch_size: usize,
    shuffle: Option<u64>,
    optimizer: burn_experiment::config::spec::OptimizerSpec,
    checkpoint: Option<Vec<Policy>>,
}

#[test]
fn untrusted_config_files() {
    let defaults = Config {
        epochs: 3,
        lr: 0.1,
        batch_size: 16,
        shuffle: Some(7),
        optimizer: burn_experiment::config::spec::OptimizerSpec::Adam {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-5,
            weight_decay: None,
        },
        checkpoint: Some(vec![Policy::KeepLast { n: 2 }]),
    };
    let original = serde_json::to_vec_pretty(
        &serde_json::json!({ "name": "fuzz", "hyperparameters": &defaults }),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let mut rng = Rng(0x5747_e004);
    let mut tally = Tally::default();
    for case in 0..cases() {
        let (what, bytes) = mutate(&original, false, &mut rng);
        std::fs::write(&path, &bytes).unwrap();
        let args = Args {
            config: Some(path.clone()),
            ..Args::default()
        };
        tally.cases += 1;
        match catch_unwind(AssertUnwindSafe(|| args.resolve(&defaults))) {
            Err(_) => tally.panics.push(format!("case {case}: {what}")),
            Ok(Err(err)) => {
                assert!(err.to_string().contains("config"), "{err}");
                tally.errors += 1;
            }
            Ok(Ok(_)) => tally.resumed_equal += 1,
        }
    }
    check("config.json", &tally);
}

#[test]
fn a_state_file_whose_epoch_was_edited_and_sealed_again_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 2, None).unwrap();
    let path = dir.path().join("fuzz/run-1/checkpoint/state-2.json");
    let sealed = std::fs::read(&path).unwrap();
    let json = String::from_utf8(unsealed(&sealed).to_vec()).unwrap();
    let edited = json.replacen("\"epoch\": 2", "\"epoch\": 18446744073709551615", 1);
    assert_ne!(edited, json, "the state names its epoch");
    std::fs::write(&path, seal(edited.as_bytes())).unwrap();
    let err = CheckpointDir::new(&dir.path().join("fuzz/run-1"))
        .load(2)
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("it says epoch 18446744073709551615, but it is epoch 2's file"),
        "{err}"
    );
    // `latest` skips it, resumes after epoch 1 and ends as an uninterrupted run.
    let resumed = run(dir.path(), 3, Some(Resume::Latest)).unwrap();
    assert_eq!(resumed.model.mlp.weights(), reference());
}
