//! Searches: `search: { space: { lr: log_uniform(1e-4, 1e-1) }, trials: 30, objective:
//! min(valid.loss), sampler: tpe, prune: median }` in `training!`, or `--search lr=..` on the
//! command line. The study process draws each trial's values ([`sampler`]), records them in
//! the study folder ([`study`]) and trains the trial as a child process of the experiment's own
//! binary with `--trial K`, at most `--jobs N` at once; the child reports its objective at
//! each epoch's end and stops when the pruner ([`prune`]) says so. A study killed with -9 is
//! resumed by the same command: ended trials stay as they are, a trial that was training goes
//! on from its last checkpoint, with the values it was drawn with. The study process is
//! [`launch`]'s, a trial's process [`trial`]'s.

use serde_json::Value;

mod launch;
pub mod prune;
pub mod report;
pub mod sampler;
pub mod space;
pub mod study;
mod trial;

use crate::error::CliError;
pub use launch::Ended;
pub(crate) use launch::run;
use prune::Pruner;
use sampler::Sampler;
use space::{Dist, Param};
use study::{Definition, Objective};
pub(crate) use trial::has_checkpoint;
pub use trial::{Prepared, TrialRun};

/// The search `training!` declares: what `cli()` searches, with the flags applied.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    space: Vec<Param>,
    trials: Option<usize>,
    objective: Option<Objective>,
    sampler: Sampler,
    pruner: Pruner,
    seed: u64,
}

impl Declared {
    /// A search of nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Draws `key` from `dist`.
    pub fn param(mut self, key: &str, dist: Dist) -> Self {
        self.space.push(Param {
            key: key.to_owned(),
            dist,
        });
        self
    }

    /// The budget of trials.
    pub fn trials(mut self, trials: usize) -> Self {
        self.trials = Some(trials);
        self
    }

    /// The metric to optimize, `split.metric`, and its direction.
    pub fn objective(mut self, metric: &str, maximize: bool) -> Self {
        self.objective = Some(Objective {
            metric: metric.to_owned(),
            maximize,
        });
        self
    }

    /// How trials are drawn.
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.sampler = sampler;
        self
    }

    /// How bad trials stop early.
    pub fn prune(mut self, pruner: Pruner) -> Self {
        self.pruner = pruner;
        self
    }

    /// The seed trials are drawn with.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// The search flags of the command line.
#[derive(Debug, Default)]
pub struct Flags<'a> {
    /// `--search KEY=DIST`, each.
    pub search: &'a [String],
    /// `--trials`.
    pub trials: Option<usize>,
    /// `--objective`.
    pub objective: Option<&'a str>,
    /// `--sampler`.
    pub sampler: Option<&'a str>,
    /// `--prune`.
    pub prune: Option<&'a str>,
    /// `--search-seed`.
    pub seed: Option<u64>,
    /// `--jobs`, 1 without it.
    pub jobs: usize,
}

impl Flags<'_> {
    /// Whether a flag that only a search reads is given.
    fn any(&self) -> bool {
        self.trials.is_some()
            || self.objective.is_some()
            || self.sampler.is_some()
            || self.prune.is_some()
            || self.seed.is_some()
    }
}

/// The study's definition and budget from `declared` and `flags`; `None` without a search.
/// `config` is the experiment's config as JSON (what each key holds) and `recorded` its
/// metrics (`split.metric`; empty when not known).
pub fn definition(
    declared: Option<&Declared>,
    flags: &Flags<'_>,
    config: &Value,
    recorded: &[String],
) -> Result<Option<(Definition, usize)>, CliError> {
    if declared.is_none() && flags.search.is_empty() {
        if flags.any() {
            return Err(CliError::new(
                "--trials, --objective, --sampler, --prune and --search-seed need a search: add `search: { space: { .. } }` to `training!`, or `--search KEY=DIST`",
            ));
        }
        return Ok(None);
    }
    let mut declared = declared.cloned().unwrap_or_default();
    for flag in flags.search {
        let Some((key, text)) = flag.split_once('=') else {
            return Err(CliError::new(format!(
                "--search expects KEY=DISTRIBUTION, got `{}`; e.g. `--search lr=log_uniform(1e-4,1e-1)`",
                crate::read::shorten(flag)
            )));
        };
        let key = key.trim();
        let current = key.split('.').try_fold(config, |node, part| node.get(part));
        if current.is_none() {
            // Not there as written: an optimizer argument's other spelling, or the error
            // `--set` gives (its synonyms, "did you mean").
            crate::app::cli::check_key(config, key, "--search")?;
        }
        let dist = Dist::parse(key, text, current).map_err(CliError::new)?;
        match declared.space.iter_mut().find(|p| p.key == key) {
            Some(param) => param.dist = dist,
            None => declared.space.push(Param {
                key: key.to_owned(),
                dist,
            }),
        }
    }
    let objective = match (flags.objective, declared.objective) {
        (Some(text), _) => Objective::parse(text).map_err(CliError::new)?,
        (None, Some(objective)) => objective,
        (None, None) if recorded.is_empty() || recorded.iter().any(|m| m == "valid.loss") => {
            Objective::parse("min(valid.loss)").map_err(CliError::new)?
        }
        (None, None) => {
            return Err(CliError::new(format!(
                "a search needs an objective and this experiment records no `valid.loss`: name one, e.g. `--objective min({})` (recorded: {})",
                recorded[0],
                recorded.join(", ")
            )));
        }
    };
    if !recorded.is_empty() && !recorded.contains(&objective.metric) {
        let known: Vec<&str> = recorded.iter().map(String::as_str).collect();
        let close = burn_experiment_vocabulary::closest(&objective.metric, &known)
            .map_or_else(String::new, |c| format!("did you mean `{c}`? "));
        return Err(CliError::new(format!(
            "the objective `{}` is not recorded: {close}this experiment records {}",
            objective.metric,
            recorded.join(", ")
        )));
    }
    let (_, key) = objective.split_key();
    if let Some(higher) = burn_experiment_vocabulary::metrics::higher_is_better(key)
        && higher != objective.maximize
    {
        let (better, right) = if higher {
            ("high", "max")
        } else {
            ("low", "min")
        };
        return Err(CliError::new(format!(
            "--objective {}: it would rank the worst trial best, {key} is better {better}; write `--objective {right}({})`",
            objective.describe(),
            objective.metric
        )));
    }
    let sampler = match flags.sampler {
        Some(text) => Sampler::parse(text).map_err(CliError::new)?,
        None => declared.sampler,
    };
    let pruner = match flags.prune {
        Some(text) => Pruner::parse(text).map_err(CliError::new)?,
        None => declared.pruner,
    };
    let trials = flags
        .trials
        .or(declared.trials)
        .unwrap_or(burn_experiment_vocabulary::search::TRIALS);
    if trials == 0 {
        return Err(CliError::new("--trials 0: a study runs at least one trial"));
    }
    Ok(Some((
        Definition {
            space: declared.space,
            objective,
            sampler,
            pruner,
            seed: flags.seed.unwrap_or(declared.seed),
            jobs: flags.jobs.max(1),
        },
        trials,
    )))
}
