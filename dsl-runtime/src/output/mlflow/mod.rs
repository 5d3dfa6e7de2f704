//! Experiment tracking on an MLflow server: a run's params, metrics, tags, artifacts and status,
//! sent by a background thread so that the server never costs the run a step.
//!
//! `metrics.csv` is the queue. The thread sends its rows in order, in batches, and records in
//! `mlflow.json` (the ledger, in the run directory) how many rows the server acknowledged; what
//! could not be sent (the server down, slow, erroring) stays in `metrics.csv` and goes at the
//! next epoch's end, at the run's end, or with `--mlflow-sync` (the warning gives the command to
//! paste). A row's timestamp is
//! the run's start plus the row's index, so a row sent twice (after a kill between the server's
//! answer and the ledger's update) is the same row to the server, which keeps it once; and a
//! resumed run, which writes again the rows after its checkpoint bit for bit, skips the ones the
//! ledger says were sent. The server then holds exactly one value per (metric, step), equal to
//! `metrics.csv`'s.

mod client;
mod http;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::atomic::replace_file;
use super::metrics_csv::Row;
use client::{Client, Metric, TrackingError};

/// Where a run is tracked (`FitOptions::mlflow`; the command line fills it from
/// `MLFLOW_TRACKING_URI` and `MLFLOW_EXPERIMENT_NAME`). Credentials are never part of it: it is
/// saved in `config.json`; they are read from the environment where they are used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mlflow {
    /// The tracking server, `http://host:port`.
    pub uri: String,
    /// The MLflow experiment; the experiment's `name` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// The sweep's parent run, for a trial of a sweep (`mlflow.parentRunId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run: Option<String>,
}

impl Mlflow {
    /// The MLflow experiment of a run whose `config.json` is `config`: the one named here, else
    /// the experiment's `name`.
    fn experiment_of(&self, config: &serde_json::Value) -> String {
        self.experiment
            .clone()
            .or_else(|| config["name"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// The server `MLFLOW_TRACKING_URI` names, the experiment `MLFLOW_EXPERIMENT_NAME` does (as
    /// MLflow's own clients read them), and a sweep trial's parent run.
    pub fn from_env() -> Option<Mlflow> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let mut target = Mlflow {
            uri: var("MLFLOW_TRACKING_URI")?,
            experiment: var("MLFLOW_EXPERIMENT_NAME"),
            parent_run: var(PARENT_RUN),
        };
        target.forget_credentials("MLFLOW_TRACKING_URI");
        Some(target)
    }

    /// Drops the `user:password@` of [`Mlflow::uri`], with one line saying so: this value is
    /// saved in `config.json` and every checkpoint, and printed in messages, so a secret in it
    /// would reach disk. `source` names where the URI came from.
    pub(crate) fn forget_credentials(&mut self, source: &str) {
        if let Some(clean) = without_userinfo(&self.uri) {
            say!(
                "warning: {source} holds credentials (`user:password@` in {clean}); they are neither used nor stored: put them in MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN"
            );
            self.uri = clean;
        }
    }
}

/// `uri` without the user information of its authority (`http://user:secret@host:5000/x` →
/// `http://host:5000/x`); `None` when it has none.
fn without_userinfo(uri: &str) -> Option<String> {
    let (scheme, rest) = uri.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..end].rfind('@')?;
    Some(format!("{scheme}://{}", &rest[at + 1..]))
}

/// A sweep's run on the server, whose trials are its children (`mlflow.parentRunId`), so that
/// MLflow's compare view lines them up.
pub(crate) struct SweepParent {
    client: Client,
    run_id: String,
}

/// What `mlflow-parent.json` in a sweep's or study's folder holds: its parent run on a server.
#[derive(Serialize, Deserialize)]
struct ParentLedger {
    uri: String,
    run_id: String,
}

impl SweepParent {
    /// The parent run of the sweep in `dir` (`<artifacts>/<name>/sweep-<hash>`), when the
    /// environment names a server: the one `dir/mlflow-parent.json` names on that server (a resumed
    /// sweep or study keeps one parent), else a new one; `None` (with one line) when it cannot
    /// be created.
    pub fn start(dir: &Path) -> Option<SweepParent> {
        let target = Mlflow::from_env()?;
        let experiment = target.experiment.clone().unwrap_or_else(|| {
            dir.parent()
                .map(run_name)
                .unwrap_or_else(|| "sweep".to_owned())
        });
        let ledger = dir.join(PARENT_LEDGER);
        let earlier = crate::read::bytes(&ledger, crate::read::SMALL)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<ParentLedger>(&bytes).ok())
            .filter(|earlier| earlier.uri == target.uri);
        let created = Client::from_env(&target.uri)
            .map_err(|e| e.to_string())
            .and_then(|client| {
                if let Some(earlier) = earlier
                    && client.update(&earlier.run_id, "RUNNING", None).is_ok()
                {
                    return Ok(SweepParent {
                        client,
                        run_id: earlier.run_id,
                    });
                }
                let tags = [("dsl.sweep".to_owned(), dir.display().to_string())];
                let parent = client
                    .experiment(&experiment)
                    .and_then(|id| client.create_run(&id, &run_name(dir), now_ms(), &tags))
                    .map(|run| SweepParent {
                        client,
                        run_id: run.run_id,
                    })
                    .map_err(|e| e.to_string())?;
                let recorded = ParentLedger {
                    uri: target.uri.clone(),
                    run_id: parent.run_id.clone(),
                };
                let json = serde_json::to_vec_pretty(&recorded).map_err(|e| e.to_string())?;
                std::fs::create_dir_all(dir)
                    .and_then(|()| replace_file(&ledger, &json))
                    .map_err(|e| format!("cannot write {}: {e}", ledger.display()))?;
                Ok(parent)
            });
        match created {
            Ok(parent) => Some(parent),
            Err(why) => {
                say!(
                    "warning: MLflow: the sweep's parent run cannot be created ({why}); its trials are tracked on their own"
                );
                None
            }
        }
    }

    /// What a trial's process is given to name its parent.
    pub fn env(&self) -> (&'static str, String) {
        (PARENT_RUN, self.run_id.clone())
    }

    /// Tags the run of a trial that ended (`dsl.trial.state`: complete, pruned, failed), so
    /// the server tells pruned children apart; one line when it cannot.
    pub fn tag_trial(&self, run_dir: &Path, state: &str) {
        let Some(ledger) = Ledger::read(run_dir) else {
            return;
        };
        let tag = [("dsl.trial.state".to_owned(), state.to_owned())];
        if let Err(error) = self.client.log_batch(&ledger.run_id, &[], &[], &tag) {
            say!(
                "warning: MLflow: trial run {} keeps no state tag: {error}",
                ledger.run_id
            );
        }
    }

    /// Logs on the parent run what the sweep or study is (params, the same at every resume),
    /// where it stands (tags) and its best value so far (a metric at `step`, the trials
    /// ended); one line when it cannot.
    pub fn log(
        &self,
        params: &[(String, String)],
        tags: &[(String, String)],
        metric: Option<(&str, f64, u64)>,
    ) {
        let metrics: Vec<Metric> = metric
            .into_iter()
            .map(|(key, value, step)| Metric {
                key: key.to_owned(),
                value,
                timestamp: now_ms(),
                step,
            })
            .collect();
        if let Err(error) = self.client.log_batch(&self.run_id, &metrics, params, tags) {
            say!(
                "warning: MLflow: the parent run {} is not up to date: {error}",
                self.run_id
            );
        }
    }

    pub fn end(self, succeeded: bool) {
        let status = if succeeded { "FINISHED" } else { "FAILED" };
        if let Err(error) = self.client.update(&self.run_id, status, Some(now_ms())) {
            say!("warning: MLflow: the sweep's parent run keeps its status: {error}");
        }
    }
}

/// The weights `--mlflow-log-model` writes and logs.
pub const MODEL_FILE: &str = "model.safetensors";

/// Uploads `name` of a tracked run's directory as an artifact (after the run's end: the
/// exported weights); one line when it cannot go, which `--mlflow-sync` then sends.
pub fn log_file(run_dir: &Path, name: &str) {
    let outcome = Ledger::read(run_dir)
        .ok_or_else(|| "the run is not on the server".to_owned())
        .and_then(|ledger| {
            let bytes = crate::read::bytes(&run_dir.join(name), crate::read::ARTIFACT)
                .map_err(|e| e.to_string())?;
            Client::from_env(&ledger.uri)?
                .upload(&ledger.artifact_uri, name, &bytes)
                .map_err(|e| e.to_string())
        });
    if let Err(why) = outcome {
        say!(
            "warning: MLflow tracking is behind: {name} was not logged ({why}); {} sends it",
            sync_command(run_dir)
        );
    }
}

/// The variable a sweep sets for its trials: the parent run's id.
pub(crate) const PARENT_RUN: &str = "DSL_MLFLOW_PARENT_RUN";

/// `--mlflow-sync` of the saved run `run_dir`: to the server the environment names, else the
/// one the run recorded.
pub fn sync_saved(run_dir: &Path) -> Result<(), String> {
    let config = saved_config(run_dir)?;
    let recorded = serde_json::from_value::<Mlflow>(config["mlflow"].clone()).ok();
    let target = Mlflow::from_env().or(recorded).ok_or_else(|| {
        "no MLflow server: set MLFLOW_TRACKING_URI (e.g. `http://127.0.0.1:5000`)".to_owned()
    })?;
    let experiment = target.experiment_of(&config);
    sync_run_dir(&target, run_dir, &experiment)
}

/// The ledger's file in the run directory.
pub const LEDGER: &str = "mlflow.json";

/// The file in a sweep's or study's folder naming its parent run.
const PARENT_LEDGER: &str = "mlflow-parent.json";

/// The file in a run directory holding how the run ended ([`End`]).
const END: &str = "mlflow-end.json";

/// Rows, params and tags per request, within MLflow's limits on `log-batch`.
const METRICS_PER_BATCH: usize = 1000;
const PAIRS_PER_BATCH: usize = 100;
/// The longest param value MLflow 3 keeps; longer ones are cut, saying so.
const PARAM_VALUE_LIMIT: usize = 6000;
/// The shortest time between two syncs during a run, and between two tries while the server
/// does not answer.
const INTERVAL: Duration = Duration::from_secs(1);
const RETRY: Duration = Duration::from_secs(10);
/// How long the end of a run waits for the last rows and artifacts to reach the server: what
/// is not sent by then stays in `metrics.csv` and the ledger for `--mlflow-sync`, so a server
/// that is slow or hangs costs the run at most this.
const FINISH_WAIT: Duration = Duration::from_secs(2);

/// What the server holds of a run: `mlflow.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Ledger {
    uri: String,
    experiment_id: String,
    run_id: String,
    artifact_uri: String,
    /// The run's start, in milliseconds since 1970; a row's timestamp is this plus its index.
    start_ms: u64,
    /// Rows of `metrics.csv` (after its header) the server acknowledged, from the first.
    rows_sent: usize,
    /// Every param the server holds, with the value it holds: a key `config.json` gains later
    /// (`metrics.test`, once the test split is measured) is sent then, and a value a resume
    /// changed (`epochs` extended) goes as the tag `dsl.changed.<key>`, since MLflow refuses to
    /// change a param.
    #[serde(default)]
    params: std::collections::BTreeMap<String, String>,
    /// Tags sent for changed params, with their values.
    #[serde(default)]
    changed: std::collections::BTreeMap<String, String>,
}

impl Ledger {
    fn read(run_dir: &Path) -> Option<Ledger> {
        let bytes = crate::read::bytes(&run_dir.join(LEDGER), crate::read::SMALL).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn write(&self, run_dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        replace_file(&run_dir.join(LEDGER), &json)
    }
}

/// How a run ended, kept on disk before it is sent: an end the server did not take within
/// [`FINISH_WAIT`] (a failed run's status and error included) is what `--mlflow-sync` sends
/// later, instead of leaving the run `RUNNING` on the server.
#[derive(Debug, Serialize, Deserialize)]
struct End {
    status: String,
    artifacts: Vec<String>,
    /// Why a failed run failed: the tag `dsl.error`.
    error: Option<String>,
}

impl End {
    fn read(run_dir: &Path) -> Option<End> {
        let bytes = crate::read::bytes(&run_dir.join(END), crate::read::SMALL).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn write(&self, run_dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        replace_file(&run_dir.join(END), &json)
    }
}

/// A run as the server should show it, gathered at its start.
pub(crate) struct RunInfo {
    pub run_dir: PathBuf,
    /// The MLflow run's name: the run directory's (`run-3`).
    pub name: String,
    pub experiment: String,
    pub parent_run: Option<String>,
    /// `config.json`'s value: every param, flattened.
    pub config: serde_json::Value,
    pub tags: Vec<(String, String)>,
}

enum Message {
    /// New rows are in `metrics.csv`.
    Sync,
    /// The run ended.
    Finish(End),
}

/// The background thread of a tracked run.
pub(crate) struct Tracker {
    messages: SyncSender<Message>,
    done: Receiver<()>,
    worker: Option<JoinHandle<()>>,
    finished: bool,
    run_dir: PathBuf,
    /// What to run when the end was not sent ([`sync_command`]).
    sync_command: String,
}

impl Tracker {
    /// Starts tracking `info`'s run on `target`: the thread creates (or, resuming, reopens)
    /// the MLflow run and sends what is already in `metrics.csv`. Only a malformed URI fails
    /// here; a server that is down only delays tracking.
    pub fn start(target: &Mlflow, info: RunInfo) -> Result<Tracker, String> {
        let client = Client::from_env(&target.uri)?;
        let sync_command = sync_command(&info.run_dir);
        // A resumed run has not ended: the end an earlier process kept is not this one's.
        let run_dir = info.run_dir.clone();
        match std::fs::remove_file(run_dir.join(END)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "cannot remove {}: {error}",
                    run_dir.join(END).display()
                ));
            }
            _ => {}
        }
        // Room for the end and a few epochs: a full queue means a sync is already pending.
        let (messages, inbox) = sync_channel(4);
        let (finished, done) = sync_channel(1);
        let mut worker = Worker::new(client, target.uri.clone(), info);
        let handle = std::thread::Builder::new()
            .name("mlflow".to_owned())
            .spawn(move || {
                worker.sync();
                let mut last = Instant::now();
                let mut pending = false;
                loop {
                    // At most one sync per interval: the flushes of short epochs in between are
                    // that one sync (a longer interval while the server does not answer).
                    let interval = if worker.warned { RETRY } else { INTERVAL };
                    let message = if pending {
                        match inbox.recv_timeout(interval.saturating_sub(last.elapsed())) {
                            Ok(message) => Some(message),
                            Err(RecvTimeoutError::Timeout) => None,
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    } else {
                        match inbox.recv() {
                            Ok(message) => Some(message),
                            Err(_) => break,
                        }
                    };
                    match message {
                        None => {}
                        Some(Message::Sync) => pending = true,
                        Some(Message::Finish(end)) => {
                            worker.finish(end);
                            break;
                        }
                    }
                    if pending && last.elapsed() >= interval {
                        worker.sync();
                        last = Instant::now();
                        pending = false;
                    }
                }
                let _ = finished.send(());
            })
            .map_err(|e| format!("cannot start the tracking thread: {e}"))?;
        Ok(Tracker {
            messages,
            done,
            worker: Some(handle),
            finished: false,
            run_dir,
            sync_command,
        })
    }

    /// Rows were flushed to `metrics.csv`: send them. Never blocks: with a sync already waiting,
    /// this one is the same.
    pub fn sync(&self) {
        let _ = self.messages.try_send(Message::Sync);
    }

    /// The run ended: the last rows, the artifacts and the status go, waited for at most
    /// [`FINISH_WAIT`]; what is not sent by then stays for `--mlflow-sync`, the end in
    /// [`END`].
    pub fn finish(
        &mut self,
        status: &'static str,
        artifacts: Vec<&'static str>,
        error: Option<String>,
    ) {
        if self.finished {
            return;
        }
        self.finished = true;
        let end = End {
            status: status.to_owned(),
            artifacts: artifacts.into_iter().map(str::to_owned).collect(),
            error,
        };
        if let Err(error) = end.write(&self.run_dir) {
            say!(
                "warning: cannot write {}: {error}; if the server does not take the run's end now, it shows the run as RUNNING",
                self.run_dir.join(END).display()
            );
        }
        let message = Message::Finish(end);
        // One deadline for handing the end over and for its sending: a worker held by a
        // server that does not answer may not take the message at once.
        let deadline = Instant::now() + FINISH_WAIT;
        let mut message = message;
        loop {
            match self.messages.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(again)) if Instant::now() < deadline => {
                    message = again;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(TrySendError::Full(_)) => {
                    self.late();
                    return;
                }
            }
        }
        match self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                if let Some(worker) = self.worker.take() {
                    let _ = worker.join();
                }
            }
            Err(RecvTimeoutError::Timeout) => self.late(),
        }
    }

    /// The end was not sent within [`FINISH_WAIT`].
    fn late(&self) {
        say!(
            "warning: MLflow tracking is behind: the server did not take the run's end in {} s; {} sends the rest",
            FINISH_WAIT.as_secs(),
            self.sync_command
        )
    }
}

impl Drop for Tracker {
    /// A run that ends without saying how (an error returned through it) failed.
    fn drop(&mut self) {
        self.finish("FAILED", Vec::new(), None);
    }
}

/// Sends what `run_dir` holds that the server does not (`--mlflow-sync`): rows, params and,
/// when the run ended ([`END`] is there), its artifacts, status and error. Blocking; says
/// what the server holds.
pub fn sync_run_dir(target: &Mlflow, run_dir: &Path, experiment: &str) -> Result<(), String> {
    let ledger = sync(target, run_dir, experiment)?;
    say!(
        "MLflow: run {} of experiment {} holds the {} values of {}",
        ledger.run_id,
        ledger.experiment_id,
        ledger.rows_sent,
        run_dir.join("metrics.csv").display()
    );
    Ok(())
}

/// The `config.json` of `run_dir`, or why it cannot be read.
fn saved_config(run_dir: &Path) -> Result<serde_json::Value, String> {
    let path = run_dir.join("config.json");
    crate::read::config(&path)
        .map_err(|why| format!("{} is not a readable config.json: {why}", path.display()))
}

fn sync(target: &Mlflow, run_dir: &Path, experiment: &str) -> Result<Ledger, String> {
    let config = saved_config(run_dir)?;
    let info = RunInfo {
        run_dir: run_dir.to_owned(),
        name: tracked_name(run_dir),
        experiment: experiment.to_owned(),
        parent_run: target.parent_run.clone(),
        tags: tags_of(&config, run_dir),
        config,
    };
    let mut worker = Worker::new(Client::from_env(&target.uri)?, target.uri.clone(), info);
    match End::read(run_dir) {
        Some(mut end) => {
            // The model file a tracked run logs is written after the run's end.
            end.artifacts.push(MODEL_FILE.to_owned());
            worker.finish(end);
        }
        None => worker.sync(),
    }
    match worker.ledger.take() {
        Some(ledger) if !worker.warned && !worker.disabled => Ok(ledger),
        _ => Err(format!(
            "the server did not take everything: {} sends it when it is reachable",
            sync_command(run_dir)
        )),
    }
}

/// After the test split of a tracked run was measured (after the run's end): its rows and the
/// files it changed, sent like `--mlflow-sync` does, with one line only when they cannot go.
pub(crate) fn after_test(run_dir: &Path, config: &serde_json::Value) {
    let Ok(target) = serde_json::from_value::<Mlflow>(config["mlflow"].clone()) else {
        return;
    };
    let experiment = target.experiment_of(config);
    if let Err(message) = sync(&target, run_dir, &experiment) {
        say!("warning: MLflow tracking is behind: {message}");
    }
}

/// The command that sends what the server lacks of `run_dir` (`<artifacts>/<name>/run-<N>`),
/// in backquotes, to paste: this program with `--mlflow-sync`, the run's artifacts folder and
/// its run.
pub(crate) fn sync_command(run_dir: &Path) -> String {
    let program = std::env::args()
        .next()
        .unwrap_or_else(|| "<program>".to_owned());
    let artifacts = run_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    format!(
        "`{program} --mlflow-sync --artifacts {} --run {}`",
        artifacts.display(),
        run_name(run_dir)
    )
}

/// The MLflow run's name: the run directory's last three parts,
/// `<artifacts folder>/<name>/run-<N>`, so runs of one experiment kept in different artifact
/// folders are told apart (every first run of a folder is `run-1`).
pub(crate) fn tracked_name(run_dir: &Path) -> String {
    let parts: Vec<String> = run_dir
        .components()
        .rev()
        .take(3)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// The run directory's name (`run-3`), or a sweep folder's.
pub(crate) fn run_name(run_dir: &Path) -> String {
    run_dir
        .file_name()
        .map_or_else(|| "run".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// The tags MLflow shows beside a run: the commit it was built from and what the runtime
/// records of it.
pub(crate) fn tags_of(config: &serde_json::Value, run_dir: &Path) -> Vec<(String, String)> {
    let provenance = &config["provenance"];
    // The whole path, for runs whose names (`tracked_name`) still coincide.
    let run_dir = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_owned());
    // The `device:` key or `--device`; without either a run trains on flex.
    let device = match &config["hyperparameters"]["device"] {
        serde_json::Value::Null => &serde_json::Value::from("flex"),
        named => named,
    };
    let mut tags = vec![
        (
            "dsl.runtime_version".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        ),
        ("dsl.run_dir".to_owned(), run_dir.display().to_string()),
    ];
    if let Some(commit) = provenance["git"]["commit"].as_str() {
        tags.push(("mlflow.source.git.commit".to_owned(), commit.to_owned()));
    }
    for (tag, value) in [
        ("dsl.burn", &provenance["burn"]),
        ("dsl.rustc", &provenance["rustc"]),
        ("dsl.device", device),
        ("dsl.ranks", &config["ranks"]),
    ] {
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::String(text) => tags.push((tag.to_owned(), text.clone())),
            other => tags.push((tag.to_owned(), other.to_string())),
        }
    }
    tags
}

/// The thread's state: the server, the ledger once the run exists there.
struct Worker {
    client: Client,
    uri: String,
    info: RunInfo,
    ledger: Option<Ledger>,
    /// Whether the one "tracking is behind" warning was printed.
    warned: bool,
    /// After an error that will not go away (credentials, a rejected request): nothing more.
    disabled: bool,
    /// `metrics.csv` read so far: its bytes, and the rows among them. The file only grows while
    /// a process writes it (a resume trims it before tracking starts), so each sync reads what
    /// was added since the last.
    read: (u64, usize),
    /// Rows read but not yet acknowledged, oldest first.
    unsent: std::collections::VecDeque<Metric>,
}

impl Worker {
    fn new(client: Client, uri: String, info: RunInfo) -> Self {
        Self {
            client,
            uri,
            info,
            ledger: None,
            warned: false,
            disabled: false,
            read: (0, 0),
            unsent: std::collections::VecDeque::new(),
        }
    }

    fn behind(&mut self, error: &TrackingError) {
        if !error.transient() {
            self.disabled = true;
            say!(
                "warning: MLflow tracking stopped for this run: {error}; training goes on, metrics.csv keeps every value and {} sends them",
                sync_command(&self.info.run_dir)
            );
        } else if !self.warned {
            say!(
                "warning: MLflow tracking is behind: {error}; training goes on, and what is not sent goes with a later epoch's rows (tried again every {} s), at the run's end, or with {}",
                RETRY.as_secs(),
                sync_command(&self.info.run_dir)
            );
        }
        self.warned = true;
    }

    /// The run on the server: the ledger's (a resumed or synced run), else a new one.
    fn ensure_run(&mut self) -> Result<(), TrackingError> {
        if self.ledger.is_some() {
            return Ok(());
        }
        if let Some(mut ledger) = Ledger::read(&self.info.run_dir).filter(|l| l.uri == self.uri) {
            self.client.update(&ledger.run_id, "RUNNING", None)?;
            // The server's params, not the ledger's: a process killed between the server's
            // answer and the ledger's update sent params the ledger does not name, and sending
            // them again with another value (`resume`) would be refused.
            let held = self.client.run_data(&ledger.run_id)?;
            let changed = held
                .tags
                .into_iter()
                .filter(|(tag, _)| tag.starts_with(CHANGED))
                .collect();
            if (&ledger.params, &ledger.changed) != (&held.params, &changed) {
                ledger.params = held.params;
                ledger.changed = changed;
                self.save(&ledger);
            }
            self.ledger = Some(ledger);
            return Ok(());
        }
        let experiment_id = self.client.experiment(&self.info.experiment)?;
        let start_ms = now_ms();
        let mut tags = self.info.tags.clone();
        if let Some(parent) = &self.info.parent_run {
            tags.push(("mlflow.parentRunId".to_owned(), parent.clone()));
        }
        let run = self
            .client
            .create_run(&experiment_id, &self.info.name, start_ms, &tags)?;
        let ledger = Ledger {
            uri: self.uri.clone(),
            experiment_id,
            run_id: run.run_id,
            artifact_uri: run.artifact_uri,
            start_ms,
            rows_sent: 0,
            params: Default::default(),
            changed: Default::default(),
        };
        self.save(&ledger);
        self.ledger = Some(ledger);
        Ok(())
    }

    fn save(&mut self, ledger: &Ledger) {
        if let Err(err) = ledger.write(&self.info.run_dir) {
            say!("warning: cannot write {LEDGER}: {err}; MLflow tracking stops");
            self.disabled = true;
        }
    }

    /// Everything `metrics.csv` holds that the server does not, and the params once.
    fn sync(&mut self) {
        if self.disabled {
            return;
        }
        if let Err(error) = self.try_sync() {
            self.behind(&error);
        } else if self.warned {
            self.warned = false;
            say!("MLflow tracking caught up");
        }
    }

    fn try_sync(&mut self) -> Result<(), TrackingError> {
        self.ensure_run()?;
        let mut ledger = self.ledger.clone().expect("ensured");
        let (new, changed) = params_to_send(&params_of(&self.info.config), &ledger);
        if !new.is_empty() || !changed.is_empty() {
            for chunk in new.chunks(PAIRS_PER_BATCH) {
                let sent = self.client.log_batch(&ledger.run_id, &[], chunk, &[]);
                only_this(sent, || format!("{} params", chunk.len()))?;
            }
            for chunk in changed.chunks(PAIRS_PER_BATCH) {
                let sent = self.client.log_batch(&ledger.run_id, &[], &[], chunk);
                only_this(sent, || format!("{} tags of changed params", chunk.len()))?;
            }
            ledger.params.extend(new);
            ledger.changed.extend(changed);
            self.save(&ledger);
            self.ledger = Some(ledger.clone());
        }
        self.read_rows(ledger.rows_sent, ledger.start_ms);
        while !self.unsent.is_empty() {
            let count = self.unsent.len().min(METRICS_PER_BATCH);
            let batch: Vec<Metric> = self.unsent.iter().take(count).cloned().collect();
            let sent = self.client.log_batch(&ledger.run_id, &batch, &[], &[]);
            only_this(sent, || {
                format!(
                    "rows {} to {} of metrics.csv",
                    ledger.rows_sent + 1,
                    ledger.rows_sent + count
                )
            })?;
            self.unsent.drain(..count);
            ledger.rows_sent += count;
            self.save(&ledger);
            self.ledger = Some(ledger.clone());
        }
        Ok(())
    }

    /// Reads the rows added to `metrics.csv` since the last call (whole lines only: the file
    /// may be mid-write), keeping those from row `sent` on.
    fn read_rows(&mut self, sent: usize, start_ms: u64) {
        use std::io::{Read, Seek, SeekFrom};
        let mut added = Vec::new();
        let path = self.info.run_dir.join("metrics.csv");
        let read = crate::read::open(&path, crate::read::METRICS).and_then(|(mut f, _)| {
            f.seek(SeekFrom::Start(self.read.0))?;
            f.take(crate::read::METRICS.bytes).read_to_end(&mut added)
        });
        if read.is_err() {
            return;
        }
        let whole = added
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |end| end + 1);
        for line in String::from_utf8_lossy(&added[..whole]).lines() {
            let Some(row) = Row::parse(line) else {
                continue;
            };
            let index = self.read.1;
            self.read.1 += 1;
            if index >= sent
                && let Some(metric) = metric(&row, start_ms + index as u64)
            {
                self.unsent.push_back(metric);
            }
        }
        self.read.0 += whole as u64;
    }

    fn finish(
        &mut self,
        End {
            status,
            artifacts,
            error,
        }: End,
    ) {
        self.sync();
        if self.disabled || self.warned {
            return;
        }
        let Some(ledger) = self.ledger.clone() else {
            return;
        };
        if let Some(mut error) = error {
            let mut cut = error.len().min(PARAM_VALUE_LIMIT);
            while !error.is_char_boundary(cut) {
                cut -= 1;
            }
            error.truncate(cut);
            let tag = [("dsl.error".to_owned(), error)];
            if let Err(failure) = self.client.log_batch(&ledger.run_id, &[], &[], &tag) {
                self.behind(&failure);
                return;
            }
        }
        for name in &artifacts {
            let Ok(bytes) =
                crate::read::bytes(&self.info.run_dir.join(name), crate::read::ARTIFACT)
            else {
                continue;
            };
            if let Err(error) = self.client.upload(&ledger.artifact_uri, name, &bytes) {
                self.behind(&error);
                return;
            }
        }
        if let Err(error) = self.client.update(&ledger.run_id, &status, Some(now_ms())) {
            self.behind(&error);
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A row as MLflow's metric: per-step values under `split/metric` at their global step, epoch
/// values under `epoch/split/metric` at their epoch (TensorBoard's tags, so both tools show the
/// same names).
fn metric(row: &Row, timestamp: u64) -> Option<Metric> {
    let value: f64 = row.value.parse().ok()?;
    let (key, step) = match row.key.step {
        Some(step) => (format!("{}/{}", row.key.split, row.key.metric), step),
        None => (
            format!("epoch/{}/{}", row.key.split, row.key.metric),
            row.key.epoch,
        ),
    };
    Some(Metric {
        key,
        value,
        timestamp,
        step: step as u64,
    })
}

/// A request's result, where a refusal of its content alone (neither the server down nor the
/// credentials refused) costs that request: one line names what the server does not hold, and
/// tracking goes on with the next.
fn only_this(
    sent: Result<(), TrackingError>,
    what: impl FnOnce() -> String,
) -> Result<(), TrackingError> {
    match sent {
        Err(error) if !error.transient() && !error.fatal() => {
            say!(
                "warning: MLflow: {error}; the server does not hold {} (the run's files do), and tracking goes on",
                what()
            );
            Ok(())
        }
        other => other,
    }
}

/// The prefix of the tag that holds a param's value changed by a resume.
const CHANGED: &str = "dsl.changed.";

/// A param or tag: key and value.
type Pair = (String, String);

/// Of `params` (the run's config now), the keys the server does not hold yet, to send as
/// params, and the values that differ from what it holds, as `dsl.changed.<key>` tags not yet
/// sent with that value.
fn params_to_send(params: &[(String, String)], ledger: &Ledger) -> (Vec<Pair>, Vec<Pair>) {
    let mut new = Vec::new();
    let mut changed = Vec::new();
    for (key, value) in params {
        match ledger.params.get(key) {
            None => new.push((key.clone(), value.clone())),
            Some(held) if held != value => {
                let tag = format!("{CHANGED}{key}");
                if ledger.changed.get(&tag) != Some(value) {
                    changed.push((tag, value.clone()));
                }
            }
            Some(_) => {}
        }
    }
    (new, changed)
}

/// `config.json` flattened into params: `optimizer.beta_1`, `hyperparameters.hidden`, ...; a
/// value longer than MLflow keeps is cut, saying so.
fn params_of(config: &serde_json::Value) -> Vec<(String, String)> {
    fn walk(prefix: &str, value: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match value {
            serde_json::Value::Object(map) if !map.is_empty() => {
                for (key, value) in map {
                    let key = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(&key, value, out);
                }
            }
            serde_json::Value::String(text) => out.push((prefix.to_owned(), text.clone())),
            other => out.push((prefix.to_owned(), other.to_string())),
        }
    }
    let mut params = Vec::new();
    walk("", config, &mut params);
    for (_, value) in &mut params {
        if value.len() > PARAM_VALUE_LIMIT {
            let mut cut = PARAM_VALUE_LIMIT - 40;
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            let total = value.len();
            value.truncate(cut);
            value.push_str(&format!("… (cut: {total} bytes in config.json)"));
        }
    }
    params
}

#[cfg(test)]
mod tests {
    #[test]
    fn new_keys_go_as_params_and_changed_values_as_tags_once() {
        use super::{Ledger, params_to_send};
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let mut ledger = Ledger::default();
        ledger
            .params
            .extend([pair("epochs", "2"), pair("lr", "0.01")]);
        let now = [
            pair("epochs", "3"),
            pair("lr", "0.01"),
            pair("metrics.test", "[\"loss\"]"),
        ];
        let (new, changed) = params_to_send(&now, &ledger);
        assert_eq!(new, [pair("metrics.test", "[\"loss\"]")]);
        assert_eq!(changed, [pair("dsl.changed.epochs", "3")]);
        ledger.params.extend(new);
        ledger.changed.extend(changed);
        assert_eq!(params_to_send(&now, &ledger), (vec![], vec![]), "sent once");
    }

    #[test]
    fn credentials_are_cut_from_a_uri_and_nothing_else() {
        use super::without_userinfo;
        assert_eq!(
            without_userinfo("http://bob:s3cret@127.0.0.1:5000/prefix?a=b@c").as_deref(),
            Some("http://127.0.0.1:5000/prefix?a=b@c")
        );
        assert_eq!(
            without_userinfo("http://tok@host").as_deref(),
            Some("http://host")
        );
        assert_eq!(without_userinfo("http://host:5000/a@b"), None);
        assert_eq!(without_userinfo("databricks"), None);
    }

    use super::*;

    #[test]
    fn rows_become_metrics_under_tensorboards_names_and_params_are_flat() {
        let step = Row::parse("7,2,train,loss,0.5").unwrap();
        let epoch = Row::parse(",2,valid,accuracy,NaN").unwrap();
        assert_eq!(
            metric(&step, 100),
            Some(Metric {
                key: "train/loss".into(),
                value: 0.5,
                timestamp: 100,
                step: 7
            })
        );
        let epoch = metric(&epoch, 101).unwrap();
        assert_eq!(
            (epoch.key.as_str(), epoch.step),
            ("epoch/valid/accuracy", 2)
        );
        assert!(epoch.value.is_nan());
        let config = serde_json::json!({
            "epochs": 3,
            "optimizer": { "kind": "adam", "beta_1": 0.9 },
            "note": "x".repeat(7000),
        });
        let params = params_of(&config);
        assert_eq!(params[0], ("epochs".into(), "3".into()));
        assert_eq!(params[1], ("optimizer.kind".into(), "adam".into()));
        assert_eq!(params[2], ("optimizer.beta_1".into(), "0.9".into()));
        assert!(params[3].1.len() <= PARAM_VALUE_LIMIT);
        assert!(params[3].1.ends_with("(cut: 7000 bytes in config.json)"));
    }
}
