//! What `cli()` does with an experiment, as runtime code: `training!` implements
//! [`Experiment`] for the experiment's type with one-line methods, and its `cli()` calls [`run`].
//! The methods are named apart from the experiment's own entry points (`test_saved`, ..), so
//! that a missing one is never answered with "import this trait".

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use burn::tensor::Device;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Args, main};
use crate::app::search::TrialRun;
use crate::app::sweep::Plan;
use crate::app::verify::Recorded;
use crate::fit::{FitReport, test_line};
use crate::inference::evaluate::Evaluation;
use crate::output::mlflow;
use crate::parallel;
use crate::{config::options::FitOptions, error::FitError};

/// An experiment as the command line drives it: its config, its sweep, and the entry points
/// `training!` generates for it.
pub trait Experiment {
    /// `<Name>Config`.
    type Config: Clone + Serialize + DeserializeOwned;
    /// `<Name>Model`.
    type Model;
    /// The config with the values written in `training!`.
    fn defaults() -> Self::Config;
    /// The grid of `sweep: { .. }`.
    fn plan() -> Plan;
    /// The device `config` names.
    fn open_device(config: &Self::Config) -> Result<Device, FitError>;
    /// Trains with `config`, the run options adjusted by `adjust`.
    fn train(
        config: Self::Config,
        device: &Device,
        adjust: impl FnOnce(&mut FitOptions),
    ) -> Result<FitReport<Self::Model>, FitError>;
    /// The test split on a saved run's best checkpoint; `None` for an experiment without one.
    fn measure_test_split(
        config: &Self::Config,
        device: &Device,
    ) -> Option<Result<Evaluation, FitError>>;
    /// `predictions.csv` of a saved run.
    fn write_predictions(config: &Self::Config, device: &Device) -> Result<PathBuf, FitError>;
    /// A saved run's best weights as safetensors at `path`.
    fn export_weights(
        config: &Self::Config,
        path: &Path,
        device: &Device,
    ) -> Result<PathBuf, FitError>;
    /// The run directory `config` names (its `run`, else the newest).
    fn saved_run(config: &Self::Config) -> Result<PathBuf, FitError>;
    /// `config` naming the run `run` (`run-3`).
    fn for_run(config: Self::Config, run: Option<String>) -> Self::Config;
    /// Whether the experiment trains data-parallel under an MPI launcher (`data_parallel`).
    const DATA_PARALLEL: bool = false;
}

/// The command line of `E`: `--test-only`, `--predict`, `--export` and `--verify` use a saved
/// run; anything else trains, then calls `after` with the config (naming the run just trained)
/// and the report, except after `--fast-dev-run` (nothing was written).
pub fn run<E: Experiment>(
    after: impl FnOnce(&E::Config, &FitReport<E::Model>) -> Result<(), FitError>,
) -> ExitCode {
    if let (false, Some((rank, size))) = (E::DATA_PARALLEL, parallel::launched()) {
        // Each process would train the whole run on its own and write it `size` times over.
        if rank == 0 {
            say!(
                "error: launched as one of {size} processes (`mpirun`, `srun`), but this experiment has no `data_parallel` key: each process would train its own full run; add `data_parallel: mpi` to its `training!` to train one run over the processes, or start it without a launcher"
            );
        }
        return ExitCode::from(2);
    }
    let joined = match E::DATA_PARALLEL.then(parallel::join).transpose() {
        Ok(joined) => joined,
        Err(err) => {
            // Every process meets the same refusal: rank 0 says it, so the launcher's merged
            // output holds it once rather than interleaved N times.
            if parallel::launched().is_none_or(|(rank, _)| rank == 0) {
                say!("error: {err}");
            }
            return ExitCode::from(2);
        }
    };
    let rank = joined.as_ref().map_or(0, |j| j.rank_and_size().0);
    // The command line owns the process: a signal after the last epoch must not turn a
    // finished run's exit code into 143.
    crate::interrupt::keep_until_exit();
    let train = || {
        main(E::defaults(), E::plan(), |config, args: &Args| {
            let device = E::open_device(&config)?;
            if args.test_only {
                let Some(evaluation) = E::measure_test_split(&config, &device) else {
                    return Err(FitError::InvalidOption {
                        option: "test_only",
                        message:
                            "this experiment has no test split: add `test: ..` to its `loader`"
                                .into(),
                    });
                };
                show!("{}", test_line(&evaluation?));
                return E::saved_run(&config);
            }
            if args.predict {
                return E::write_predictions(&config, &device);
            }
            if let Some(path) = &args.export {
                return E::export_weights(&config, path, &device);
            }
            if args.find_lr {
                return find_lr::<E>(config, args, &device);
            }
            if args.mlflow_sync {
                let dir = E::saved_run(&config)?;
                crate::output::mlflow::sync_saved(&dir).map_err(FitError::Tracking)?;
                return Ok(dir);
            }
            if let Some(dir) = &args.verify {
                let recorded = Recorded::read(dir)?;
                let report = E::train(config.clone(), &device, |options| {
                    args.adjust(options);
                    recorded.prepare(options);
                    // The rerun is a check, not a run to compare on the server.
                    options.mlflow = None;
                })?;
                show!("{}", recorded.check(&report.run_dir, &report.config)?);
                return Ok(dir.clone());
            }
            if args.mlflow_log_model && mlflow::Mlflow::from_env().is_none() {
                return Err(FitError::InvalidOption {
                    option: "mlflow",
                    message: "--mlflow-log-model logs to the server MLFLOW_TRACKING_URI names: set it (e.g. `http://127.0.0.1:5000`)".into(),
                });
            }
            let report = E::train(config.clone(), &device, |options| {
                args.adjust(options);
                options.watch = match (&args.study_trial, &args.sweep_trial) {
                    (Some(trial), _) => Some(TrialRun::watch(trial)),
                    (None, Some(trial)) => Some(trial.watch()),
                    (None, None) => None,
                };
            });
            if let Some(trial) = &args.study_trial {
                let interrupted = matches!(report, Err(FitError::Interrupted { .. }));
                let mut trial = trial
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Err(e) = trial.finish(report.is_ok(), interrupted) {
                    say!("error: the study's record of this trial cannot be written: {e}");
                }
            }
            let report = report?;
            if let Some(trial) = &args.sweep_trial {
                trial.record(&report.history, &report.run_dir)?;
            }
            // Rank 0 of a data-parallel run alone holds the run directory the test split reads.
            if !args.fast_dev_run && rank == 0 {
                let run = report
                    .run_dir
                    .file_name()
                    .map(|run| run.to_string_lossy().into_owned());
                let config = E::for_run(config, run);
                after(&config, &report)?;
                if args.mlflow_log_model {
                    let file = report.run_dir.join(mlflow::MODEL_FILE);
                    E::export_weights(&config, &file, &device)?;
                    mlflow::log_file(&report.run_dir, mlflow::MODEL_FILE);
                }
            }
            Ok(report.run_dir)
        })
    };
    let Some(group) = parallel::group() else {
        return train();
    };
    // A panic on one rank (its message already printed) must not leave the others waiting.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(train)) {
        Ok(code) => code,
        Err(_) => group.abort(101),
    }
}

/// `--find-lr`: the range test on this experiment's model, optimizer and data, its files, and
/// the suggestion with the flag that uses it.
fn find_lr<E: Experiment>(
    config: E::Config,
    args: &Args,
    device: &Device,
) -> Result<PathBuf, FitError> {
    use crate::app::lr_find;
    let range = args.lr_range();
    let invalid = |message: String| FitError::InvalidOption {
        option: "find_lr",
        message,
    };
    let json = serde_json::to_value(&config).map_err(|e| invalid(e.to_string()))?;
    let tested: E::Config = serde_json::from_value(lr_find::config(&json, &range)?)
        .map_err(|e| invalid(e.to_string()))?;
    let accumulation = json["grad_accumulation"].as_u64().unwrap_or(1) as usize;
    let mut runs = None;
    let trained = E::train(tested, device, |options| {
        args.adjust(options);
        lr_find::adjust(options, &range);
        runs = Some(crate::output::runs::ExperimentRuns::new(
            &options.artifacts,
            &options.name,
        ));
    });
    let (run_dir, losses) = match trained {
        Ok(report) => {
            let losses = report.history.train_losses();
            (report.run_dir, losses.into_iter().map(f64::from).collect())
        }
        // A loss that is no longer finite is where the range ends: the rows before it are on disk.
        Err(FitError::NonFiniteLoss { .. }) => {
            let newest = runs.and_then(|runs| runs.newest().ok().flatten());
            let run_dir = newest.ok_or_else(|| invalid("the range test wrote no run".into()))?;
            let losses = lr_find::csv_losses(&run_dir)?;
            (run_dir, losses)
        }
        Err(err) => return Err(err),
    };
    let rates = lr_find::rates(&range, accumulation, losses.len());
    let finding = lr_find::analyze(&losses, &rates).map_err(invalid)?;
    lr_find::write(&run_dir, &finding)?;
    let suggestion = finding.suggestion();
    show!(
        "suggested learning rate: {suggestion:.3e}, where the smoothed loss falls fastest (step {}); the curve is {}",
        finding.steepest + 1,
        run_dir.join("lr-find.svg").display()
    );
    show!("train with it: --lr {suggestion:.3e}");
    Ok(run_dir)
}
