//! `--find-lr`: a learning-rate range test, as fastai's `lr_find` and Lightning's
//! `Tuner.lr_find` run one. The experiment trains from fresh weights for a number of steps with
//! the base rate rising exponentially from one rate to another; the loss against the rate shows
//! where training is fastest, and the suggestion is the rate at the steepest fall of the
//! smoothed loss. The run is a throwaway in a folder of its own (`<name>/lr-find/run-<N>`): no
//! checkpoint, no tracking, and a real run starts from fresh weights.

use std::path::Path;

use serde_json::Value;

use crate::config::options::{EpochWatch, FitOptions, Watch};
use crate::error::{FitError, SettingError};
use crate::history::History;

/// The smoothing of the loss curve (an exponential moving average with bias correction, as
/// fastai and Lightning smooth it).
const BETA: f64 = 0.98;
/// The loss has diverged once its smoothed value passes this multiple of the best one
/// (Lightning's `early_stop_threshold`).
const DIVERGED: f64 = 4.0;
/// Steps left out at the start of the curve when looking for the steepest fall: the moving
/// average has seen too little there (Lightning's `skip_begin`).
const SKIP_BEGIN: usize = 10;

/// The rates a range test sweeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// The first step's rate.
    pub from: f64,
    /// The rate the last step reaches.
    pub to: f64,
    /// Training steps (batches) from `from` to `to`.
    pub steps: usize,
}

impl Range {
    /// The factor between two optimizer steps' rates.
    fn factor(&self, accumulation: usize) -> f64 {
        let updates = self.steps.div_ceil(accumulation).max(2);
        (self.to / self.from).powf(1.0 / (updates - 1) as f64)
    }

    fn check(&self) -> Result<(), FitError> {
        let refuse = |message: String| {
            Err(FitError::Setting(SettingError {
                option: "find_lr",
                message,
            }))
        };
        if !(self.from > 0.0 && self.from.is_finite() && self.to.is_finite()) {
            return refuse(format!(
                "the rates must be positive numbers, not {} to {}",
                self.from, self.to
            ));
        }
        if self.to <= self.from {
            return refuse(format!(
                "the rate rises from --find-lr-from {} to --find-lr-to {}: give a larger end",
                self.from, self.to
            ));
        }
        if self.steps < SKIP_BEGIN + 2 {
            return refuse(format!(
                "--find-lr-steps {} is too few to see a trend: give at least {}",
                self.steps,
                SKIP_BEGIN + 2
            ));
        }
        Ok(())
    }
}

/// The config of the range test: the experiment's `config` with the base rate at `range.from`,
/// rising each optimizer step. An experiment without one base rate is refused, saying why.
pub fn config(config: &Value, range: &Range) -> Result<Value, FitError> {
    range.check()?;
    let refuse = |message: &str| {
        Err(FitError::Setting(SettingError {
            option: "find_lr",
            message: message.to_owned(),
        }))
    };
    if config.get("optimizers").is_some() {
        return refuse(
            "this experiment has several optimizers, each at its own rate; a range test moves one base rate: find each one's with an experiment of that optimizer alone",
        );
    }
    if config.get("lr").is_none() {
        return refuse(
            "this experiment's rate is set by Burn's scheduler in its `lr_schedule`: there is no base rate `lr` to sweep",
        );
    }
    let accumulation = config["grad_accumulation"].as_u64().unwrap_or(1).max(1) as usize;
    let mut config = config.clone();
    config["lr"] = Value::from(range.from);
    config["lr_schedule"] =
        serde_json::json!({"kind": "rising", "factor": range.factor(accumulation)});
    Ok(config)
}

/// The run settings of the range test: its own folder, `range.steps` training steps at most
/// (the watch stops it at the first epoch's end after them, or after the loss diverged), one
/// validation batch per epoch, every loss read at once, nothing kept beyond the folder.
pub fn adjust(options: &mut FitOptions, range: &Range) {
    // `<artifacts>/<name>/lr-find/run-<N>`: beside the experiment's runs, never one of them
    // (a resume of the newest run must not find the test).
    options.artifacts = options.artifacts.join(&options.name);
    options.name = "lr-find".to_owned();
    options.run = None;
    options.first_epoch = 1;
    options.epochs = range.steps;
    options.limit_train_batches = Some(range.steps);
    options.limit_valid_batches = Some(1);
    options.read_every = 1;
    options.checkpoint = None;
    options.resume = None;
    options.early_stopping = None;
    options.init_from = None;
    options.mlflow = None;
    options.watch = Some(Watch(std::sync::Arc::new(std::sync::Mutex::new(Stop {
        steps: range.steps,
    }))));
}

/// Ends the test at the end of the epoch in which it reached its steps or the loss diverged.
struct Stop {
    steps: usize,
}

impl EpochWatch for Stop {
    fn run_start(&mut self, _: &Path, _: usize, _: usize) -> Option<String> {
        None
    }

    fn epoch_end(&mut self, _epoch: usize, history: &History) -> Option<String> {
        let losses: Vec<f64> = history.train_losses().into_iter().map(f64::from).collect();
        if losses.len() >= self.steps {
            return Some(format!("the range test trained its {} steps", self.steps));
        }
        diverged_at(&smoothed(&losses))
            .map(|step| format!("the loss diverged at step {step}, the end of the range test"))
    }
}

/// The loss curve smoothed by an exponential moving average, bias-corrected.
fn smoothed(losses: &[f64]) -> Vec<f64> {
    let mut average = 0.0;
    losses
        .iter()
        .enumerate()
        .map(|(i, loss)| {
            average = BETA * average + (1.0 - BETA) * loss;
            average / (1.0 - BETA.powi(i as i32 + 1))
        })
        .collect()
}

/// The first step (from 1) whose smoothed loss is not finite or passes [`DIVERGED`] times the
/// best before it.
fn diverged_at(smoothed: &[f64]) -> Option<usize> {
    let mut best = f64::INFINITY;
    for (i, &loss) in smoothed.iter().enumerate() {
        if !loss.is_finite() || loss > DIVERGED * best {
            return Some(i + 1);
        }
        best = best.min(loss);
    }
    None
}

/// What a range test found.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// Per step: the base rate and the loss (raw, smoothed), up to the divergence or the end.
    pub points: Vec<(f64, f64, f64)>,
    /// The index in `points` of the steepest fall of the smoothed loss.
    pub steepest: usize,
}

impl Finding {
    /// The rate at the steepest fall.
    pub fn suggestion(&self) -> f64 {
        self.points[self.steepest].0
    }
}

/// The steepest fall of the smoothed loss against the logarithm of the rate (the steps are
/// evenly spaced on it), leaving out the first [`SKIP_BEGIN`] steps and everything from the
/// divergence on; `losses` are every training step's, `rates` the base rate of each step.
pub fn analyze(losses: &[f64], rates: &[f64]) -> Result<Finding, String> {
    let n = losses.len().min(rates.len());
    let smooth = smoothed(&losses[..n]);
    let end = diverged_at(&smooth).map_or(n, |step| step - 1);
    if end < SKIP_BEGIN + 2 {
        return Err(format!(
            "the loss diverged after {end} steps, before a trend shows: lower --find-lr-from"
        ));
    }
    // Central differences inside, one-sided at the ends (as NumPy's `gradient`).
    let slope = |i: usize| match i {
        0 => smooth[1] - smooth[0],
        i if i == end - 1 => smooth[i] - smooth[i - 1],
        i => (smooth[i + 1] - smooth[i - 1]) / 2.0,
    };
    let steepest = (SKIP_BEGIN..end)
        .min_by(|&a, &b| slope(a).total_cmp(&slope(b)))
        .expect("at least two steps");
    let points = (0..end).map(|i| (rates[i], losses[i], smooth[i])).collect();
    Ok(Finding { points, steepest })
}

/// The base rate of each of the first `batches` training steps: Burn's optimizer steps once per
/// `accumulation` batches.
pub fn rates(range: &Range, accumulation: usize, batches: usize) -> Vec<f64> {
    let accumulation = accumulation.max(1);
    let factor = range.factor(accumulation);
    (0..batches)
        .map(|i| range.from * factor.powi((i / accumulation) as i32))
        .collect()
}

/// Every training step's loss in `run_dir`'s `metrics.csv`: what a test that ended on a loss
/// that is not finite (no report) trained.
pub fn csv_losses(run_dir: &Path) -> Result<Vec<f64>, FitError> {
    let path = run_dir.join("metrics.csv");
    let text = std::fs::read_to_string(&path).map_err(|source| FitError::RunDir {
        path: path.clone(),
        source,
    })?;
    Ok(text
        .lines()
        .filter_map(crate::output::metrics_csv::Row::parse)
        .filter(|row| {
            row.key.step.is_some() && row.key.split == "train" && row.key.metric == "loss"
        })
        .map(|row| row.value.parse().unwrap_or(f64::NAN))
        .collect())
}

/// `lr-find.csv` and `lr-find.svg` in `run_dir`.
pub fn write(run_dir: &Path, finding: &Finding) -> Result<(), FitError> {
    let mut csv = String::from("step,lr,loss,smoothed_loss\n");
    for (i, (lr, loss, smooth)) in finding.points.iter().enumerate() {
        csv.push_str(&format!("{},{lr},{loss},{smooth}\n", i + 1));
    }
    let io = |path: &Path, source: std::io::Error| FitError::RunDir {
        path: path.to_owned(),
        source,
    };
    let path = run_dir.join("lr-find.csv");
    crate::output::atomic::replace_file(&path, csv.as_bytes()).map_err(|e| io(&path, e))?;
    let svg = crate::output::plot::lr_find_svg(&finding.points, finding.suggestion())
        .map_err(|e| io(run_dir, std::io::Error::other(e)))?;
    let path = run_dir.join("lr-find.svg");
    crate::output::atomic::replace_file(&path, svg.as_bytes()).map_err(|e| io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range() -> Range {
        Range {
            from: 1e-4,
            to: 1.0,
            steps: 41,
        }
    }

    #[test]
    fn the_rates_rise_exponentially_from_the_start_to_the_end() {
        let rates = rates(&range(), 1, 41);
        assert_eq!(rates[0], 1e-4);
        assert!((rates[40] - 1.0).abs() < 1e-12, "{}", rates[40]);
        assert!(
            (rates[10] / rates[0] - 10.0).abs() < 1e-9,
            "a decade every 10 steps"
        );
        // With accumulation, the rate moves once per optimizer step.
        let accumulated = super::rates(&range(), 2, 6);
        assert_eq!(accumulated[0], accumulated[1]);
        assert!(accumulated[2] > accumulated[1]);
    }

    #[test]
    fn the_suggestion_is_the_steepest_fall_before_the_divergence() {
        // Flat, then falling fastest at step 25, flat again, then exploding from step 35.
        let losses: Vec<f64> = (0..41)
            .map(|i| {
                let i = i as f64;
                let fall = 1.0 / (1.0 + (-(i - 25.0) / 2.0).exp());
                let blow = if i >= 35.0 { 10f64.powf(i - 34.0) } else { 0.0 };
                2.0 - fall + blow
            })
            .collect();
        let rates = rates(&range(), 1, 41);
        let finding = analyze(&losses, &rates).unwrap();
        // The smoothing lags the raw curve by a few steps.
        assert!(
            (25..=31).contains(&finding.steepest),
            "{}",
            finding.steepest
        );
        assert!(finding.points.len() < 41, "cut at the divergence");
        assert_eq!(finding.suggestion(), rates[finding.steepest]);
    }

    #[test]
    fn a_loss_that_diverges_at_once_has_no_suggestion() {
        let losses: Vec<f64> = (0..41).map(|i| 10f64.powi(i)).collect();
        let err = analyze(&losses, &rates(&range(), 1, 41)).unwrap_err();
        assert!(err.contains("lower --find-lr-from"), "{err}");
    }

    #[test]
    fn an_experiment_without_one_base_rate_is_refused_with_the_reason() {
        let several =
            serde_json::json!({"optimizers": {"g": {}}, "lr_schedule": {"kind": "constant"}});
        let err = config(&several, &range()).unwrap_err().to_string();
        assert!(err.contains("several optimizers"), "{err}");
        let burn = serde_json::json!({"lr_schedule": {"kind": "burn"}});
        let err = config(&burn, &range()).unwrap_err().to_string();
        assert!(err.contains("Burn's scheduler"), "{err}");
        let backwards = Range {
            from: 1.0,
            to: 1e-3,
            steps: 50,
        };
        let plain = serde_json::json!({"lr": 0.1, "lr_schedule": {"kind": "constant"}});
        let err = config(&plain, &backwards).unwrap_err().to_string();
        assert!(err.contains("larger end"), "{err}");
        let set = config(&plain, &range()).unwrap();
        assert_eq!(set["lr"], 1e-4);
        assert_eq!(set["lr_schedule"]["kind"], "rising");
    }
}
