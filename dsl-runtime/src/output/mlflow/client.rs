//! The MLflow tracking server's REST API (`/api/2.0/mlflow/..`), the calls a run needs.

use serde_json::{Value, json};

use super::http::{Endpoint, basic};

/// Why a call did not go through. Never holds a credential: the server's own message and the
/// status only.
#[derive(Debug)]
pub(crate) enum TrackingError {
    /// No answer: the server is down, unreachable or too slow.
    Unreachable(String),
    /// The server answered with an error.
    Refused { status: u16, message: String },
}

impl std::fmt::Display for TrackingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrackingError::Unreachable(why) => write!(f, "the server does not answer ({why})"),
            TrackingError::Refused {
                status: 401 | 403, ..
            } => write!(
                f,
                "the server refused the credentials (check MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD or MLFLOW_TRACKING_TOKEN)"
            ),
            TrackingError::Refused { status, message } => {
                write!(f, "the server answered {status}: {message}")
            }
        }
    }
}

impl TrackingError {
    /// Whether the same call may go through later (the server down or overloaded), rather than
    /// never (credentials, a request it rejects).
    pub fn transient(&self) -> bool {
        match self {
            TrackingError::Unreachable(_) => true,
            TrackingError::Refused { status, .. } => *status >= 500 || *status == 429,
        }
    }

    /// Whether no later call can go through either: the credentials refused (or no run to send
    /// to). Any other refusal is of that request's content alone.
    pub fn fatal(&self) -> bool {
        matches!(
            self,
            TrackingError::Refused {
                status: 0 | 401 | 403 | 404,
                ..
            }
        )
    }
}

/// One value of a metric's history, as MLflow stores it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Metric {
    pub key: String,
    pub value: f64,
    pub timestamp: u64,
    pub step: u64,
}

impl Metric {
    fn json(&self) -> Value {
        // Protobuf's JSON mapping spells the values JSON has no number for.
        let value = match self.value {
            v if v.is_finite() => json!(v),
            v if v.is_nan() => json!("NaN"),
            v if v > 0.0 => json!("Infinity"),
            _ => json!("-Infinity"),
        };
        json!({ "key": self.key, "value": value, "timestamp": self.timestamp, "step": self.step })
    }
}

/// A run created on the server.
pub(crate) struct CreatedRun {
    pub run_id: String,
    pub artifact_uri: String,
}

/// What the server holds of a run besides its metrics.
pub(crate) struct RunData {
    pub params: std::collections::BTreeMap<String, String>,
    pub tags: std::collections::BTreeMap<String, String>,
}

/// A tracking server, with the credentials the environment gives.
#[derive(Clone)]
pub(crate) struct Client {
    endpoint: Endpoint,
}

impl Client {
    /// The server at `uri`, with `MLFLOW_TRACKING_TOKEN` (a bearer token) or
    /// `MLFLOW_TRACKING_USERNAME`/`MLFLOW_TRACKING_PASSWORD` (basic auth), as MLflow's own
    /// client reads them.
    pub fn from_env(uri: &str) -> Result<Self, String> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let authorization = match (
            var("MLFLOW_TRACKING_TOKEN"),
            var("MLFLOW_TRACKING_USERNAME"),
        ) {
            (Some(token), _) => Some(format!("Bearer {token}")),
            (None, Some(user)) => Some(basic(
                &user,
                &var("MLFLOW_TRACKING_PASSWORD").unwrap_or_default(),
            )),
            (None, None) => None,
        };
        Ok(Self {
            endpoint: Endpoint::parse(uri, authorization)?,
        })
    }

    fn call(&self, method: &str, api: &str, body: Option<Value>) -> Result<Value, TrackingError> {
        let bytes = body.map(|b| b.to_string().into_bytes());
        let response = self
            .endpoint
            .request(
                method,
                &format!("/api/2.0/mlflow/{api}"),
                bytes.as_deref().map(|b| ("application/json", b)),
            )
            .map_err(|e| TrackingError::Unreachable(e.to_string()))?;
        answer(response.status, &response.body)
    }

    /// The id of experiment `name`, created when it does not exist yet.
    pub fn experiment(&self, name: &str) -> Result<String, TrackingError> {
        let found = self.call(
            "GET",
            &format!("experiments/get-by-name?experiment_name={}", percent(name)),
            None,
        );
        match found {
            Ok(value) => return id_of(&value["experiment"]["experiment_id"]),
            Err(TrackingError::Refused { status: 404, .. }) => {}
            Err(other) => return Err(other),
        }
        match self.call("POST", "experiments/create", Some(json!({ "name": name }))) {
            Ok(value) => id_of(&value["experiment_id"]),
            // Created meanwhile by another process (a sweep's trials start together).
            Err(TrackingError::Refused { status: 400, .. }) => {
                let value = self.call(
                    "GET",
                    &format!("experiments/get-by-name?experiment_name={}", percent(name)),
                    None,
                )?;
                id_of(&value["experiment"]["experiment_id"])
            }
            Err(other) => Err(other),
        }
    }

    pub fn create_run(
        &self,
        experiment_id: &str,
        name: &str,
        start_ms: u64,
        tags: &[(String, String)],
    ) -> Result<CreatedRun, TrackingError> {
        let tags: Vec<Value> = tags
            .iter()
            .map(|(k, v)| json!({ "key": k, "value": v }))
            .collect();
        let value = self.call(
            "POST",
            "runs/create",
            Some(json!({
                "experiment_id": experiment_id,
                "run_name": name,
                "start_time": start_ms,
                "tags": tags,
            })),
        )?;
        let info = &value["run"]["info"];
        Ok(CreatedRun {
            run_id: id_of(&info["run_id"])?,
            artifact_uri: info["artifact_uri"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// Metrics (at most 1000), params (at most 100) and tags (at most 100) in one request.
    pub fn log_batch(
        &self,
        run_id: &str,
        metrics: &[Metric],
        params: &[(String, String)],
        tags: &[(String, String)],
    ) -> Result<(), TrackingError> {
        let pairs = |list: &[(String, String)]| -> Vec<Value> {
            list.iter()
                .map(|(k, v)| json!({ "key": k, "value": v }))
                .collect()
        };
        self.call(
            "POST",
            "runs/log-batch",
            Some(json!({
                "run_id": run_id,
                "metrics": metrics.iter().map(Metric::json).collect::<Vec<_>>(),
                "params": pairs(params),
                "tags": pairs(tags),
            })),
        )
        .map(drop)
    }

    /// The params and tags the server holds for a run.
    pub fn run_data(&self, run_id: &str) -> Result<RunData, TrackingError> {
        let value = self.call("GET", &format!("runs/get?run_id={}", percent(run_id)), None)?;
        let pairs = |list: &Value| -> std::collections::BTreeMap<String, String> {
            list.as_array()
                .into_iter()
                .flatten()
                .filter_map(|pair| {
                    Some((
                        pair["key"].as_str()?.to_owned(),
                        pair["value"].as_str().unwrap_or_default().to_owned(),
                    ))
                })
                .collect()
        };
        let data = &value["run"]["data"];
        Ok(RunData {
            params: pairs(&data["params"]),
            tags: pairs(&data["tags"]),
        })
    }

    /// The run's status (`RUNNING`, `FINISHED`, `FAILED`, `KILLED`) and, once it ended, its end.
    pub fn update(
        &self,
        run_id: &str,
        status: &str,
        end_ms: Option<u64>,
    ) -> Result<(), TrackingError> {
        let mut body = json!({ "run_id": run_id, "status": status });
        if let Some(end) = end_ms {
            body["end_time"] = json!(end);
        }
        self.call("POST", "runs/update", Some(body)).map(drop)
    }

    /// Uploads `bytes` as artifact `name` of a run whose artifacts the server keeps itself
    /// (`mlflow-artifacts:/..`, `mlflow server`'s default).
    pub fn upload(
        &self,
        artifact_uri: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<(), TrackingError> {
        let Some(path) = artifact_uri.strip_prefix("mlflow-artifacts:") else {
            return Err(TrackingError::Refused {
                status: 0,
                message: format!(
                    "its artifact store `{artifact_uri}` is not served over HTTP (start it with `--serve-artifacts`)"
                ),
            });
        };
        let path = path.trim_start_matches('/');
        let response = self
            .endpoint
            .request(
                "PUT",
                &format!("/api/2.0/mlflow-artifacts/artifacts/{path}/{name}"),
                Some(("application/octet-stream", bytes)),
            )
            .map_err(|e| TrackingError::Unreachable(e.to_string()))?;
        answer(response.status, &response.body).map(drop)
    }
}

/// The body of a success, or the error MLflow put in it.
fn answer(status: u16, body: &[u8]) -> Result<Value, TrackingError> {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        return Ok(value);
    }
    let message = value["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
    Err(TrackingError::Refused { status, message })
}

fn id_of(value: &Value) -> Result<String, TrackingError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| TrackingError::Refused {
            status: 200,
            message: "the answer holds no id".to_owned(),
        })
}

/// `text` for a URL's query.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
