//! `<Name>::cli()`: the command line of an experiment.
//!
//! The experiment's config (the serde struct `training!` generates) is resolved in layers: the
//! macro's values, then `--config FILE` (a saved `config.json` re-runs that run), then the
//! typed flags, then every `--set key=value`. A key that does not exist or a value of the wrong
//! type is an error naming the key and what it accepts, and the process exits with code 2.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

mod allocator;
mod experiment;
#[cfg(feature = "wgpu")]
mod headless;

use crate::app::sweep::Plan;
pub use crate::error::CliError;
use crate::{config::options::FitOptions, error::FitError};
pub use allocator::tune_allocator;
pub use experiment::{Experiment, run};

/// The flags every experiment accepts.
#[derive(Parser, Debug, Default)]
#[command(about = "Train this experiment; every flag overrides a value written in `training!`.")]
pub struct Args {
    /// Last epoch to train.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Base learning rate.
    #[arg(long)]
    pub lr: Option<f64>,
    /// Samples per batch.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Seed of the device RNG, set before the model is built.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Threads building batches ahead of training.
    #[arg(long)]
    pub workers: Option<usize>,
    /// The device to train on: `flex` (Burn's CPU backend, the default), `cpu`, `ndarray`,
    /// `cuda`, `cuda:N`, `wgpu`, `wgpu:N`; each but `flex` needs its cargo feature.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// Root folder of run directories.
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    /// Devices to train on; more than one runs Burn's multi-device engine (experiments with a
    /// `strategy` or `devices` key).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub devices: Option<u64>,
    /// The run to resume or load: `run-3` or `3` (default: a new run, or the newest to resume).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Start a fresh run from these weights (a .safetensors file, or a run's
    /// checkpoint/model-N.bpk).
    #[arg(long, value_name = "FILE")]
    pub init_from: Option<PathBuf>,
    /// Continue from a checkpoint of the newest run (or `--run`): `latest` or an epoch number.
    #[arg(long, value_name = "latest|N", value_parser = parse_resume)]
    pub resume: Option<Value>,
    /// Resume even though settings differ from the checkpoint's (recorded in config.json).
    #[arg(long)]
    pub resume_changed: bool,
    /// Start from a saved `config.json` (or a JSON file of config keys).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Set any config key, e.g. `--set grad_accumulation=2` or `--set optimizer.beta_1=0.95`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the resolved config as JSON and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Smoke test: one batch of each split, one epoch, no file written.
    #[arg(long)]
    pub fast_dev_run: bool,
    /// Learning-rate range test: train from fresh weights with the rate rising exponentially
    /// from --find-lr-from to --find-lr-to over --find-lr-steps steps (stopping once the loss
    /// diverges), write lr-find.csv and lr-find.svg into `<name>/lr-find/run-<N>`, and print the
    /// rate at the steepest fall of the loss.
    #[arg(long, conflicts_with_all = ["test_only", "predict", "export", "verify", "resume", "fast_dev_run", "mlflow_sync"])]
    pub find_lr: bool,
    /// The range test's first rate.
    #[arg(long, value_name = "LR", default_value_t = 1e-7, requires = "find_lr")]
    pub find_lr_from: f64,
    /// The rate the range test's last step reaches.
    #[arg(long, value_name = "LR", default_value_t = 10.0, requires = "find_lr")]
    pub find_lr_to: f64,
    /// The range test's training steps (batches).
    #[arg(long, value_name = "N", default_value_t = 100, requires = "find_lr")]
    pub find_lr_steps: usize,
    /// Train on at most N batches per epoch.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit_train_batches: Option<u64>,
    /// Validate on at most N batches per epoch.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit_valid_batches: Option<u64>,
    /// Read training losses from the device N steps at a time, in one transfer (default 32;
    /// 1: every step). Every step still reaches metrics.csv; the progress bar moves at reads.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub read_every: Option<u64>,
    /// The float type of each step's forward and backward passes and of validation: `f32`,
    /// `bf16`, or `f16` (loss-scaled); the weights the optimizer steps, its state and the
    /// checkpoints stay f32. With `--export`, the type the weights are written in.
    #[arg(long, value_name = "f32|bf16|f16", value_parser = ["f32", "bf16", "f16"])]
    pub precision: Option<String>,
    /// No progress bar, no epoch lines, no summary.
    #[arg(long)]
    pub quiet: bool,
    /// Train nothing: measure the test split on the best checkpoint of the newest run (or
    /// `--run`), and print the values.
    #[arg(long, conflicts_with_all = ["predict", "export"])]
    pub test_only: bool,
    /// Train nothing: write `predictions.csv` into the newest run (or `--run`), from its best
    /// checkpoint over the test split (else the validation split).
    #[arg(long, conflicts_with = "export")]
    pub predict: bool,
    /// Rerun the run in DIR from its config.json (in a scratch folder, removed afterwards) and
    /// compare every row of its metrics.csv bit for bit: "reproduced", or each row that differs
    /// and every recorded fact (versions, git commit, data, settings) that differs.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["test_only", "predict", "export", "resume", "fast_dev_run", "config"])]
    pub verify: Option<PathBuf>,
    /// Sweep a config key over values, e.g. `--sweep lr=0.001,0.01` (repeatable; replaces
    /// the values `sweep:` gives that key). Each combination is a trial with its own run.
    #[arg(long = "sweep", value_name = "KEY=V1,V2")]
    pub sweep: Vec<String>,
    /// Run the sweep's or study's trials as N processes at once (a study's trial K is drawn
    /// from trials 0 to K-N alone, so the same seed draws the same trials whatever N is).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    /// Rank the sweep's trials by this recorded metric, e.g. `valid.accuracy` (default: the
    /// metric `best(..)` watches, else `valid.loss`).
    #[arg(long, value_name = "SPLIT.METRIC")]
    pub rank_by: Option<String>,
    /// Run only trial K of the sweep or study (from 0), e.g. one task of a cluster's job
    /// array (a study's: with the array's `--jobs N`).
    #[arg(long, value_name = "K")]
    pub trial: Option<usize>,
    /// Search a config key over a distribution, e.g. `--search lr=log_uniform(1e-4,1e-1)`,
    /// `uniform(A,B)`, `int(A,B)` or `choice(A,B,..)` (repeatable; replaces what `search:`
    /// gives that key). Each trial draws its values and trains its own run.
    #[arg(long = "search", value_name = "KEY=DIST")]
    pub search: Vec<String>,
    /// Trials of the study (default: its `trials`, else 20); a larger budget extends it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub trials: Option<u64>,
    /// The recorded metric M the study optimizes and its direction, e.g. `max(valid.accuracy)`
    /// (default: its `objective`, else `min(valid.loss)`).
    #[arg(long, value_name = "min|max(M)")]
    pub objective: Option<String>,
    /// How the study draws trials (default: its `sampler`, else `tpe`).
    #[arg(long, value_name = "NAME", value_parser = ["tpe", "random"])]
    pub sampler: Option<String>,
    /// How the study stops bad trials at an epoch's end (default: its `prune`, else `none`).
    #[arg(long, value_name = "NAME", value_parser = ["none", "median", "asha"])]
    pub prune: Option<String>,
    /// The study's seed (default: its `seed`, else 0).
    #[arg(long, value_name = "N")]
    pub search_seed: Option<u64>,
    /// Train the study's pruned trial K on from its checkpoint to its last epoch.
    #[arg(long, value_name = "K", conflicts_with = "trial")]
    pub promote: Option<usize>,
    /// The study's trial this process trains, set by [`main`] from `--trial`: told each
    /// epoch's objective, and recorded when training ends.
    #[arg(skip)]
    pub study_trial: Option<std::sync::Arc<std::sync::Mutex<crate::app::search::TrialRun>>>,
    /// The trial this process trains, set by [`main`] from `--trial`: recorded in the sweep
    /// when training ends.
    #[arg(skip)]
    pub sweep_trial: Option<crate::app::sweep::Trial>,
    /// Train nothing: save the best checkpoint of the newest run (or `--run`) as a
    /// safetensors file.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Train nothing: send what the MLflow server lacks of the newest run (or `--run`): its
    /// values, params, files and status, to `MLFLOW_TRACKING_URI` (else the server the run
    /// recorded).
    #[arg(long)]
    pub mlflow_sync: bool,
    /// After training, write the weights `load_best` picks as `model.safetensors` in the run
    /// directory and log them to MLflow as an artifact of the run.
    #[arg(long, conflicts_with_all = ["test_only", "predict", "export", "verify", "mlflow_sync"])]
    pub mlflow_log_model: bool,
}

fn parse_resume(text: &str) -> Result<Value, String> {
    match text {
        "latest" => Ok(Value::from("latest")),
        n => match n.parse::<usize>() {
            Ok(epoch) if epoch > 0 => Ok(serde_json::json!({ "epoch": epoch })),
            _ => Err(format!(
                "expected `latest` or an epoch number (1, 2, ...), got `{n}`"
            )),
        },
    }
}

impl Args {
    /// Whether the command reads a saved run, or trains nothing kept (`--fast-dev-run`): a
    /// sweep or a study trains, so these ignore the grid or the space.
    fn reads_a_run(&self) -> bool {
        self.test_only
            || self.predict
            || self.mlflow_sync
            || self.export.is_some()
            || self.verify.is_some()
            || self.fast_dev_run
            || self.find_lr
    }

    /// The rates `--find-lr` sweeps.
    pub fn lr_range(&self) -> crate::app::lr_find::Range {
        crate::app::lr_find::Range {
            from: self.find_lr_from,
            to: self.find_lr_to,
            steps: self.find_lr_steps,
        }
    }

    /// The run adjustments these flags ask for, applied to the options `training!` built.
    pub fn adjust(&self, options: &mut FitOptions) {
        if self.fast_dev_run {
            *options = std::mem::take(options).fast_dev_run();
        }
        if let Some(n) = self.limit_train_batches {
            options.limit_train_batches = Some(n as usize);
        }
        if let Some(n) = self.limit_valid_batches {
            options.limit_valid_batches = Some(n as usize);
        }
        if let Some(n) = self.read_every {
            options.read_every = n as usize;
        }
        options.quiet |= self.quiet;
        options.resume_changed |= self.resume_changed;
        if options.mlflow.is_none() {
            options.mlflow = crate::output::mlflow::Mlflow::from_env();
        }
    }

    /// `defaults` with the file, flags and `--set`s applied.
    ///
    /// Only the conversions between `C` and JSON are generic; the layering is done on JSON
    /// values by a non-generic function, compiled once here rather than in every experiment
    /// crate.
    pub fn resolve<C: Serialize + DeserializeOwned>(&self, defaults: &C) -> Result<C, CliError> {
        let defaults = serde_json::to_value(defaults).map_err(|e| CliError(e.to_string()))?;
        let layers = self.layers(&defaults)?;
        serde_json::from_value(layers.config.clone()).map_err(|error| {
            // serde quotes the value it refused: a long one is cut.
            let error = crate::read::shorten(&error.to_string()).into_owned();
            // The first assignment that fails on its own names the key; with several bad ones
            // the user fixes them one run at a time, as with any compiler.
            let culprit = layers
                .assignments
                .iter()
                .find(|a| fails_alone::<C>(&defaults, &a.key, &a.value, a.source));
            match culprit {
                Some(a) => CliError(format!(
                    "{}: invalid value for config key `{}`: {}{}",
                    a.source,
                    a.key,
                    error,
                    form_of(a.key.as_str(), at(&defaults, &a.key))
                )),
                None => CliError(format!("invalid config: {error}")),
            }
        })
    }

    /// The config after every layer, and the assignments that made it.
    fn layers(&self, defaults: &Value) -> Result<Layers, CliError> {
        let mut layers = Layers {
            config: defaults.clone(),
            assignments: Vec::new(),
        };
        // `--verify DIR` reruns with DIR's saved config.
        let file = self
            .config
            .clone()
            .or_else(|| self.verify.as_ref().map(|dir| dir.join("config.json")));
        if let Some(path) = &file {
            let text = crate::read::bytes(path, crate::read::CONFIG)
                .map_err(|e| CliError(format!("cannot read --config {}: {e}", path.display())))?;
            let file = crate::read::json(&text)
                .map_err(|e| CliError(format!("--config {} is not JSON: {e}", path.display())))?;
            // A saved run's config.json keeps the experiment's values under `hyperparameters`.
            let values = match file {
                Value::Object(mut map) if map.contains_key("hyperparameters") => {
                    map.remove("hyperparameters").unwrap_or_default()
                }
                other => other,
            };
            let Value::Object(values) = values else {
                return Err(CliError(format!(
                    "--config {} must hold a JSON object of config keys",
                    path.display()
                )));
            };
            for (key, value) in values {
                layers.set(key, value, "--config")?;
            }
        }
        // JSON has no NaN or infinity (serde_json makes them `null`, and the error would say
        // "invalid type: null").
        if let Some(lr) = self.lr.filter(|lr| !lr.is_finite()) {
            return Err(CliError(format!(
                "--lr {lr}: the learning rate must be {}, e.g. `--lr 1e-3`",
                burn_experiment_vocabulary::bounds::of("lr").describe()
            )));
        }
        let typed = [
            ("epochs", self.epochs.map(Value::from), "--epochs"),
            ("lr", self.lr.map(Value::from), "--lr"),
            (
                "batch_size",
                self.batch_size.map(Value::from),
                "--batch-size",
            ),
            ("seed", self.seed.map(Value::from), "--seed"),
            ("workers", self.workers.map(Value::from), "--workers"),
            ("devices", self.devices.map(Value::from), "--devices"),
            ("device", self.device.clone().map(Value::from), "--device"),
            (
                "artifacts",
                self.artifacts
                    .as_ref()
                    .map(|p| Value::from(p.to_string_lossy().into_owned())),
                "--artifacts",
            ),
            ("run", self.run.clone().map(Value::from), "--run"),
            (
                "init_from",
                self.init_from
                    .as_ref()
                    .map(|p| Value::from(p.to_string_lossy().into_owned())),
                "--init-from",
            ),
            ("resume", self.resume.clone(), "--resume"),
            (
                "precision",
                self.precision.clone().map(Value::from),
                "--precision",
            ),
        ];
        for (key, value, flag) in typed {
            if let Some(value) = value {
                if defaults.get(key).is_none() {
                    if let Some(fix) = defaults.as_object().and_then(where_the_rate_is)
                        && key == "lr"
                    {
                        return Err(CliError(format!("{flag}: {fix}")));
                    }
                    return Err(CliError(format!(
                        "{flag}: this experiment has no `{key}` key; add `{key}: ..` to its \
                         `training!` block to set it from the command line (the keys reference \
                         gives its form)"
                    )));
                }
                layers.set(key.to_owned(), value, flag)?;
            }
        }
        for assignment in &self.set {
            let Some((key, text)) = assignment.split_once('=') else {
                return Err(CliError(format!(
                    "--set expects KEY=VALUE, got `{}`",
                    crate::read::shorten(assignment)
                )));
            };
            let key = key.trim();
            // JSON whose object names a key twice is refused, as in a config file.
            if serde_json::from_str::<Value>(text).is_ok()
                && let Err(e) = crate::read::json(text.as_bytes())
            {
                return Err(CliError(format!("--set {key}: {e}")));
            }
            let value = set_value(text, at(&layers.config, key));
            layers.set(key.to_owned(), value, "--set")?;
        }
        Ok(layers)
    }
}

/// A config being resolved: its JSON and every assignment applied to it, in order.
struct Layers {
    config: Value,
    assignments: Vec<Assignment>,
}

/// The value at dot-separated `path` of `config`, if there is one.
fn at<'a>(config: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(config, |node, part| node.get(part))
}

/// A `--set` value: JSON where it parses (numbers, booleans, null, objects), a string
/// otherwise. Where the config holds a structured value (`lr_schedule`, `checkpoint`,
/// `optimizer`, ..), `training!`'s `none` is JSON's `null` and a bare name (`cosine`) is the
/// variant of that name (`{"kind": "cosine"}`), whose missing fields serde then names.
fn set_value(text: &str, current: Option<&Value>) -> Value {
    if let Ok(value) = serde_json::from_str(text) {
        return value;
    }
    let structured = current.is_some_and(|c| c.is_object() || c.is_array() || c.is_null());
    let word = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match current {
        _ if structured && text == "none" => Value::Null,
        Some(Value::Object(map)) if word && map.contains_key("kind") => {
            serde_json::json!({ "kind": text })
        }
        _ => Value::from(text),
    }
}

/// For a key whose config value is structured, its form: serde's own words ("internally
/// tagged enum") do not say what to write.
fn form_of(key: &str, current: Option<&Value>) -> String {
    match current {
        Some(value @ (Value::Object(_) | Value::Array(_))) => format!(
            "\nhelp: `{key}` is JSON in the config, as in `config.json`; now it is {value}, so e.g. `--set '{key}={value}'`{}",
            if value.get("kind").is_some() {
                " with another `kind` and its fields"
            } else {
                ""
            }
        ),
        _ => String::new(),
    }
}

/// One `key = value` from a config file, a flag or a `--set`.
struct Assignment {
    key: String,
    value: Value,
    source: &'static str,
}

impl Layers {
    fn set(&mut self, key: String, value: Value, source: &'static str) -> Result<(), CliError> {
        set(&mut self.config, &key, value.clone(), source)?;
        self.assignments.push(Assignment { key, value, source });
        Ok(())
    }
}

/// Whether setting `key` to `value` in `base`, and nothing else, makes a config that does not
/// deserialize as `C`: which of several assignments an error message should name.
fn fails_alone<C: DeserializeOwned>(base: &Value, key: &str, value: &Value, source: &str) -> bool {
    let mut alone = base.clone();
    set(&mut alone, key, value.clone(), source).is_ok()
        && serde_json::from_value::<C>(alone).is_err()
}

/// That `path` names a key of `config` as `set` finds it (with its other spellings), or the
/// error `set` gives.
pub(crate) fn check_key(config: &Value, path: &str, source: &str) -> Result<(), CliError> {
    set(&mut config.clone(), path, Value::Null, source)
}

/// Sets `path` (dot-separated) in `config`; the key must exist.
fn set(config: &mut Value, path: &str, value: Value, source: &str) -> Result<(), CliError> {
    let mut node = config;
    let whole = path;
    let path = &*crate::read::shorten(path);
    let mut parts = whole.split('.').peekable();
    while let Some(part) = parts.next() {
        let Value::Object(map) = node else {
            return Err(CliError(format!(
                "{source}: `{path}` goes inside a value that has no keys"
            )));
        };
        // Spellings `training!` also accepts for an optimizer argument (`adam(beta1 = ..)`).
        let part = match burn_experiment_vocabulary::optimizer::aliases()
            .find(|(alias, _)| *alias == part)
        {
            Some((alias, name)) if !map.contains_key(part) && map.contains_key(name) => {
                say!("note: {source}: `{alias}` is spelt `{name}` in the config; using `{name}`");
                name
            }
            _ => part,
        };
        if !map.contains_key(part) {
            return Err(unknown_key(source, path, &crate::read::shorten(part), map));
        }
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return Ok(());
        }
        node = map.get_mut(part).expect("checked above");
    }
    Err(CliError(format!("{source}: empty config key")))
}

fn unknown_key(source: &str, path: &str, part: &str, map: &Map<String, Value>) -> CliError {
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    let place = if path == part {
        String::new()
    } else {
        format!(" (no `{part}` there)")
    };
    // Another trainer's word, answered with ours where ours is a key here (an SGD has no
    // `epsilon` to offer for `eps`).
    use burn_experiment_vocabulary::synonyms::{KEYS, OPTIMIZER_ARGS, find};
    let synonym = find(KEYS, part)
        .or_else(|| find(OPTIMIZER_ARGS, part))
        .filter(|s| s.words().all(|ours| keys.contains(&ours)));
    let rates = ["lr", "learning_rate"]
        .contains(&part)
        .then(|| where_the_rate_is(map))
        .flatten();
    let fix = match (
        rates,
        synonym,
        burn_experiment_vocabulary::closest(part, &keys),
    ) {
        (Some(fix), ..) => fix,
        (None, Some(synonym), _) => synonym.help(),
        (None, None, Some(close)) => format!("did you mean `{close}`?"),
        (None, None, None) => format!("the keys are: {}", keys.join(", ")),
    };
    CliError(format!(
        "{source}: unknown config key `{path}`{place}; {fix}"
    ))
}

/// Parses the process's arguments and runs `train` with the resolved config; the exit code is
/// 0 on success, 2 for a command-line mistake, 130 when interrupted, 1 for any other failure.
/// Calls [`tune_allocator`] first (and, with wgpu, quiets the Vulkan loader of a headless
/// process): `main` owns the process.
///
/// With a sweep (`plan`'s grid, or `--sweep`), a plain training command runs every trial as a
/// child process (`--jobs N` at once) and prints the ranked table; `--trial K` trains trial K.
pub fn main<C, F>(defaults: C, plan: Plan, train: F) -> ExitCode
where
    C: Serialize + DeserializeOwned,
    F: FnOnce(C, &Args) -> Result<PathBuf, FitError>,
{
    tune_allocator();
    #[cfg(feature = "wgpu")]
    headless::quiet_headless_vulkan();
    let mut args = match serde_json::to_value(&defaults)
        .map_err(|_| ExitCode::FAILURE)
        .and_then(|defaults| parse_args(&defaults))
    {
        Ok(args) => args,
        Err(code) => return code,
    };
    let config = match args.resolve(&defaults) {
        Ok(config) => config,
        Err(err) => {
            say!("error: {err}");
            return ExitCode::from(2);
        }
    };
    if args.print_config {
        return print_config(serde_json::to_value(&config));
    }
    let config = match sweep(&mut args, config, plan) {
        Ok(Some(config)) => config,
        Ok(None) => return ExitCode::SUCCESS,
        Err(Swept::Usage(err)) => {
            say!("error: {err}");
            return ExitCode::from(2);
        }
        Err(Swept::Failed(trials)) => {
            say!("error: trials {trials:?} failed; rerun one with `--trial K` to see why");
            return ExitCode::FAILURE;
        }
        Err(Swept::Interrupted) => {
            say!("interrupted: the same command resumes it");
            return ExitCode::from(130);
        }
    };
    let outcome = train(config, &args);
    report(&args, outcome)
}

/// How a sweep ended without training in this process.
enum Swept {
    Usage(CliError),
    Failed(Vec<usize>),
    /// A study or a sweep stopped by Ctrl-C or SIGTERM.
    Interrupted,
}

impl From<CliError> for Swept {
    fn from(err: CliError) -> Self {
        Self::Usage(err)
    }
}

/// The config this process trains: `config` itself without a sweep, trial K's with
/// `--trial K`; `None` once this process ran the whole sweep as children.
fn sweep<C: Serialize + DeserializeOwned>(
    args: &mut Args,
    config: C,
    plan: Plan,
) -> Result<Option<C>, Swept> {
    let json = serde_json::to_value(&config).map_err(|e| CliError::new(e.to_string()))?;
    let flags = crate::app::search::Flags {
        search: &args.search,
        trials: args.trials.map(|n| n as usize),
        objective: args.objective.as_deref(),
        sampler: args.sampler.as_deref(),
        prune: args.prune.as_deref(),
        seed: args.search_seed,
        jobs: args.jobs.unwrap_or(1) as usize,
    };
    if let Some((definition, trials)) =
        crate::app::search::definition(plan.declared(), &flags, &json, plan.recorded_metrics())?
    {
        return study(args, (config, &json), &plan, definition, trials);
    }
    if args.promote.is_some() {
        return Err(CliError::new(
            "--promote trains a study's pruned trial: add `search: { .. }` or `--search KEY=DIST`",
        )
        .into());
    }
    if args.jobs.is_some() && args.trial.is_some() {
        return Err(CliError::new(
            "--jobs runs a sweep's trials and --trial one of them: give one of the two",
        )
        .into());
    }
    let plan = plan.with_flags(&args.sweep)?;
    let plan = match &args.rank_by {
        Some(metric) => plan.rank_by(metric)?,
        None => plan,
    };
    // A sweep trains; the commands that read a saved run ignore the grid.
    let reads_a_run = args.reads_a_run();
    if crate::parallel::group().is_some() {
        let alone = match () {
            _ if args.find_lr => Some(
                "--find-lr trains a short range test in one process, whose suggestion holds for the data-parallel run",
            ),
            _ if reads_a_run && !args.fast_dev_run => {
                Some("--test-only, --predict, --export and --verify read a saved run")
            }
            _ if !plan.is_empty() && args.trial.is_none() => {
                Some("a sweep starts its trials as child processes")
            }
            _ => None,
        };
        if let Some(why) = alone {
            return Err(CliError::new(format!(
                "{why}: start it without mpirun (data-parallel training is for training one run, or one trial with --trial K)"
            ))
            .into());
        }
    }
    if plan.is_empty() || reads_a_run {
        if args.trial.is_some() || args.jobs.is_some() || (!args.sweep.is_empty() && reads_a_run) {
            return Err(CliError::new(if plan.is_empty() {
                "--trial and --jobs need a sweep: add `sweep: { .. }` or `--sweep KEY=V1,V2`"
            } else {
                "a sweep trains: it cannot be combined with --test-only, --predict, --export, --verify or --fast-dev-run"
            })
            .into());
        }
        return Ok(Some(config));
    }
    // Every trial's config is checked before any trains: a wrong key or value fails at once.
    let trials = plan.trials();
    let mut configs = trials
        .iter()
        .map(|settings| trial_config::<C>(&json, settings, "--sweep"))
        .collect::<Result<Vec<_>, _>>()?;
    let artifacts = PathBuf::from(json["artifacts"].as_str().unwrap_or("artifacts"));
    let dir = plan.dir(&artifacts);
    match args.trial {
        Some(k) => {
            args.sweep_trial = Some(plan.trial(dir.clone(), k)?);
            // A trial an earlier process started goes on in its own run, from its checkpoint.
            match crate::app::sweep::started_run(&dir, k)? {
                Some((run, resume)) => {
                    let mut settings = trials[k].clone();
                    let from = if resume {
                        Value::from("latest")
                    } else {
                        Value::Null
                    };
                    for (key, value) in [("run", Value::from(run)), ("resume", from)] {
                        if json.get(key).is_some() {
                            settings.push((key.to_owned(), value));
                        }
                    }
                    Ok(Some(trial_config::<C>(&json, &settings, "--sweep")?))
                }
                None => Ok(Some(configs.swap_remove(k))),
            }
        }
        None => {
            // A sweep without a metric to rank by fails here, before any trial trains.
            plan.trial(dir.clone(), 0)?;
            let jobs = args.jobs.unwrap_or(1) as usize;
            say!(
                "sweep: {} trials, {jobs} at a time, in {}",
                trials.len(),
                dir.display()
            );
            let children = crate::app::sweep::child_args(std::env::args().skip(1));
            // With tracking, the sweep is a parent run and each trial a child of it.
            let parent = crate::output::mlflow::SweepParent::start(&dir);
            let env: Vec<(&str, String)> = parent.iter().map(|p| p.env()).collect();
            let (failed, interrupted) =
                crate::app::sweep::run_children(trials.len(), jobs, &dir, &children, &env)?;
            if let Some(parent) = parent {
                parent.end(failed.is_empty() && !interrupted);
            }
            match crate::app::sweep::report(&dir) {
                Ok(table) => show!("{table}"),
                Err(e) => say!("error: cannot write the sweep's tables: {e}"),
            }
            match (interrupted, failed.is_empty()) {
                (true, _) => Err(Swept::Interrupted),
                (false, true) => Ok(None),
                (false, false) => Err(Swept::Failed(failed)),
            }
        }
    }
}

/// The config of a trial: `json` with `settings` (a sweep's combination, a search's draw) set
/// from `source` (`--sweep`, `--search`); an error names the value that fails on its own, as
/// `resolve` does for `--set`.
fn trial_config<C: DeserializeOwned>(
    json: &Value,
    settings: &[(String, Value)],
    source: &str,
) -> Result<C, CliError> {
    let mut trial = json.clone();
    for (key, value) in settings {
        set(&mut trial, key, value.clone(), source)?;
    }
    serde_json::from_value::<C>(trial).map_err(|error| {
        let error = crate::read::shorten(&error.to_string()).into_owned();
        let what = source.trim_start_matches('-');
        let culprit = settings
            .iter()
            .find(|(key, value)| fails_alone::<C>(json, key, value, source));
        CliError::new(match culprit {
            Some((key, value)) => format!(
                "{what}: invalid value {} for config key `{key}`: {error}",
                crate::read::shorten(&value.to_string())
            ),
            None => format!("{what}: a trial's config is invalid: {error}"),
        })
    })
}

/// The config this process trains in a study: trial K's with `--trial K` (resumed from its
/// checkpoint when it was training as the study was killed); `None` once this process ran the
/// study's trials as children.
fn study<C: Serialize + DeserializeOwned>(
    args: &mut Args,
    (config, json): (C, &Value),
    plan: &Plan,
    definition: crate::app::search::study::Definition,
    trials: usize,
) -> Result<Option<C>, Swept> {
    use crate::app::search::{self, Prepared, TrialRun, study::Study};
    if args.reads_a_run() {
        if args.search.is_empty() && args.trial.is_none() && args.jobs.is_none() {
            return Ok(Some(config));
        }
        return Err(CliError::new(
            "a study trains: --search, --trial and --jobs cannot be combined with --test-only, --predict, --export, --verify or --fast-dev-run",
        )
        .into());
    }
    if !plan.is_empty() || !args.sweep.is_empty() {
        return Err(CliError::new(
            "an experiment searches or sweeps, not both: remove `sweep`/`--sweep`, or `search`/`--search`",
        )
        .into());
    }
    if crate::parallel::group().is_some() {
        return Err(CliError::new(
            "a study's trials train in one process each: start it without mpirun",
        )
        .into());
    }
    // Each key at both ends of its range makes a config: a wrong key or type fails at once.
    let configured = |settings: &[(String, Value)]| trial_config::<C>(json, settings, "--search");
    for param in &definition.space {
        let range = param.dist.range();
        for x in [range.start(), range.end() - range.width() * 1e-9] {
            configured(&[(param.key.clone(), param.dist.value(x))])?;
        }
    }
    let artifacts = PathBuf::from(json["artifacts"].as_str().unwrap_or("artifacts"));
    let study = Study::new(&artifacts, plan.name(), definition);
    if let Some(k) = args.trial.or(args.promote) {
        if k >= trials {
            let flag = if args.promote.is_some() {
                "--promote"
            } else {
                "--trial"
            };
            return Err(CliError::new(format!(
                "{flag} {k}: the study has trials 0 to {} (--trials {trials})",
                trials - 1
            ))
            .into());
        }
        let prepared = match args.promote {
            Some(_) => TrialRun::promote(study.clone(), k)?,
            None => TrialRun::prepare(study.clone(), k)?,
        };
        return match prepared {
            Prepared::Ended(state) => {
                say!(
                    "study: trial {k} is {} in {}: nothing to train",
                    state.as_str(),
                    study.dir.display()
                );
                Ok(None)
            }
            Prepared::Train {
                trial,
                params,
                run,
                resume,
            } => {
                // The trial's own run, resumed or started again; else a new run, whatever the
                // experiment resumes by default (`resume: latest` would continue another
                // trial's run).
                let from = if resume {
                    Value::from("latest")
                } else {
                    Value::Null
                };
                let run = run.map_or(Value::Null, Value::from);
                let mut settings = params;
                for (key, value) in [("run", run), ("resume", from)] {
                    if json.get(key).is_some() {
                        settings.push((key.to_owned(), value));
                    }
                }
                let config = configured(&settings)?;
                args.study_trial = Some(trial);
                Ok(Some(config))
            }
        };
    }
    say!(
        "study: {trials} trials, {} at a time, in {}",
        study.definition.jobs,
        study.dir.display()
    );
    let parent = crate::output::mlflow::SweepParent::start(&study.dir);
    let env: Vec<(&str, String)> = parent.iter().map(|p| p.env()).collect();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ended = search::run(&study, trials, &args, &env, parent.as_ref())?;
    if let Some(parent) = parent {
        parent.end(ended.failed.is_empty() && !ended.interrupted);
    }
    match search::report::write(&study) {
        Ok(table) => show!("{table}"),
        Err(e) => say!("error: cannot write the study's report: {e}"),
    }
    match ended {
        search::Ended {
            interrupted: true, ..
        } => Err(Swept::Interrupted),
        search::Ended { failed, .. } if !failed.is_empty() => Err(Swept::Failed(failed)),
        _ => Ok(None),
    }
}

/// The flags, `--lr` hidden from `--help` where the experiment has no one rate (several
/// optimizers: each one's is `optimizers.<name>.lr`, and `--lr` is refused saying so).
fn parse_args(defaults: &Value) -> Result<Args, ExitCode> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Args::command();
    if defaults.get("lr").is_none() {
        command = command.mut_arg("lr", |arg| arg.hide(true));
    }
    command
        .try_get_matches()
        .and_then(|matches| Args::from_arg_matches(&matches))
        .map_err(|err| {
            let _ = err.print();
            ExitCode::from(err.exit_code().clamp(0, 255) as u8)
        })
}

/// Where the rate of an experiment with no `lr` key is set: with several optimizers, each
/// one's `optimizers.<name>.lr`; with Burn's scheduler as `lr_schedule`, that scheduler. What
/// `--lr` and `--set lr=` are told; `None` for an experiment with one base rate.
fn where_the_rate_is(config: &Map<String, Value>) -> Option<String> {
    if config.get("lr_schedule").and_then(|s| s.get("kind")) == Some(&Value::from("burn")) {
        return Some(
            "this experiment's rate is set by Burn's scheduler in its `lr_schedule`, so it has \
             no `lr`: change the rate there, or build the scheduler from a hyperparameter of \
             yours (`hparams`) and set that"
                .to_owned(),
        );
    }
    let Value::Object(optimizers) = config.get("optimizers")? else {
        return None;
    };
    let keys: Vec<String> = optimizers
        .keys()
        .map(|name| format!("`optimizers.{name}.lr`"))
        .collect();
    let first = optimizers.keys().next()?;
    Some(format!(
        "with several optimizers each has its own rate: set {}, e.g. `--set optimizers.{first}.lr=1e-3`",
        keys.join(" or ")
    ))
}

fn print_config(config: serde_json::Result<Value>) -> ExitCode {
    match config.and_then(|config| serde_json::to_string_pretty(&config)) {
        Ok(json) => {
            show!("{json}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            say!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Prints how `main` ended: the run directory, or the file `--predict`/`--export` wrote.
fn report(args: &Args, outcome: Result<PathBuf, FitError>) -> ExitCode {
    let group = crate::parallel::group();
    // In a data-parallel run rank 0 reports; another rank speaks only of its own failure.
    if group.is_some_and(|g| g.rank() != 0) {
        match outcome {
            Ok(_) => return ExitCode::SUCCESS,
            Err(FitError::Interrupted { .. }) => return ExitCode::from(130),
            Err(_) => {}
        }
    }
    match outcome {
        Ok(run_dir) => {
            if args.fast_dev_run {
                say!("fast dev run passed: nothing was written");
            } else if args.predict || args.export.is_some() {
                say!("wrote {}", run_dir.display());
            } else if args.verify.is_some() {
                // The verdict is already printed.
            } else if !args.quiet {
                say!("run directory: {}", run_dir.display());
            }
            ExitCode::SUCCESS
        }
        Err(err @ FitError::Interrupted { .. }) => {
            say!("{err}");
            ExitCode::from(130)
        }
        Err(err) => {
            let code = match err {
                FitError::InvalidOption { .. }
                | FitError::Setting(_)
                | FitError::ResumeChanged { .. } => 2,
                _ => 1,
            };
            match group {
                // The other ranks wait for this one's next message: end them all.
                Some(group) => {
                    // A refusal (a setting, a resume) reaches every rank alike: rank 0 says
                    // it, and its abort ends the others before they would. A rank with an
                    // error of its own, which rank 0 does not meet, says it a moment later.
                    if group.rank() != 0 {
                        std::thread::sleep(std::time::Duration::from_secs(3));
                    }
                    say!("error (rank {} of {}): {err}", group.rank(), group.size());
                    group.abort(code)
                }
                None => {
                    say!("error: {err}");
                    ExitCode::from(code as u8)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Config {
        epochs: usize,
        lr: f64,
        seed: Option<u64>,
        resume: Option<crate::checkpoint::Resume>,
        optimizer: Optimizer,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Optimizer {
        beta_1: f32,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Schedule {
        Constant,
        Cosine { min_lr: f64 },
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Structured {
        lr_schedule: Schedule,
        checkpoint: Option<Vec<u32>>,
    }

    fn structured(args: &[&str]) -> Result<Structured, String> {
        let args = Args::try_parse_from(std::iter::once("prog").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let defaults = Structured {
            lr_schedule: Schedule::Constant,
            checkpoint: Some(vec![2]),
        };
        args.resolve(&defaults).map_err(|e| e.to_string())
    }

    /// `training!`'s spellings `none` and a bare schedule name work in `--set`; a value of the
    /// wrong form is answered with the key's form, not serde's words alone; a flag for a key the
    /// experiment lacks says to add the key.
    #[test]
    fn structured_keys_take_their_training_spelling_and_say_their_form() {
        let config = structured(&["--set", "checkpoint=none"]).unwrap();
        assert_eq!(config.checkpoint, None);
        let config =
            structured(&["--set", r#"lr_schedule={"kind":"cosine","min_lr":0.5}"#]).unwrap();
        assert_eq!(config.lr_schedule, Schedule::Cosine { min_lr: 0.5 });
        let err = structured(&["--set", "lr_schedule=cosine"]).unwrap_err();
        assert!(err.contains("missing field `min_lr`"), "{err}");
        assert!(
            err.contains(r#"help: `lr_schedule` is JSON in the config, as in `config.json`; now it is {"kind":"constant"}, so e.g. `--set 'lr_schedule={"kind":"constant"}'` with another `kind` and its fields"#),
            "{err}"
        );
        let err = structured(&["--set", "checkpoint=3"]).unwrap_err();
        assert!(
            err.contains("help: `checkpoint` is JSON in the config"),
            "{err}"
        );
        assert!(err.contains("`--set 'checkpoint=[2]'`"), "{err}");
        let err = structured(&["--devices", "2"]).unwrap_err();
        assert!(
            err.starts_with("--devices: this experiment has no `devices` key; add `devices: ..` to its `training!` block"),
            "{err}"
        );
    }

    fn defaults() -> Config {
        Config {
            epochs: 3,
            lr: 0.1,
            seed: None,
            resume: None,
            optimizer: Optimizer { beta_1: 0.9 },
        }
    }

    fn resolve(args: &[&str]) -> Result<Config, String> {
        let args = Args::try_parse_from(std::iter::once("prog").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        args.resolve(&defaults()).map_err(|e| e.to_string())
    }

    #[test]
    fn flags_and_sets_override_the_macro_values() {
        let config = resolve(&[
            "--epochs",
            "5",
            "--lr",
            "0.01",
            "--seed",
            "7",
            "--resume",
            "latest",
            "--set",
            "optimizer.beta_1=0.95",
        ])
        .unwrap();
        assert_eq!(config.epochs, 5);
        assert_eq!(config.lr, 0.01);
        assert_eq!(config.seed, Some(7));
        assert_eq!(config.resume, Some(crate::checkpoint::Resume::Latest));
        assert_eq!(config.optimizer.beta_1, 0.95);
        let config = resolve(&["--resume", "4"]).unwrap();
        assert_eq!(config.resume, Some(crate::checkpoint::Resume::Epoch(4)));
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = resolve(&["--set", "epoch=5"]).unwrap_err();
        assert!(
            err.ends_with("unknown config key `epoch`; did you mean `epochs`?"),
            "{err}"
        );
        let err = resolve(&["--set", "colour=5"]).unwrap_err();
        assert!(
            err.contains("the keys are: epochs, lr, seed, resume, optimizer"),
            "{err}"
        );
        let config = resolve(&["--set", "optimizer.beta1=0.5"]).unwrap();
        assert_eq!(
            serde_json::to_value(&config).unwrap()["optimizer"]["beta_1"],
            0.5,
            "the macro's spelling `beta1` is accepted"
        );
        let err = resolve(&["--set", "optimizer.beta=0.5"]).unwrap_err();
        assert!(
            err.ends_with("(no `beta` there); did you mean `beta_1`?"),
            "{err}"
        );
        let err = resolve(&["--set", "epochs=many"]).unwrap_err();
        assert!(
            err.contains("invalid value for config key `epochs`"),
            "{err}"
        );
        let err = resolve(&["--resume", "soon"]).unwrap_err();
        assert!(
            err.contains("expected `latest` or an epoch number"),
            "{err}"
        );
        let err = resolve(&["--epochs=-1"]).unwrap_err();
        assert!(err.contains("--epochs"), "{err}");
        let err = resolve(&["--set", "epochs"]).unwrap_err();
        assert!(err.contains("--set expects KEY=VALUE"), "{err}");
    }

    /// An experiment whose rate Burn's scheduler sets has no `lr`: `--lr` and `--set lr=` say
    /// where the rate is, instead of "no such key".
    #[test]
    fn the_rate_of_burns_scheduler_is_not_set_by_lr() {
        #[derive(Serialize, Deserialize)]
        struct Scheduled {
            epochs: usize,
            lr_schedule: crate::config::spec::Schedule,
        }
        let defaults = Scheduled {
            epochs: 3,
            lr_schedule: crate::config::spec::BurnScheduler::into_schedule(
                burn::lr_scheduler::noam::NoamLrSchedulerConfig::new(1e-2),
            ),
        };
        for args in [&["--lr", "0.1"][..], &["--set", "lr=0.1"]] {
            let args =
                Args::try_parse_from(std::iter::once("prog").chain(args.iter().copied())).unwrap();
            let err = args.resolve(&defaults).err().unwrap().to_string();
            assert!(
                err.contains("set by Burn's scheduler in its `lr_schedule`"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_bad_value_names_its_source_and_key_among_good_ones() {
        let err = resolve(&[
            "--epochs",
            "4",
            "--set",
            "optimizer.beta_1=fast",
            "--set",
            "seed=3",
        ])
        .unwrap_err();
        assert!(
            err.starts_with("--set: invalid value for config key `optimizer.beta_1`: invalid type: string \"fast\", expected f32"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, r#"{"lr": 0.5, "epochs": "ten"}"#).unwrap();
        let err = resolve(&["--config", path.to_str().unwrap()]).unwrap_err();
        assert!(
            err.starts_with("--config: invalid value for config key `epochs`"),
            "{err}"
        );
    }

    #[test]
    fn a_saved_config_json_is_read_from_its_hyperparameters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"name": "x", "epochs": 99, "hyperparameters": {"epochs": 8, "lr": 0.5}}"#,
        )
        .unwrap();
        let config = resolve(&["--config", path.to_str().unwrap(), "--lr", "0.2"]).unwrap();
        assert_eq!((config.epochs, config.lr), (8, 0.2));
    }

    #[test]
    fn fast_dev_run_writes_nothing_and_runs_one_batch() {
        let args = Args::try_parse_from(["prog", "--fast-dev-run"]).unwrap();
        let mut options = FitOptions {
            epochs: 10,
            ..FitOptions::default()
        };
        args.adjust(&mut options);
        assert_eq!(options.epochs, 1);
        assert_eq!(options.limit_train_batches, Some(1));
        assert_eq!(options.limit_valid_batches, Some(1));
        assert!(!options.write_files);
    }
}
