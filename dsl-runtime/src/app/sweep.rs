//! Sweeps: a grid of config values (`sweep: { lr: [..], batch_size: [..] }`, `--sweep
//! key=v1,v2`), each combination a trial trained as its own run.
//!
//! A sweep lives in `<artifacts>/<name>/sweep-<hash of its grid>/`: the same grid names the
//! same folder on every machine, so `--trial K` run by a cluster's job array adds its result
//! to one table. Each finished trial writes `trial-<K>.json` there and rewrites `sweep.csv`,
//! `sweep.md` and `sweep.svg` from every trial recorded so far (each file replaced
//! atomically, so concurrent trials never leave half a table, and under a lock of the folder,
//! so the last table written holds every trial). `--jobs N` runs the trials as
//! N child processes of the experiment's own binary, each with `--trial K`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CliError;
use crate::error::FitError;
use crate::history::{History, Split};
use crate::output::atomic::{replace_file, with_report_lock};
use crate::output::plot::sweep_svg;

/// What `training!` knows of an experiment's sweep: its name (for the folder), the metric
/// trials are ranked by, and the grid written in the macro (empty without a `sweep` key).
pub struct Plan {
    name: String,
    rank_by: Option<(Split, String)>,
    axes: Vec<Axis>,
    /// The metrics the experiment records, `split.key`, to check `--rank-by` before any trial
    /// trains; empty when not known (then a wrong one is found when the first trial ends).
    recorded: Vec<String>,
    /// The search `training!` declares, if any.
    search: Option<crate::app::search::Declared>,
}

/// One swept key and its values, in the order written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// The config key.
    pub key: String,
    /// Its values.
    pub values: Vec<Value>,
}

/// A finished trial, as `trial-<K>.json` keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrialRecord {
    /// The trial's number, from 0.
    pub trial: usize,
    /// The swept keys with this trial's values.
    pub settings: Vec<(String, Value)>,
    /// The trial's run directory.
    pub run: PathBuf,
    /// The ranked metric, `split.key`.
    pub metric: String,
    /// Whether larger values of it are better.
    pub higher_is_better: bool,
    /// Its value per epoch (non-finite values as `null`, which never rank first).
    pub curve: Vec<(usize, Option<f64>)>,
}

/// The trial a process runs (`--trial K`): where and how to record it when it ends.
#[derive(Clone, Debug)]
pub struct Trial {
    dir: PathBuf,
    trial: usize,
    settings: Vec<(String, Value)>,
    rank_by: (Split, String),
}

/// `trial-<K>.run` in a sweep's folder: the run trial K started, written as it starts, so that
/// the sweep run again after a kill resumes that run instead of starting another.
fn started_file(dir: &Path, trial: usize) -> PathBuf {
    dir.join(format!("trial-{trial}.run"))
}

/// `trial-<K>.json` in a sweep's folder: the trial's record, written when it finished.
fn record_file(dir: &Path, trial: usize) -> PathBuf {
    dir.join(format!("trial-{trial}.json"))
}

/// Whether trial `trial` of the sweep in `dir` finished.
fn finished(dir: &Path, trial: usize) -> bool {
    record_file(dir, trial).is_file()
}

/// How trial `trial` of the sweep in `dir` goes on from an earlier process that was stopped:
/// [`go_on_in`] the run it started; `None` for a trial that never started or that finished.
pub(crate) fn started_run(dir: &Path, trial: usize) -> Result<Option<(String, bool)>, CliError> {
    if finished(dir, trial) {
        return Ok(None);
    }
    let Ok(bytes) = crate::read::bytes(&started_file(dir, trial), crate::read::SMALL) else {
        return Ok(None);
    };
    let run = PathBuf::from(String::from_utf8_lossy(&bytes).trim());
    go_on_in(&run, dir, trial)
}

/// How trial `trial` goes on in `run`, the run an earlier process of it started: its name
/// (`run-3`), and whether it has a checkpoint to resume from (else it is emptied and trained
/// again under the same name, so that no run is left that no trial names). `None` for a run
/// that is not this experiment's (beside `folder`, the sweep's or study's): only those are
/// resumed or removed.
pub(crate) fn go_on_in(
    run: &Path,
    folder: &Path,
    trial: usize,
) -> Result<Option<(String, bool)>, CliError> {
    let Some(name) = run.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(None);
    };
    // A relative `--artifacts` and the absolute path a record may hold compare equal.
    let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    if !name.starts_with("run-") || absolute(run).parent() != absolute(folder).parent() {
        return Ok(None);
    }
    if crate::app::search::has_checkpoint(run) {
        return Ok(Some((name, true)));
    }
    match std::fs::remove_dir_all(run) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(CliError::new(format!(
                "trial {trial}: its run {} holds no checkpoint to resume from and cannot be removed to start it again: {e}",
                run.display()
            )));
        }
    }
    Ok(Some((name, false)))
}

/// Writes `trial-<K>.run` as the trial's run starts.
struct Started {
    dir: PathBuf,
    trial: usize,
}

impl crate::config::options::EpochWatch for Started {
    fn run_start(&mut self, run_dir: &Path, _: usize, _: usize) -> Option<String> {
        let run = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_owned());
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            replace_file(
                &started_file(&self.dir, self.trial),
                run.display().to_string().as_bytes(),
            )
        });
        written.err().map(|e| {
            format!(
                "the sweep's record of trial {} cannot be written: {e}",
                self.trial
            )
        })
    }

    fn epoch_end(&mut self, _: usize, _: &History) -> Option<String> {
        None
    }
}

impl Trial {
    /// What the trial's run tells the sweep as it starts (`trial-<K>.run`).
    pub fn watch(&self) -> crate::config::options::Watch {
        crate::config::options::Watch(Arc::new(Mutex::new(Started {
            dir: self.dir.clone(),
            trial: self.trial,
        })))
    }

    /// Writes `trial-<K>.json` from the trial's `history` and rewrites the sweep's tables.
    pub fn record(&self, history: &History, run_dir: &Path) -> Result<(), FitError> {
        let (split, metric) = (&self.rank_by.0, self.rank_by.1.as_str());
        let series = history.get(*split, metric);
        if series.is_none() {
            return Err(FitError::InvalidOption {
                option: "rank_by",
                message: format!(
                    "the sweep ranks trials by `{split}.{metric}`, which this experiment does not record: add it to `metrics` or rank by another"
                ),
            });
        }
        let record = TrialRecord {
            trial: self.trial,
            settings: self.settings.clone(),
            run: run_dir.to_owned(),
            metric: format!("{split}.{metric}"),
            higher_is_better: series.is_some_and(|s| s.higher_is_better),
            curve: series.map_or_else(Vec::new, |s| {
                s.epochs
                    .iter()
                    .map(|&(e, v)| (e, v.is_finite().then_some(v)))
                    .collect()
            }),
        };
        let io = |source| FitError::RunDir {
            path: self.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let json = serde_json::to_vec_pretty(&record).map_err(|e| io(std::io::Error::other(e)))?;
        replace_file(&record_file(&self.dir, self.trial), &json).map_err(io)?;
        report(&self.dir).map(|_| ()).map_err(io)
    }
}

impl Plan {
    /// The plan of experiment `name` (snake case), ranked by `split.metric`.
    pub fn new(name: &str, rank_by: Option<(Split, &str)>, axes: Vec<(&str, Vec<Value>)>) -> Self {
        Self {
            name: name.to_owned(),
            rank_by: rank_by.map(|(split, key)| (split, key.to_owned())),
            axes: axes
                .into_iter()
                .map(|(key, values)| Axis {
                    key: key.to_owned(),
                    values,
                })
                .collect(),
            recorded: Vec::new(),
            search: None,
        }
    }

    /// The search `training!` declares.
    pub fn search(mut self, declared: crate::app::search::Declared) -> Self {
        self.search = Some(declared);
        self
    }

    /// The search `training!` declares, if any.
    pub fn declared(&self) -> Option<&crate::app::search::Declared> {
        self.search.as_ref()
    }

    /// The metrics the experiment records, `split.metric` (empty when not known).
    pub fn recorded_metrics(&self) -> &[String] {
        &self.recorded
    }

    /// The experiment's name (snake case), which names its folders.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The metrics the experiment records, as `(split, key)`.
    pub fn recorded(mut self, metrics: &[(Split, &str)]) -> Self {
        self.recorded = metrics
            .iter()
            .map(|(split, key)| format!("{split}.{key}"))
            .collect();
        self
    }

    /// The grid with `--sweep key=v1,v2` applied: a key already swept gets the new values, a
    /// new key is added. Values are JSON where they parse, strings otherwise.
    pub fn with_flags(mut self, flags: &[String]) -> Result<Self, CliError> {
        for flag in flags {
            let Some((key, list)) = flag.split_once('=') else {
                return Err(CliError::new(format!(
                    "--sweep expects KEY=V1,V2,..., got `{flag}`"
                )));
            };
            let key = key.trim();
            let values = flag_values(list);
            if values.is_empty() {
                return Err(CliError::new(format!(
                    "--sweep {key}= lists no value: write e.g. `--sweep {key}=1,2`"
                )));
            }
            match self.axes.iter_mut().find(|a| a.key == key) {
                Some(axis) => axis.values = values,
                None => self.axes.push(Axis {
                    key: key.to_owned(),
                    values,
                }),
            }
        }
        Ok(self)
    }

    /// Ranks the trials by `split.metric` (`--rank-by valid.accuracy`) instead of the metric
    /// `best(..)` watches; the metric must be recorded.
    pub fn rank_by(mut self, metric: &str) -> Result<Self, CliError> {
        let Some((split, key)) = Split::epoch_metric(metric) else {
            return Err(CliError::new(format!(
                "--rank-by `{metric}`: name a recorded metric as `valid.<metric>` or `train.<metric>`"
            )));
        };
        if !self.recorded.is_empty() && !self.recorded.iter().any(|m| m == metric) {
            return Err(CliError::new(format!(
                "--rank-by `{metric}`: the experiment does not record it; it records {}",
                self.recorded.join(", ")
            )));
        }
        self.rank_by = Some((split, key.to_owned()));
        Ok(self)
    }

    /// Whether there is anything to sweep.
    pub fn is_empty(&self) -> bool {
        self.axes.is_empty()
    }

    /// Every combination of the grid, the first key varying slowest.
    pub fn trials(&self) -> Vec<Vec<(String, Value)>> {
        self.axes.iter().fold(vec![Vec::new()], |trials, axis| {
            trials
                .iter()
                .flat_map(|trial| {
                    axis.values.iter().map(move |value| {
                        let mut trial = trial.clone();
                        trial.push((axis.key.clone(), value.clone()));
                        trial
                    })
                })
                .collect()
        })
    }

    /// `<artifacts>/<name>/sweep-<hash>`: named by the grid, so every machine of a job array
    /// finds the same folder.
    pub fn dir(&self, artifacts: &Path) -> PathBuf {
        let grid = serde_json::to_vec(&self.axes).unwrap_or_default();
        artifacts
            .join(&self.name)
            .join(format!("sweep-{:08x}", crc32c::crc32c(&grid)))
    }

    /// Trial `trial` of the grid, or why there is none.
    pub fn trial(&self, dir: PathBuf, trial: usize) -> Result<Trial, CliError> {
        let trials = self.trials();
        let settings = trials.get(trial).cloned().ok_or_else(|| {
            CliError::new(format!(
                "--trial {trial}: the sweep has trials 0 to {}",
                trials.len() - 1
            ))
        })?;
        let rank_by = self.rank_by.clone().ok_or_else(|| {
            // No guess: with several optimizers the first validation loss is one player's.
            let fix = match self.recorded.iter().find(|m| m.starts_with("valid.")) {
                Some(metric) => format!(
                    "name the metric to rank by, e.g. `--rank-by {metric}` (recorded: {})",
                    self.recorded.join(", ")
                ),
                None => "record `valid.loss`, or a metric `best(..)` watches".to_owned(),
            };
            CliError::new(format!(
                "a sweep ranks its trials by the metric `best(..)` watches, else `valid.loss`, and this experiment has neither: {fix}"
            ))
        })?;
        Ok(Trial {
            dir,
            trial,
            settings,
            rank_by,
        })
    }
}

/// Rewrites `sweep.csv`, `sweep.md` and `sweep.svg` from every `trial-<K>.json` in `dir`, the
/// best trial first, one process at a time; returns the Markdown table.
pub fn report(dir: &Path) -> std::io::Result<String> {
    with_report_lock(dir, || rewrite(dir))
}

fn rewrite(dir: &Path) -> std::io::Result<String> {
    let mut records: Vec<TrialRecord> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("trial-") && name.ends_with(".json")
        })
        .filter_map(|e| {
            serde_json::from_slice(&crate::read::bytes(&e.path(), crate::read::SMALL).ok()?).ok()
        })
        .collect();
    records.sort_by_key(|r| r.trial);
    let best = |r: &TrialRecord| best_value(&r.curve, r.higher_is_better);
    // A stable sort: equal values keep trial order; trials without a value go last.
    records.sort_by(|a, b| match (best(a), best(b)) {
        (Some((_, x)), Some((_, y))) if a.higher_is_better => y.total_cmp(&x),
        (Some((_, x)), Some((_, y))) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let ranked = records.first().map_or("metric", |r| r.metric.as_str());
    let keys: Vec<&str> = records
        .first()
        .map(|r| r.settings.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    // One list of cells per line, so the header, its separator and every row have as many
    // columns whatever the number of keys (none in a sweep with no trial recorded yet).
    let header = |best: String| -> Vec<String> {
        ["rank", "trial"]
            .into_iter()
            .chain(keys.iter().copied())
            .map(str::to_owned)
            .chain([best, "epoch".to_owned(), "run".to_owned()])
            .collect()
    };
    let mut csv = header(ranked.to_owned()).join(",") + "\n";
    let columns = header(format!("best {ranked}"));
    let mut md = format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        "---|".repeat(columns.len())
    );
    for (rank, record) in records.iter().enumerate() {
        let values: Vec<String> = keys
            .iter()
            .map(|key| {
                record
                    .settings
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or_else(String::new, |(_, v)| v.to_string())
            })
            .collect();
        let (epoch, value) = best(record).map_or((String::new(), String::new()), |(e, v)| {
            (e.to_string(), v.to_string())
        });
        let row: Vec<String> = [(rank + 1).to_string(), record.trial.to_string()]
            .into_iter()
            .chain(values)
            .chain([value, epoch, record.run.display().to_string()])
            .collect();
        csv += &format!("{}\n", row.join(","));
        md += &format!("| {} |\n", row.join(" | "));
    }
    let curves: Vec<(String, Vec<(usize, f64)>)> = records
        .iter()
        .map(|r| {
            let label = r
                .settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            let points = r.curve.iter().filter_map(|&(e, v)| Some((e, v?))).collect();
            (label, points)
        })
        .collect();
    let svg = sweep_svg(ranked, &curves).map_err(std::io::Error::other)?;
    replace_file(&dir.join("sweep.csv"), csv.as_bytes())?;
    replace_file(&dir.join("sweep.md"), md.as_bytes())?;
    replace_file(&dir.join("sweep.svg"), svg.as_bytes())?;
    Ok(md)
}

/// The best `(epoch, value)` of a curve (`history::best_of`: non-finite values never win).
fn best_value(curve: &[(usize, Option<f64>)], higher_is_better: bool) -> Option<(usize, f64)> {
    crate::history::best_of(
        curve.iter().filter_map(|&(e, v)| Some((e, v?))),
        higher_is_better,
    )
}

/// The trial processes a sweep or a study is running, and how an interrupt reaches them.
#[derive(Default)]
pub(crate) struct Running {
    children: Vec<(usize, Child, Vec<JoinHandle<()>>)>,
    raised_at: Option<std::time::Instant>,
    forwarded: bool,
}

impl Running {
    pub fn push(&mut self, trial: usize, (child, copies): (Child, Vec<JoinHandle<()>>)) {
        self.children.push((trial, child, copies));
    }

    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The trials running.
    pub fn trials(&self) -> impl Iterator<Item = usize> + '_ {
        self.children.iter().map(|(trial, ..)| *trial)
    }

    /// Whether Ctrl-C or a SIGTERM reached this process. It reaches the trials too, each then
    /// saving and stopping, after a grace period of 2 s: a signal sent to every process
    /// (Slurm's `scancel`) reaches them itself, and a second one would end a trial before it
    /// saves.
    pub fn interrupted(&mut self) -> bool {
        if !crate::interrupt::raised() {
            return false;
        }
        let since = *self.raised_at.get_or_insert_with(std::time::Instant::now);
        if !self.forwarded && since.elapsed() >= std::time::Duration::from_secs(2) {
            self.forwarded = true;
            for (_, child, _) in &self.children {
                // SAFETY: `kill` on a child this process started and has not reaped.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            }
        }
        true
    }

    /// A trial whose process ended, with how it ended (its output copied to the end), or
    /// `None` after a short wait when none did.
    pub fn next_ended(&mut self) -> Option<(usize, Option<std::process::ExitStatus>)> {
        let Some(index) = self
            .children
            .iter_mut()
            .position(|(_, child, _)| child.try_wait().ok().flatten().is_some())
        else {
            std::thread::sleep(std::time::Duration::from_millis(20));
            return None;
        };
        let (trial, mut child, copies) = self.children.swap_remove(index);
        let status = child.wait().ok();
        for copy in copies {
            let _ = copy.join();
        }
        Some((trial, status))
    }
}

/// Runs every trial of `plan` as a child process of this binary (`args` are the process's own,
/// without `--jobs`, and `env` is added to its environment), at most `jobs` at once. Each child's output (its line per epoch, or
/// nothing more with the user's `--quiet`) goes to `trial-<K>.log` in the sweep folder and,
/// with one job, to this terminal too. Trials an earlier run of the sweep finished are not
/// trained again, and one it left training goes on from its checkpoint: the children die with
/// this process, so that none trains on beside the sweep run again. Ctrl-C or a SIGTERM to this
/// process starts no new trial and, after 2 s, is passed on to the trials training, which save
/// and stop (as a study's). Returns the trials that failed, and whether it was interrupted.
pub fn run_children(
    trials: usize,
    jobs: usize,
    dir: &Path,
    args: &[String],
    env: &[(&str, String)],
) -> Result<(Vec<usize>, bool), CliError> {
    let exe = this_program()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    let spawn = |trial| spawn_trial(&exe, dir, args, env, trial, jobs <= 1, true);
    let _signals = crate::interrupt::Interrupt::install().ok();
    let mut failed = Vec::new();
    let mut running = Running::default();
    let mut next = 0;
    loop {
        let interrupted = running.interrupted();
        while !interrupted && next < trials && running.len() < jobs.max(1) {
            // Run again after a kill, the sweep trains only what did not finish.
            if finished(dir, next) {
                say!("sweep: trial {next} of {trials} finished earlier");
                next += 1;
                continue;
            }
            say!("sweep: trial {next} of {trials} started");
            running.push(next, spawn(next)?);
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        let Some((trial, status)) = running.next_ended() else {
            continue;
        };
        match status.and_then(|s| s.code()) {
            Some(0) => say!("sweep: trial {trial} finished"),
            // Stopped by Ctrl-C or SIGTERM, saved: the same command goes on from there.
            Some(130) => say!("sweep: trial {trial} stopped, to resume"),
            _ => {
                say!("sweep: trial {trial} failed");
                failed.push(trial);
            }
        }
    }
    failed.sort_unstable();
    Ok((failed, crate::interrupt::raised()))
}

/// The comma-separated values of a flag (`--sweep lr=0.1,0.2`, `choice(16,32)`): JSON where
/// they parse, strings otherwise; empty items left out.
pub(crate) fn flag_values(list: &str) -> Vec<Value> {
    list.split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| serde_json::from_str(v).unwrap_or_else(|_| Value::from(v)))
        .collect()
}

/// This program, to start trials of.
pub(crate) fn this_program() -> Result<PathBuf, CliError> {
    std::env::current_exe()
        .map_err(|e| CliError::new(format!("cannot find this program to run trials: {e}")))
}

/// Starts trial `trial` as `exe args.. --trial K`, `env` added, its output copied to
/// `trial-<K>.log` in `dir` and, with `echo`, to this terminal. With `die_with_parent` (Linux),
/// the child is killed when this process dies, so that a study or sweep resumed after a kill never
/// finds its trial still training beside the resumed one; and it is put in a process group of
/// its own, so that Ctrl-C reaches this process alone, which passes it on once (a second signal
/// would end a trial before it saves).
pub(crate) fn spawn_trial(
    exe: &Path,
    dir: &Path,
    args: &[String],
    env: &[(&str, String)],
    trial: usize,
    echo: bool,
    die_with_parent: bool,
) -> Result<(Child, Vec<JoinHandle<()>>), CliError> {
    let log_path = dir.join(format!("trial-{trial}.log"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", log_path.display())))?;
    let log = Arc::new(Mutex::new(log));
    let mut command = Command::new(exe);
    command
        .args(args)
        .arg("--trial")
        .arg(trial.to_string())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(target_os = "linux")]
    if die_with_parent {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        // SAFETY: prctl is async-signal-safe and touches only the child being started.
        unsafe {
            command.pre_exec(
                || match libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                },
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = die_with_parent;
    let mut child = command
        .spawn()
        .map_err(|e| CliError::new(format!("cannot start trial {trial}: {e}")))?;
    let copies = [
        child
            .stdout
            .take()
            .map(|out| copy_lines(out, log.clone(), echo, false)),
        child
            .stderr
            .take()
            .map(|err| copy_lines(err, log.clone(), echo, true)),
    ];
    Ok((child, copies.into_iter().flatten().collect()))
}

/// Copies a child's output into its log, line by line, and to this process's stdout or stderr
/// when `echo` is set.
fn copy_lines(
    from: impl std::io::Read + Send + 'static,
    log: Arc<Mutex<std::fs::File>>,
    echo: bool,
    to_stderr: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        let mut lines = std::io::BufReader::new(from);
        let mut line = Vec::new();
        while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            if let Ok(mut log) = log.lock() {
                let _ = log.write_all(&line);
            }
            if echo {
                let _ = match to_stderr {
                    true => std::io::stderr().write_all(&line),
                    false => std::io::stdout().write_all(&line),
                };
            }
            line.clear();
        }
    })
}

/// The process's arguments without `--jobs N` / `--jobs=N`, for the children.
pub fn child_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if skip_value {
            skip_value = false;
        } else if arg == "--jobs" {
            skip_value = true;
        } else if !arg.starts_with("--jobs=") {
            out.push(arg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan::new(
            "exp",
            Some((Split::Valid, "loss")),
            vec![
                ("lr", vec![Value::from(0.1), Value::from(0.01)]),
                (
                    "batch_size",
                    vec![Value::from(16), Value::from(32), Value::from(64)],
                ),
            ],
        )
    }

    #[test]
    fn the_grid_is_every_combination_first_key_slowest() {
        let trials = plan().trials();
        assert_eq!(trials.len(), 6);
        assert_eq!(
            trials[1],
            [
                ("lr".into(), Value::from(0.1)),
                ("batch_size".into(), Value::from(32))
            ]
        );
        assert_eq!(trials[5][0].1, Value::from(0.01));
    }

    #[test]
    fn flags_replace_or_add_keys_and_change_the_folder() {
        let dir = plan().dir(Path::new("a"));
        let changed = plan()
            .with_flags(&["batch_size=8".into(), "seed=1,2".into()])
            .unwrap();
        assert_eq!(changed.trials().len(), 2 * 2);
        assert_ne!(changed.dir(Path::new("a")), dir);
        assert_eq!(plan().dir(Path::new("a")), dir);
        assert!(plan().with_flags(&["lr".into()]).is_err());
        assert!(plan().with_flags(&["lr=".into()]).is_err());
    }

    #[test]
    fn trials_are_ranked_by_their_best_value() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = plan();
        let dir = plan.dir(tmp.path());
        for (trial, losses) in [(0, [0.9, 0.5]), (1, [0.4, 0.6]), (2, [f64::NAN, 0.7])] {
            let mut history = History::default();
            let loss = history.declare(Split::Valid, "loss", false);
            for (e, &v) in losses.iter().enumerate() {
                history.record_epoch(loss, e + 1, v);
            }
            let run = tmp.path().join(format!("run-{trial}"));
            plan.trial(dir.clone(), trial)
                .unwrap()
                .record(&history, &run)
                .unwrap();
        }
        let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
        let order: Vec<&str> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(1).unwrap())
            .collect();
        assert_eq!(order, ["1", "0", "2"], "{csv}");
        assert!(
            csv.starts_with("rank,trial,lr,batch_size,valid.loss,epoch,run\n1,1,0.1,32,0.4,1,"),
            "{csv}"
        );
        let md = std::fs::read_to_string(dir.join("sweep.md")).unwrap();
        assert!(md.contains("| best valid.loss |"), "{md}");
        assert!(
            std::fs::read_to_string(dir.join("sweep.svg"))
                .unwrap()
                .starts_with("<svg")
        );
        assert!(
            plan.trial(dir.clone(), 6)
                .unwrap_err()
                .to_string()
                .contains("trials 0 to 5")
        );
        // Ranked by a metric the trials did not record: an error, not an empty row.
        let by_accuracy = plan.rank_by("valid.accuracy").unwrap();
        let err = by_accuracy
            .trial(dir, 0)
            .unwrap()
            .record(&History::default(), tmp.path());
        assert!(err.unwrap_err().to_string().contains("`valid.accuracy`"));
        let misspelt = super::Plan::new("exp", None, Vec::new()).rank_by("accuracy");
        assert!(misspelt.is_err_and(|e| e.to_string().contains("valid.<metric>")));
        // Known before any trial trains when the experiment's metrics are given.
        let recorded = [(Split::Train, "loss"), (Split::Valid, "loss")];
        let unknown = super::tests::plan().recorded(&recorded).rank_by("valid.f1");
        assert!(unknown.is_err_and(|e| {
            e.to_string()
                .contains("does not record it; it records train.loss, valid.loss")
        }));
        let known = super::tests::plan()
            .recorded(&recorded)
            .rank_by("valid.loss");
        assert!(known.is_ok());
    }

    /// A job array's trials ending together: each records itself and rewrites the table, and
    /// the table the last one leaves holds every trial (a table read before another trial's
    /// record landed must never be renamed over a newer one).
    #[test]
    fn trials_ending_together_leave_a_table_of_every_trial() {
        for _ in 0..20 {
            let tmp = tempfile::tempdir().unwrap();
            let dir = plan().dir(tmp.path());
            std::thread::scope(|scope| {
                for trial in 0..6 {
                    let (dir, run) = (dir.clone(), tmp.path().join(format!("run-{trial}")));
                    scope.spawn(move || {
                        let mut history = History::default();
                        let loss = history.declare(Split::Valid, "loss", false);
                        history.record_epoch(loss, 1, trial as f64);
                        plan()
                            .trial(dir, trial)
                            .unwrap()
                            .record(&history, &run)
                            .unwrap();
                    });
                }
            });
            let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
            assert_eq!(csv.lines().count(), 1 + 6, "{csv}");
        }
    }

    #[test]
    fn a_sweep_with_no_trial_recorded_has_a_well_formed_empty_table() {
        let tmp = tempfile::tempdir().unwrap();
        let md = report(tmp.path()).unwrap();
        assert_eq!(
            md,
            "| rank | trial | best metric | epoch | run |\n|---|---|---|---|---|\n"
        );
        let csv = std::fs::read_to_string(tmp.path().join("sweep.csv")).unwrap();
        assert_eq!(csv, "rank,trial,metric,epoch,run\n");
    }

    #[test]
    fn children_get_the_arguments_without_jobs() {
        let args = ["--jobs", "2", "--epochs", "3", "--jobs=4", "--quiet"].map(String::from);
        assert_eq!(child_args(args), ["--epochs", "3", "--quiet"]);
    }
}
