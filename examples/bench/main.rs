//! Benchmark harness: (a) a hand-written Burn loop, (b) our `training!` experiment and (c) Burn's
//! `SupervisedTraining` (CliMetricsRenderer, default checkpointers), side by side.
//!
//! `cargo run --release -p bench --bin bench -- [--iterations N] [--tasks small,small-long,medium,large,loader-bound]`
//! `cargo run --release -p bench --bin bench -- --fingerprint`: the dataset fingerprint alone.
//! `--device NAME` runs every variant on another backend (`gpu.sh`: `cuda`, `wgpu`).
//!
//! Every measurement is a child process of its own (one task, one variant), and variants
//! alternate within each iteration, so slow drifts of the machine hit all of them alike. The
//! parent times each child from spawn to exit: the whole process (start-up, data, training,
//! files), which is what a user waits for and what the ratios (b)/(a) and (b)/(c) compare. The
//! child also times its training call alone and reads its peak RSS from `/proc/self/status`,
//! reported in one `RESULT` line, as the second set of columns.

mod tasks;
mod variants;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use burn::tensor::Device;
use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use seed::{Batch, Mlp, SampleBatcher, samples};
use tasks::{
    Cnn64, Digit, DigitBatch, DigitBatcher, Images, Medium, Wide, large_data, medium_data, pictures,
};
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

impl Classify for Wide {
    type Batch = DigitBatch;
    fn classify(&self, batch: DigitBatch) -> ClassificationOutput {
        self.forward_classification(batch)
    }
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
    /// Image-sized items (3×224×224 floats) through one linear layer: costs that grow with
    /// item size show against the hand loop.
    name: LargeRun,
    model: Wide = Wide::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: large_data().0, valid: large_data().1, batcher: DigitBatcher::default(), batch_size: 16 },
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

training! {
    /// A CNN on 64×64 images, batch 64: activations dominate its memory. Its variants train it
    /// in f32, bf16 and f16 (`--precision`) to compare peak memory.
    name: Cnn64Run,
    model: Cnn64 = Cnn64::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: {
        train: Images { offset: 0, len: 512 },
        valid: Images { offset: 512, len: 128 },
        batcher: DigitBatcher::default(),
        batch_size: 64,
    },
    optimizer: adam(lr = 1e-3),
    epochs: 1,
    metrics: [train.loss, valid.loss, valid.accuracy],
}

const TASKS: [&str; 6] = [
    "small",
    "small-long",
    "medium",
    "large",
    "loader-bound",
    "cnn64",
];

fn variants(task: &str) -> &'static [&'static str] {
    match task {
        "medium" => &[
            "hand",
            "ours",
            "learner",
            "hand+malloc",
            "ours-untuned",
            "ours-read-1",
        ],
        "large" => &["hand", "ours", "learner", "ours-nockpt"],
        "loader-bound" => &["ours-w0", "ours-w2", "compute-only", "io-w0", "io-w2"],
        "cnn64" => &["ours", "ours-bf16", "ours-f16"],
        _ => &["hand", "ours", "learner", "ours-nockpt"],
    }
}

/// ExperimentRuns one task with one variant in this process; returns the losses and step count.
fn train(task: &str, variant: &str, dir: &Path, device: &Device) -> Result<Trained, String> {
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
    let large_shape = Shape {
        batch_size: 16,
        ..medium_shape
    };
    let device = device.clone();
    match (task, variant) {
        ("small" | "small-long", "hand") => Ok(variants::hand(
            &seed_shape,
            &device,
            on(&device, |d| Mlp::new(3, d)),
            Mlp::forward_classification,
            samples(0..96),
            samples(96..120),
            SampleBatcher,
        )),
        ("small" | "small-long", "ours" | "ours-nockpt") => {
            burn_experiment::app::cli::tune_allocator();
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
            &device,
            on(&device, |d| Mlp::new(3, d)),
            samples(0..96),
            samples(96..120),
            SampleBatcher,
            dir,
        )),
        ("medium", "hand" | "hand+malloc") => {
            if variant == "hand+malloc" {
                burn_experiment::app::cli::tune_allocator();
            }
            let (train, valid) = medium_data();
            Ok(variants::hand(
                &medium_shape,
                &device,
                on(&device, Medium::new),
                Medium::forward_classification,
                train,
                valid,
                DigitBatcher::default(),
            ))
        }
        ("medium", "ours" | "ours-untuned" | "ours-read-1") | ("loader-bound", "compute-only") => {
            if variant != "ours-untuned" {
                burn_experiment::app::cli::tune_allocator();
            }
            let config = MediumRunConfig {
                artifacts,
                ..MediumRun::config()
            };
            // `ours-read-1`: the loss read every step, as before reads were deferred.
            ours_medium(MediumRun::with_options(config, &device, |o| {
                quiet(o);
                if variant == "ours-read-1" {
                    o.read_every = 1;
                }
            }))
        }
        ("medium", "learner") => {
            let (train, valid) = medium_data();
            Ok(variants::learner(
                &medium_shape,
                &device,
                on(&device, Medium::new),
                train,
                valid,
                DigitBatcher::default(),
                dir,
            ))
        }
        ("large", "hand") => {
            let (train, valid) = large_data();
            Ok(variants::hand(
                &large_shape,
                &device,
                on(&device, Wide::new),
                Wide::forward_classification,
                train,
                valid,
                DigitBatcher::default(),
            ))
        }
        ("large", "ours" | "ours-nockpt") => {
            burn_experiment::app::cli::tune_allocator();
            let defaults = LargeRun::config();
            let config = LargeRunConfig {
                artifacts,
                checkpoint: defaults.checkpoint.clone().filter(|_| variant == "ours"),
                ..defaults
            };
            let report =
                LargeRun::with_options(config, &device, quiet).map_err(|e| e.to_string())?;
            let losses = report.history.train_losses();
            Ok(Trained {
                steps: losses.len(),
                losses,
            })
        }
        ("large", "learner") => {
            let (train, valid) = large_data();
            Ok(variants::learner(
                &large_shape,
                &device,
                on(&device, Wide::new),
                train,
                valid,
                DigitBatcher::default(),
                dir,
            ))
        }
        ("loader-bound", "ours-w0" | "ours-w2" | "io-w0" | "io-w2") => {
            burn_experiment::app::cli::tune_allocator();
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
        ("cnn64", "ours" | "ours-bf16" | "ours-f16") => {
            burn_experiment::app::cli::tune_allocator();
            let precision = match variant {
                "ours-bf16" => burn_experiment::Precision::Bf16,
                "ours-f16" => burn_experiment::Precision::F16,
                _ => burn_experiment::Precision::F32,
            };
            let config = Cnn64RunConfig {
                artifacts,
                precision,
                ..Cnn64Run::config()
            };
            let report =
                Cnn64Run::with_options(config, &device, quiet).map_err(|e| e.to_string())?;
            let losses = report.history.train_losses();
            Ok(Trained {
                steps: losses.len(),
                losses,
            })
        }
        _ => Err(format!("unknown task/variant {task}/{variant}")),
    }
}

/// A baseline's model as `training!` builds a run's: drawn on the CPU, then moved to
/// `device`, so that every variant starts from the same weights on any backend.
fn on<M: burn::module::Module + 'static>(device: &Device, build: impl FnOnce(&Device) -> M) -> M {
    let device = device.clone().autodiff();
    let built = build(&burn_experiment::model::placement::init_device(&device));
    burn_experiment::model::placement::to_run_device(built, &device)
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

/// Child mode: `--child TASK VARIANT DIR [--losses] [--device NAME]`.
fn child(task: &str, variant: &str, dir: &Path, record: bool, device: &Device) -> ExitCode {
    if task == "medium" || task == "loader-bound" {
        medium_data();
    }
    if task == "large" {
        large_data();
    }
    variants::RECORD.store(record, std::sync::atomic::Ordering::Relaxed);
    let started = Instant::now();
    let trained = train(task, variant, dir, device);
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

fn measure(task: &str, variant: &str, scratch: &Path, device: &str) -> Result<Sample, String> {
    let dir = scratch.join(format!("{task}-{variant}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let spawned = Instant::now();
    let out = Command::new(exe)
        .args(["--child", task, variant])
        .arg(&dir)
        .args(["--device", device])
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

fn parent(iterations: usize, tasks: &[String], device: &str) -> ExitCode {
    let scratch = PathBuf::from("target/bench-runs");
    println!("device: {device}");
    println!(
        "{:<13} {:<13} {:>9} {:>6} {:>6} {:>9} {:>6} {:>6} {:>9} {:>7}",
        "task",
        "variant",
        "proc ms",
        "b/a",
        "b/c",
        "train ms",
        "tb/ta",
        "tb/tc",
        "µs/step",
        "RSS MB"
    );
    for task in tasks {
        let names = variants(task);
        let mut samples: Vec<Vec<Sample>> = names.iter().map(|_| Vec::new()).collect();
        for _ in 0..iterations {
            for (i, variant) in names.iter().enumerate() {
                match measure(task, variant, &scratch, device) {
                    Ok(s) => samples[i].push(s),
                    Err(err) => {
                        eprintln!("{err}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        let train: Vec<f64> = samples
            .iter()
            .map(|s| median(s.iter().map(|x| x.seconds).collect()))
            .collect();
        let process: Vec<f64> = samples
            .iter()
            .map(|s| median(s.iter().map(|x| x.process_seconds).collect()))
            .collect();
        let index = |name: &str| names.iter().position(|n| *n == name);
        for (i, variant) in names.iter().enumerate() {
            // Ratios are printed on the rows of our loop, each against its baseline: whole
            // processes first, then the training calls alone.
            let ours = matches!(*variant, "ours" | "ours-w2" | "io-w2");
            let steps = samples[i][0].steps.max(1);
            let rss = median(samples[i].iter().map(|x| x.rss_kb as f64).collect()) / 1024.0;
            let (a, c) = match *variant {
                "ours-w2" => (index("ours-w0"), index("compute-only")),
                "io-w2" => (index("io-w0"), index("compute-only")),
                _ => (index("hand"), index("learner")),
            };
            let ratio = |times: &[f64], other: Option<usize>| match (ours, other) {
                (true, Some(o)) => format!("{:.2}", times[i] / times[o]),
                _ => String::new(),
            };
            println!(
                "{:<13} {:<13} {:>9.2} {:>6} {:>6} {:>9.2} {:>6} {:>6} {:>9.1} {:>7.1}",
                task,
                variant,
                process[i] * 1e3,
                ratio(&process, a),
                ratio(&process, c),
                train[i] * 1e3,
                ratio(&train, a),
                ratio(&train, c),
                train[i] * 1e6 / steps as f64,
                rss,
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

/// A dataset of `len` items that are clones of a few prebuilt ones (index modulo their number):
/// each `get` costs what an in-memory dataset's does, without holding `len` items in memory.
struct Repeated<I> {
    items: Vec<I>,
    len: usize,
}

impl<I: Clone + Send + Sync> burn::data::dataset::Dataset<I> for Repeated<I> {
    fn get(&self, index: usize) -> Result<I, burn::data::dataset::DatasetError> {
        Ok(self.items[index % self.items.len()].clone())
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// `--fingerprint`: the dataset fingerprint a run takes before its first step, alone, on the
/// medium task's training split and on 10,000 image-sized items, read as `Debug` text (the
/// benchmark's item type) and as values (what `#[derive(Batch)]` samples offer). Medians of 7.
// The probe's references pick how items are read (as in `training!`'s expansion); on these
// concrete types clippy sees only the borrows.
#[allow(clippy::needless_borrow)]
fn fingerprints() -> ExitCode {
    use burn_experiment::provenance::{ByDebug as _, ByValues as _, Probe};
    let time = |f: &dyn Fn() -> burn_experiment::provenance::DataFingerprint| {
        let runs: Vec<f64> = (0..7)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(f());
                start.elapsed().as_secs_f64()
            })
            .collect();
        median(runs) * 1e3
    };
    let (medium, _) = medium_data();
    let built = pictures(0..16);
    let pictures: Vec<Digit> = (0..16)
        .map(|k| burn::data::dataset::Dataset::get(&built, k).expect("in memory"))
        .collect();
    let large = Repeated {
        items: pictures.clone(),
        len: 10_000,
    };
    let large_values = Repeated {
        items: pictures.into_iter().map(|d| d.x).collect::<Vec<Vec<f32>>>(),
        len: 10_000,
    };
    println!("{:<46} {:>8}", "dataset", "ms");
    let rows: [(&str, f64); 3] = [
        (
            "medium train: 8,192 items of 784 floats, Debug",
            time(&|| (&&&Probe(&*medium)).fingerprint()),
        ),
        (
            "large: 10,000 items of 150,528 floats, Debug",
            time(&|| (&&&Probe(&large)).fingerprint()),
        ),
        (
            "large: 10,000 items of 150,528 floats, values",
            time(&|| (&&&Probe(&large_values)).fingerprint()),
        ),
    ];
    for (name, ms) in rows {
        println!("{name:<46} {ms:>8.2}");
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--device NAME` (`--device`'s spellings; `flex` by default), for the parent and its
    // children alike: `gpu.sh` runs the tasks on `cuda` and `wgpu`.
    let mut device_name = "flex".to_owned();
    if let Some(at) = args.iter().position(|a| a == "--device") {
        let Some(name) = args.get(at + 1).cloned() else {
            eprintln!("usage: bench ... --device NAME");
            return ExitCode::from(2);
        };
        args.drain(at..at + 2);
        device_name = name;
    }
    let device = match burn_experiment::config::device::parse(&device_name) {
        Ok(device) => device,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(2);
        }
    };
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
            &device,
        );
    }
    if args.first().map(String::as_str) == Some("--fingerprint") {
        return fingerprints();
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
                    "usage: bench [--iterations N>0] [--tasks {}] [--device NAME]",
                    TASKS.join(",")
                );
                return ExitCode::from(2);
            }
        }
    }
    parent(iterations, &tasks, &device_name)
}
