//! `metrics.csv`, the run's record of every value, and the one place that knows its format:
//! rows are written here ([`Line`]) by the run directory and the test split, and read back
//! ([`Row::parse`]) by a resume, which continues the file from its checkpoint ([`resume`]), and
//! by `--verify`.

use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::history::History;

/// A resumed run's `metrics.csv` no longer holds the rows its checkpoint recorded (cut short,
/// edited or replaced): continuing would leave a gap in the run's record.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} does not hold the rows the checkpoint recorded: {reason}\nhelp: restore the file (from a backup or a copy of the run) and resume again, or start a fresh run without --resume; its rows cannot be rebuilt from the checkpoint, and a run is not continued with a gap in its record",
    file.display()
)]
pub struct MetricsDamaged {
    /// The run's `metrics.csv`.
    pub file: PathBuf,
    /// What differs from the checkpoint's record.
    pub reason: String,
}

impl MetricsDamaged {
    fn of(file: &Path, reason: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The first line.
pub(crate) const HEADER: &str = "step,epoch,split,metric,value";

/// A value written without loss, one rule for every value: the shortest text that parses back
/// to the same `f64` (Rust's round-trip formatting). A loss, an `f32` widened exactly, therefore
/// reads `0.7027324438095093`, and parsed as `f32` it gives the loss's bits again.
pub(crate) struct CsvValue(pub f64);

impl std::fmt::Display for CsvValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One row as written, without its newline and without allocating: `step` is empty for an
/// epoch's value.
pub(crate) struct Line<'a> {
    pub step: Option<usize>,
    pub epoch: usize,
    pub split: &'a str,
    pub metric: &'a str,
    pub value: f64,
}

impl std::fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(step) = self.step {
            write!(f, "{step}")?;
        }
        let Line {
            epoch,
            split,
            metric,
            value,
            ..
        } = self;
        write!(f, ",{epoch},{split},{metric},{}", CsvValue(*value))
    }
}

/// What identifies a row: the step (empty for an epoch's value), the epoch, the split and the
/// metric.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub step: Option<usize>,
    pub epoch: usize,
    pub split: String,
    pub metric: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{} at ", self.split, self.metric)?;
        match self.step {
            Some(step) => write!(f, "step {step} (epoch {})", self.epoch),
            None => write!(f, "the end of epoch {}", self.epoch),
        }
    }
}

/// A row read back, its value kept as written.
pub(crate) struct Row {
    pub key: Key,
    pub value: String,
}

impl Row {
    /// The row of `line`, or `None` for the header or a line that is not a whole row.
    pub(crate) fn parse(line: &str) -> Option<Row> {
        let [step, epoch, split, metric, value] = line.split(',').collect::<Vec<_>>()[..] else {
            return None;
        };
        let step = match step {
            "" => None,
            step => Some(step.parse().ok()?),
        };
        Some(Row {
            key: Key {
                step,
                epoch: epoch.parse().ok()?,
                split: split.to_owned(),
                metric: metric.to_owned(),
            },
            value: value.to_owned(),
        })
    }
}

/// Continues the `metrics.csv` at `path` from the checkpoint whose record of it is `mark`:
/// the file must start with exactly the bytes the checkpoint saw (what a later, interrupted
/// process appended is cut off), and the per-step values in them go back into `history`,
/// which the checkpoint's state holds for epochs only.
pub(crate) fn resume(
    path: &Path,
    mark: Digest,
    history: &mut History,
) -> Result<(), MetricsDamaged> {
    use std::io::{BufRead, Read};
    let damaged = |reason: String| MetricsDamaged::of(path, reason);
    let (file, len) =
        crate::read::open(path, crate::read::METRICS).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => damaged("the file is missing".to_owned()),
            _ => damaged(e.to_string()),
        })?;
    if len < mark.len {
        return Err(damaged(format!(
            "it holds {len} bytes, but the checkpoint recorded {} (rows are missing)",
            mark.len
        )));
    }
    let mut reader = std::io::BufReader::new(file.take(mark.len));
    let mut read = Digest::EMPTY;
    let mut line = String::new();
    let mut rows = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| damaged(format!("it cannot be read as text: {e}")))?;
        if n == 0 {
            break;
        }
        read.update(line.as_bytes());
        if let Some(row) = Row::parse(line.trim_end_matches('\n'))
            && row.key.step.is_some()
        {
            rows.push(row);
        }
    }
    if read != mark {
        return Err(damaged(format!(
            "its first {} bytes were changed after the checkpoint was written",
            mark.len
        )));
    }
    for row in rows {
        let split = row.key.split.as_str();
        let index = history
            .series()
            .iter()
            .position(|s| s.split.as_str() == split && s.metric == row.key.metric);
        let (Some(index), Ok(value)) = (index, row.value.parse::<f64>()) else {
            return Err(damaged(format!(
                "its row for {} is not one this run records",
                row.key
            )));
        };
        history.record_step(index, value);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| file.set_len(mark.len))
        .map_err(|e| {
            damaged(format!(
                "the rows after the checkpoint cannot be cut off: {e}"
            ))
        })
}

/// The digest of the whole `metrics.csv` at `path`, which a run continues as it is; `None`
/// without the file.
pub(crate) fn as_it_is(path: &Path) -> Result<Option<Digest>, MetricsDamaged> {
    use std::io::Read;
    let damaged = |e: std::io::Error| MetricsDamaged::of(path, e.to_string());
    let mut file = match crate::read::open(path, crate::read::METRICS) {
        Ok((file, _)) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(damaged(e)),
    };
    let mut digest = Digest::EMPTY;
    let mut chunk = vec![0; 1 << 16];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => return Ok(Some(digest)),
            Ok(n) => digest.update(&chunk[..n]),
            Err(e) => return Err(damaged(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CsvValue, Line, Row};

    #[test]
    fn a_row_written_reads_back_the_same() {
        let line = Line {
            step: Some(7),
            epoch: 2,
            split: "train",
            metric: "loss",
            value: f64::from(0.702_732_4_f32),
        }
        .to_string();
        assert_eq!(line, "7,2,train,loss,0.7027323842048645");
        let row = Row::parse(&line).unwrap();
        assert_eq!((row.key.step, row.key.epoch), (Some(7), 2));
        assert_eq!(row.value.parse::<f32>().unwrap(), 0.702_732_4_f32);
        let epoch = Line {
            step: None,
            epoch: 3,
            split: "valid",
            metric: "accuracy",
            value: 0.1,
        };
        assert_eq!(epoch.to_string(), ",3,valid,accuracy,0.1");
        assert!(Row::parse(super::HEADER).is_none());
        assert!(Row::parse("x,1,train,loss,1").is_none());
        assert_eq!(CsvValue(0.1).to_string(), "0.1");
    }
}
