//! Benchmark harness: (a) a hand-written Burn loop, (b) our `training!` experiment and (c) Burn's
//! `SupervisedTraining` (CliMetricsRenderer, default checkpointers), side by side.
//!
//! `cargo run --release -p bench --bin bench -- [--iterations N] [--tasks small,small-long,medium,loader-bound]`
//!
//! Every measurement is a child process of its own (one task, one variant), and variants
//! alternate within each iteration, so slow drifts of the machine hit all of them alike. A child
//! times its training call (data generation is done before the clock starts), reads its peak
//! RSS from `/proc/self/status`, and reports one `RESULT` line; the parent prints medians and
//! the ratios (b)/(a) and (b)/(c).

mod tasks;
mod variants;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use burn::data::dataset::InMemDataset;
use burn::tensor::Device;
use burn::train::ClassificationOutput;
use dsl_runtime::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};
use tasks::{Digit, DigitBatch, DigitBatcher, Medium, digits};
use variants::{Classify, Shape, Trained};

impl Classify for Mlp {
    type Batch = Batch;
    fn classify(&self, batch: Batch) -> ClassificationOutput {
        self.forward_classification(batch)
    }
}

impl Classify for Medium {
    type Batch = DigitBatch;
    fn classify(&self, batch: DigitBatch) -> ClassificationOutput {
        self.forward_classification(batch)
    }
}

/// The medium task's train and valid splits.
type Splits = (Arc<InMemDataset<Digit>>, Arc<InMemDataset<Digit>>);

/// Medium-task data, generated once per process before any clock starts.
fn medium_data() -> Splits {
    static DATA: OnceLock<Splits> = OnceLock::new();
    DATA.get_or_init(|| (Arc::new(digits(0..8192)), Arc::new(digits(8192..10240))))
        .clone()
}

/// Whether the slow batcher waits (I/O-like) instead of computing; set per child process.
static SLOW_IO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn slow_batcher() -> DigitBatcher {
    DigitBatcher {
        cost: Some(Duration::from_millis(2)),
        io: SLOW_IO.load(std::sync::atomic::Ordering::Relaxed),
    }
}

training! {
    /// The seed task; `epochs` is set per benchmark task (3 or 300).
    name: SeedRun,
    model: Mlp = Mlp::new(3, device),
    step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
    optimizer: sgd(lr = 0.1),
    epochs: 3,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
}

training! {
    /// 10 classes, 784 features, MLP 784→256→10: compute dominates.
    name: MediumRun,
    model: Medium = Medium::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: DigitBatcher::default(), batch_size: 64 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
}

training! {
    /// The medium task with a batcher that costs 2 ms per batch.
    name: SlowLoaderRun,
    model: Medium = Medium::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: slow_batcher(), batch_size: 64 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
}

const TASKS: [&str; 4] = ["small", "small-long", "medium", "loader-bound"];

fn variants(task: &str) -> &'static [&'static str] {
    match task {
        "medium" => &["hand", "ours", "learner", "hand+malloc", "ours-untuned"],
        "loader-bound" => &["ours-w0", "ours-w2", "compute-only", "io-w0", "io-w2"],
        _ => &["hand", "ours", "learner", "ours-nockpt"],
    }
}

/// Runs one task with one variant in this process; returns the losses and step count.
fn train(task: &str, variant: &str, dir: &Path) -> Result<Trained, String> {
    let epochs = if task == "small-long" { 300 } else { 3 };
    let quiet = |o: &mut FitOptions| o.quiet = true;
    let ours = |report: Result<FitReport<_>, FitError>| -> Result<Trained, String> {
        let report = report.map_err(|e| e.to_string())?;
        let losses = report.history.train_losses();
        Ok(Trained {
            steps: losses.len(),
            losses,
        })
    };
    let ours_medium = |report: Result<FitReport<MediumRunModel>, FitError>| {
        let report = report.map_err(|e| e.to_string())?;
        let losses = report.history.train_losses();
        Ok(Trained {
            steps: losses.len(),
            losses,
        })
    };
    let artifacts = dir.to_string_lossy().into_owned();
    let seed_shape = Shape {
        epochs,
        batch_size: 16,
        lr: 0.1,
        adam: false,
    };
    let medium_shape = Shape {
        epochs: 2,
        batch_size: 64,
        lr: 1e-3,
        adam: true,
    };
    let device = Device::flex();
    match (task, variant) {
        ("small" | "small-long", "hand") => Ok(variants::hand(
            &seed_shape,
            Mlp::new(3, &device.clone().autodiff()),
            Mlp::forward_classification,
            samples(0..96),
            samples(96..120),
            SampleBatcher,
        )),
        ("small" | "small-long", "ours" | "ours-nockpt") => {
            dsl_runtime::cli::tune_allocator();
            let defaults = SeedRun::config();
            let config = SeedRunConfig {
                epochs,
                artifacts,
                checkpoint: defaults.checkpoint.clone().filter(|_| variant == "ours"),
                ..defaults
            };
            ours(SeedRun::with_options(config, &device, quiet))
        }
        ("small" | "small-long", "learner") => Ok(variants::learner(
            &seed_shape,
            Mlp::new(3, &device.clone().autodiff()),
            samples(0..96),
            samples(96..120),
            SampleBatcher,
            dir,
        )),
        ("medium", "hand" | "hand+malloc") => {
            if variant == "hand+malloc" {
                dsl_runtime::cli::tune_allocator();
            }
            let (train, valid) = medium_data();
            Ok(variants::hand(
                &medium_shape,
                Medium::new(&device.clone().autodiff()),
                Medium::forward_classification,
                train,
                valid,
                DigitBatcher::default(),
            ))
        }
        ("medium", "ours" | "ours-untuned") | ("loader-bound", "compute-only") => {
            if variant != "ours-untuned" {
                dsl_runtime::cli::tune_allocator();
            }
            let config = MediumRunConfig {
                artifacts,
                ..MediumRun::config()
            };
            ours_medium(MediumRun::with_options(config, &device, quiet))
        }
        ("medium", "learner") => {
            let (train, valid) = medium_data();
            Ok(variants::learner(
                &medium_shape,
                Medium::new(&device.clone().autodiff()),
                train,
                valid,
                DigitBatcher::default(),
                dir,
            ))
        }
        ("loader-bound", "ours-w0" | "ours-w2" | "io-w0" | "io-w2") => {
            dsl_runtime::cli::tune_allocator();
            SLOW_IO.store(
                variant.starts_with("io"),
                std::sync::atomic::Ordering::Relaxed,
            );
            let config = SlowLoaderRunConfig {
                artifacts,
                workers: if variant.ends_with("w2") { 2 } else { 0 },
                ..SlowLoaderRun::config()
            };
            let report =
                SlowLoaderRun::with_options(config, &device, quiet).map_err(|e| e.to_string())?;
            let losses = report.history.train_losses();
            Ok(Trained {
                steps: losses.len(),
                losses,
            })
        }
        _ => Err(format!("unknown task/variant {task}/{variant}")),
    }
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Child mode: `--child TASK VARIANT DIR [--losses]`.
fn child(task: &str, variant: &str, dir: &Path, record: bool) -> ExitCode {
    if task == "medium" || task == "loader-bound" {
        medium_data();
    }
    variants::RECORD.store(record, std::sync::atomic::Ordering::Relaxed);
    let started = Instant::now();
    let trained = train(task, variant, dir);
    let seconds = started.elapsed().as_secs_f64();
    match trained {
        Ok(trained) => {
            let losses = if record {
                let bits: Vec<String> = trained
                    .losses
                    .iter()
                    .map(|l| l.to_bits().to_string())
                    .collect();
                bits.join(" ")
            } else {
                String::new()
            };
            println!(
                "RESULT {task} {variant} {seconds} {} {} {losses}",
                trained.steps,
                peak_rss_kb()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// One measurement.
struct Sample {
    seconds: f64,
    /// The child process from spawn to exit: start-up, training, and waiting for files at exit.
    process_seconds: f64,
    steps: usize,
    rss_kb: u64,
}

fn measure(task: &str, variant: &str, scratch: &Path) -> Result<Sample, String> {
    let dir = scratch.join(format!("{task}-{variant}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let spawned = Instant::now();
    let out = Command::new(exe)
        .args(["--child", task, variant])
        .arg(&dir)
        .output()
        .map_err(|e| e.to_string())?;
    let process_seconds = spawned.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or_else(|| {
            format!(
                "{task}/{variant} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    Ok(Sample {
        process_seconds,
        seconds: fields[3].parse().map_err(|_| line.to_owned())?,
        steps: fields[4].parse().map_err(|_| line.to_owned())?,
        rss_kb: fields[5].parse().map_err(|_| line.to_owned())?,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn parent(iterations: usize, tasks: &[String]) -> ExitCode {
    let scratch = PathBuf::from("target/bench-runs");
    println!(
        "{:<13} {:<13} {:>10} {:>10} {:>9} {:>7} {:>7} {:>9} {:>7}",
        "task", "variant", "wall ms", "µs/step", "RSS MB", "b/a", "b/c", "proc ms", "pb/pc"
    );
    for task in tasks {
        let names = variants(task);
        let mut samples: Vec<Vec<Sample>> = names.iter().map(|_| Vec::new()).collect();
        for _ in 0..iterations {
            for (i, variant) in names.iter().enumerate() {
                match measure(task, variant, &scratch) {
                    Ok(s) => samples[i].push(s),
                    Err(err) => {
                        eprintln!("{err}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        let wall: Vec<f64> = samples
            .iter()
            .map(|s| median(s.iter().map(|x| x.seconds).collect()))
            .collect();
        let process: Vec<f64> = samples
            .iter()
            .map(|s| median(s.iter().map(|x| x.process_seconds).collect()))
            .collect();
        let index = |name: &str| names.iter().position(|n| *n == name);
        for (i, variant) in names.iter().enumerate() {
            // Ratios are printed on the rows of our loop: each against its baseline.
            let ours = match *variant {
                "ours" | "ours-w2" | "io-w2" => Some(i),
                _ => None,
            };
            let steps = samples[i][0].steps.max(1);
            let rss = median(samples[i].iter().map(|x| x.rss_kb as f64).collect()) / 1024.0;
            let ratio = |other: Option<usize>| match (ours, other) {
                (Some(b), Some(o)) if i == b => format!("{:.2}", wall[b] / wall[o]),
                _ => String::new(),
            };
            let (b_over_a, b_over_c) = match *variant {
                "ours-w2" => (ratio(index("ours-w0")), ratio(index("compute-only"))),
                "io-w2" => (ratio(index("io-w0")), ratio(index("compute-only"))),
                _ => (ratio(index("hand")), ratio(index("learner"))),
            };
            // Whole processes, ours over the Learner: what a user waits for on a short run.
            let process_ratio = match (*variant, index("learner")) {
                ("ours", Some(c)) => format!("{:.2}", process[i] / process[c]),
                _ => String::new(),
            };
            println!(
                "{:<13} {:<13} {:>10.2} {:>10.1} {:>9.1} {:>7} {:>7} {:>9.2} {:>7}",
                task,
                variant,
                wall[i] * 1e3,
                wall[i] * 1e6 / steps as f64,
                rss,
                b_over_a,
                b_over_c,
                process[i] * 1e3,
                process_ratio
            );
        }
    }
    if tasks.iter().any(|t| t == "loader-bound") {
        println!(
            "loader-bound: a 2 ms batcher that computes (ours-*) or waits (io-*); on the w2 rows b/a is workers 2 over workers 0, b/c workers 2 over compute-only"
        );
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let (Some(task), Some(variant), Some(dir)) = (args.get(1), args.get(2), args.get(3)) else {
            eprintln!("usage: bench --child TASK VARIANT DIR [--losses]");
            return ExitCode::from(2);
        };
        return child(
            task,
            variant,
            Path::new(dir),
            args.iter().any(|a| a == "--losses"),
        );
    }
    let mut iterations = 5;
    let mut tasks: Vec<String> = TASKS.iter().map(|t| (*t).to_owned()).collect();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match (arg.as_str(), rest.next()) {
            ("--iterations", Some(n)) if n.parse::<usize>().is_ok_and(|n| n > 0) => {
                iterations = n.parse().expect("checked");
            }
            ("--tasks", Some(list)) if list.split(',').all(|t| TASKS.contains(&t)) => {
                tasks = list.split(',').map(str::to_owned).collect();
            }
            _ => {
                eprintln!(
                    "usage: bench [--iterations N>0] [--tasks {}]",
                    TASKS.join(",")
                );
                return ExitCode::from(2);
            }
        }
    }
    parent(iterations, &tasks)
}
