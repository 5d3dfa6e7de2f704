//! The run's TensorBoard event file, `events.out.tfevents.run`: every value of `metrics.csv` as
//! a scalar, and the experiment's config on TensorBoard's HPARAMS tab.
//!
//! No maintained Rust writer of TensorBoard files exists (`tensorboard-rs` was last released in
//! 2022), so the handful of protobuf messages involved are declared here with `prost`, field
//! numbers from TensorFlow's `event.proto`, `summary.proto`, `tensor.proto` and TensorBoard's
//! `plugins/hparams/plugin_data.proto`. A file is a sequence of records: the payload's length
//! (u64, little-endian), its masked CRC-32C, the payload, the payload's masked CRC-32C.
//!
//! Values are written as rank-0 `DT_FLOAT` tensors under the scalars plugin, the form
//! `tf.summary.scalar` writes and the one TensorBoard's default (Rust) data server reads: it
//! reads 32-bit floats only, so TensorBoard shows each value rounded to `f32`. The same tensor
//! also carries the exact `f64` of `metrics.csv` in its `double_val` field, which TensorBoard
//! ignores and [`read_scalars`] returns. Per-step values are tagged `<split>/<metric>` at the
//! global step; per-epoch values (the test split's included) `epoch/<split>/<metric>` at the
//! epoch number.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;

use prost::Message;

use super::atomic::replace_file;
use crate::history::History;

/// The file's name: TensorBoard reads every file whose name contains `tfevents`. One fixed
/// name per run directory, so that a resumed run rewrites it rather than adding a second file
/// with the same steps.
pub const EVENTS_FILE: &str = "events.out.tfevents.run";

/// TensorFlow's `DataType` code of a 32-bit float.
const DT_FLOAT: i32 = 1;
/// TensorBoard's `DataClass` of a scalar time series.
const DATA_CLASS_SCALAR: i32 = 1;
/// TensorBoard's tag of the hyperparameters of a session.
const HPARAMS_TAG: &str = "_hparams_/session_start_info";

#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(oneof = "What", tags = "3, 5")]
    what: Option<What>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum What {
    #[prost(string, tag = "3")]
    FileVersion(String),
    #[prost(message, tag = "5")]
    Summary(Summary),
}

#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryValue {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(message, optional, tag = "8")]
    tensor: Option<TensorProto>,
    #[prost(message, optional, tag = "9")]
    metadata: Option<SummaryMetadata>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    plugin_data: Option<PluginData>,
    #[prost(int32, tag = "4")]
    data_class: i32,
}

#[derive(Clone, PartialEq, Message)]
struct PluginData {
    #[prost(string, tag = "1")]
    plugin_name: String,
    #[prost(bytes = "vec", tag = "2")]
    content: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int32, tag = "1")]
    dtype: i32,
    /// Empty: a scalar.
    #[prost(message, optional, tag = "2")]
    tensor_shape: Option<TensorShape>,
    /// What TensorBoard reads: the value rounded to `f32`.
    #[prost(float, repeated, tag = "5")]
    float_val: Vec<f32>,
    /// The exact value, for readers of `metrics.csv`'s precision.
    #[prost(double, repeated, tag = "6")]
    double_val: Vec<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorShape {}

/// `HParamsPluginData` holding a `SessionStartInfo`.
#[derive(Clone, PartialEq, Message)]
struct HParamsPluginData {
    #[prost(int32, tag = "1")]
    version: i32,
    #[prost(message, optional, tag = "3")]
    session_start_info: Option<SessionStartInfo>,
}

#[derive(Clone, PartialEq, Message)]
struct SessionStartInfo {
    #[prost(btree_map = "string, message", tag = "1")]
    hparams: BTreeMap<String, HParamValue>,
}

/// `google.protobuf.Value`, the three kinds a config value becomes.
#[derive(Clone, PartialEq, Message)]
struct HParamValue {
    #[prost(oneof = "Kind", tags = "2, 3, 4")]
    kind: Option<Kind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Kind {
    #[prost(double, tag = "2")]
    Number(f64),
    #[prost(string, tag = "3")]
    Text(String),
    #[prost(bool, tag = "4")]
    Bool(bool),
}

/// An open event file.
pub(crate) struct EventWriter {
    file: BufWriter<File>,
}

impl EventWriter {
    /// Writes `path` anew, atomically: the file version, the hyperparameters (the
    /// `hyperparameters` object of `config_json`, flattened to dotted keys), then every value of
    /// `history` (what a resumed run restored from its checkpoint); then opens it for
    /// appending.
    pub(crate) fn create(
        path: &Path,
        config_json: &[u8],
        history: &History,
    ) -> std::io::Result<Self> {
        let mut bytes = Vec::new();
        record(
            &mut bytes,
            &Event {
                wall_time: now(),
                step: 0,
                what: Some(What::FileVersion("brain.Event:2".to_owned())),
            },
        );
        record(&mut bytes, &hparams_event(config_json));
        for series in history.series() {
            let (split, metric) = (series.split.as_str(), series.metric.as_str());
            for (k, &value) in series.steps.iter().enumerate() {
                record(
                    &mut bytes,
                    &scalar_event(Some(k + 1), 0, split, metric, value),
                );
            }
            for &(epoch, value) in &series.epochs {
                record(&mut bytes, &scalar_event(None, epoch, split, metric, value));
            }
        }
        replace_file(path, &bytes)?;
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Self {
            file: BufWriter::new(file),
        })
    }

    /// Opens the file a finished run wrote, to add the test split's values.
    pub(crate) fn append(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Self {
            file: BufWriter::new(file),
        })
    }

    /// A value of `metrics.csv`: `step` is the global step, or `None` for an epoch's value.
    pub(crate) fn value(
        &mut self,
        step: Option<usize>,
        epoch: usize,
        split: &str,
        metric: &str,
        value: f64,
    ) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        record(&mut bytes, &scalar_event(step, epoch, split, metric, value));
        self.file.write_all(&bytes)
    }

    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

fn scalar_event(step: Option<usize>, epoch: usize, split: &str, metric: &str, value: f64) -> Event {
    let (tag, at) = match step {
        Some(step) => (format!("{split}/{metric}"), step),
        None => (format!("epoch/{split}/{metric}"), epoch),
    };
    summary_event(
        at as i64,
        SummaryValue {
            tag,
            tensor: Some(TensorProto {
                dtype: DT_FLOAT,
                tensor_shape: Some(TensorShape {}),
                float_val: vec![value as f32],
                double_val: vec![value],
            }),
            metadata: Some(SummaryMetadata {
                plugin_data: Some(PluginData {
                    plugin_name: "scalars".to_owned(),
                    content: Vec::new(),
                }),
                data_class: DATA_CLASS_SCALAR,
            }),
        },
    )
}

fn hparams_event(config_json: &[u8]) -> Event {
    let mut hparams = BTreeMap::new();
    if let Ok(config) = serde_json::from_slice::<serde_json::Value>(config_json) {
        flatten("", &config["hyperparameters"], &mut hparams);
    }
    let content = HParamsPluginData {
        version: 0,
        session_start_info: Some(SessionStartInfo { hparams }),
    }
    .encode_to_vec();
    summary_event(
        0,
        SummaryValue {
            tag: HPARAMS_TAG.to_owned(),
            tensor: None,
            metadata: Some(SummaryMetadata {
                plugin_data: Some(PluginData {
                    plugin_name: "hparams".to_owned(),
                    content,
                }),
                data_class: 0,
            }),
        },
    )
}

/// Numbers, strings and booleans as themselves; lists as their JSON text; `null`s left out.
fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, HParamValue>) {
    use serde_json::Value;
    let kind = match value {
        Value::Object(map) => {
            for (key, value) in map {
                let key = match prefix {
                    "" => key.clone(),
                    _ => format!("{prefix}.{key}"),
                };
                flatten(&key, value, out);
            }
            return;
        }
        Value::Null => return,
        Value::Bool(b) => Kind::Bool(*b),
        Value::Number(n) => Kind::Number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Kind::Text(s.clone()),
        Value::Array(_) => Kind::Text(value.to_string()),
    };
    out.insert(prefix.to_owned(), HParamValue { kind: Some(kind) });
}

fn summary_event(step: i64, value: SummaryValue) -> Event {
    Event {
        wall_time: now(),
        step,
        what: Some(What::Summary(Summary { value: vec![value] })),
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Appends one record holding `event` to `out`.
fn record(out: &mut Vec<u8>, event: &Event) {
    let payload = event.encode_to_vec();
    let length = (payload.len() as u64).to_le_bytes();
    out.extend_from_slice(&length);
    out.extend_from_slice(&masked_crc(&length).to_le_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&masked_crc(&payload).to_le_bytes());
}

/// TensorFlow's record checksum: CRC-32C, rotated and offset so that a checksum of data holding
/// checksums stays well distributed.
fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// One scalar of an event file.
#[derive(Clone, Debug, PartialEq)]
pub struct Scalar {
    /// `<split>/<metric>` for a step's value, `epoch/<split>/<metric>` for an epoch's.
    pub tag: String,
    /// The global step, or the epoch.
    pub step: i64,
    /// The value.
    pub value: f64,
}

/// Every scalar of the event file at `path`, checking each record's checksums: how tests (and
/// anyone without TensorBoard) read a run's file back.
pub fn read_scalars(path: &Path) -> std::io::Result<Vec<Scalar>> {
    Ok(scalars(&read_events(path)?))
}

fn read_events(path: &Path) -> std::io::Result<Vec<Event>> {
    let bytes = crate::read::bytes(path, crate::read::METRICS)?;
    let mut events = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let (length, tail) = checked(rest, 8, "length")?;
        let n = u64::from_le_bytes(length.try_into().expect("8 bytes")) as usize;
        let (payload, tail) = checked(tail, n, "payload")?;
        events.push(Event::decode(payload).map_err(|e| damaged(&e.to_string()))?);
        rest = tail;
    }
    Ok(events)
}

/// The first `n` bytes of `bytes`, whose masked checksum follows them, and what comes after.
fn checked<'a>(bytes: &'a [u8], n: usize, what: &str) -> std::io::Result<(&'a [u8], &'a [u8])> {
    let cut = || damaged(&format!("cut {what}"));
    let (part, tail) = bytes.split_at_checked(n).ok_or_else(cut)?;
    let (crc, tail) = tail.split_at_checked(4).ok_or_else(cut)?;
    if u32::from_le_bytes(crc.try_into().expect("4 bytes")) != masked_crc(part) {
        return Err(damaged(&format!("{what} checksum")));
    }
    Ok((part, tail))
}

fn damaged(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

fn scalars(events: &[Event]) -> Vec<Scalar> {
    events
        .iter()
        .filter_map(|event| match &event.what {
            Some(What::Summary(summary)) => Some((event.step, summary)),
            _ => None,
        })
        .flat_map(|(step, summary)| {
            summary.value.iter().filter_map(move |v| {
                let value = *v.tensor.as_ref()?.double_val.first()?;
                Some(Scalar {
                    tag: v.tag.clone(),
                    step,
                    value,
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_crc_matches_tensorflow() {
        // TensorFlow's own test vector: the masked CRC-32C of "foo" (crc32c 0xcfc4ae1d).
        assert_eq!(crc32c::crc32c(b"foo"), 0xcfc4_ae1d);
        assert_eq!(
            masked_crc(b"foo"),
            0xcfc4_ae1d_u32.rotate_right(15).wrapping_add(0xa282_ead8)
        );
    }

    /// A history with the loss of step 1.
    fn one_step() -> History {
        let mut history = History::default();
        let loss = history.declare(crate::history::Split::Train, "loss", false);
        history.record_step(loss, 0.5);
        history
    }

    #[test]
    fn a_written_file_reads_back_with_rows_and_hyperparameters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        let config =
            br#"{"hyperparameters": {"lr": 0.1, "optimizer": {"name": "adam"}, "seed": null}}"#;
        let mut writer = EventWriter::create(&path, config, &one_step()).unwrap();
        writer
            .value(None, 1, "valid", "accuracy", 93.333_333_333_333_33)
            .unwrap();
        writer.flush().unwrap();
        let events = read_events(&path).unwrap();
        let scalar = |tag: &str, step, value| Scalar {
            tag: tag.to_owned(),
            step,
            value,
        };
        assert_eq!(
            scalars(&events),
            [
                scalar("train/loss", 1, 0.5),
                scalar("epoch/valid/accuracy", 1, 93.333_333_333_333_33)
            ]
        );
        // TensorBoard's default reader takes a rank-0 `DT_FLOAT` with one `float_val`.
        let Some(What::Summary(step)) = &events[2].what else {
            panic!("the third event holds the step's loss");
        };
        let tensor = step.value[0].tensor.clone().unwrap();
        assert_eq!((tensor.dtype, tensor.float_val), (DT_FLOAT, vec![0.5_f32]));
        let Some(What::Summary(summary)) = &events[1].what else {
            panic!("the second event holds the hyperparameters");
        };
        let plugin = summary.value[0]
            .metadata
            .clone()
            .unwrap()
            .plugin_data
            .unwrap();
        let data = HParamsPluginData::decode(&plugin.content[..]).unwrap();
        let hparams = data.session_start_info.unwrap().hparams;
        assert_eq!(hparams["lr"].kind, Some(Kind::Number(0.1)));
        assert_eq!(
            hparams["optimizer.name"].kind,
            Some(Kind::Text("adam".into()))
        );
        assert!(!hparams.contains_key("seed"));
    }

    #[test]
    fn a_flipped_bit_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EVENTS_FILE);
        drop(EventWriter::create(&path, b"{}", &one_step()).unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 6;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(read_events(&path).is_err());
    }
}
