//! The run directory: `config.json`, `metrics.csv` and its TensorBoard twin
//! (`events.out.tfevents.run`), and the end-of-run `summary.md` and `curves.svg`.
//!
//! Five files per run besides checkpoints (Burn's Learner writes one file per metric per
//! epoch): `metrics.csv` stays open and is flushed at the end of every epoch.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::atomic::replace_file;
use super::metrics_csv::{HEADER, Line, Row};
use super::mlflow::Tracker;
use super::tensorboard::{EVENTS_FILE, EventWriter};
use crate::history::{History, Split};

/// An open run directory; a disabled one (a smoke test) writes nothing.
pub(crate) struct RunWriter {
    path: PathBuf,
    metrics: Option<BufWriter<File>>,
    events: Option<EventWriter>,
    /// With MLflow tracking: told of every flush of `metrics.csv` and of the run's end.
    tracker: Option<Tracker>,
}

impl RunWriter {
    /// Creates `path`, writes `config.json`, opens `metrics.csv` and the event file. A run continuing after
    /// epoch `done` keeps the rows of epochs up to `done` (and, continuing inside epoch
    /// `done + 1`, its step rows up to global step `last_step`) and drops later ones, which an
    /// interrupted process may have left, so no row appears twice. Fails before any training
    /// when the directory is not writable.
    pub(crate) fn create(
        path: &Path,
        config_json: &[u8],
        done: usize,
        last_step: Option<usize>,
        history: &History,
    ) -> std::io::Result<Self> {
        std::fs::create_dir_all(path)?;
        replace_file(&path.join("config.json"), config_json)?;
        let csv_path = path.join("metrics.csv");
        let fresh = (done == 0 && last_step.is_none()) || !csv_path.exists();
        if !fresh {
            // Bytes that are not UTF-8 (a damaged file) only spoil their own row, dropped below.
            let text = String::from_utf8_lossy(&std::fs::read(&csv_path)?).into_owned();
            // Rows reach the file in buffer-sized pieces, so a killed process may have left half
            // a row at the end: only lines with their newline count.
            let complete = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
            // The header, written again below, and a damaged line are no rows.
            let rows = complete.lines().filter(|line| {
                Row::parse(line).is_some_and(|Row { key, .. }| {
                    key.epoch <= done
                        || (key.epoch == done + 1
                            && key
                                .step
                                .zip(last_step)
                                .is_some_and(|(step, last)| step <= last))
                })
            });
            let kept: String = std::iter::once(HEADER)
                .chain(rows)
                .map(|line| format!("{line}\n"))
                .collect();
            replace_file(&csv_path, kept.as_bytes())?;
        }
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(!fresh)
            .truncate(fresh)
            .open(&csv_path)?;
        let mut metrics = BufWriter::new(file);
        if fresh {
            writeln!(metrics, "{HEADER}")?;
        }
        // Rewritten from the values restored with the run, so a resumed run shows each once.
        let events = EventWriter::create(&path.join(EVENTS_FILE), config_json, history)?;
        Ok(Self {
            path: path.to_owned(),
            metrics: Some(metrics),
            events: Some(events),
            tracker: None,
        })
    }

    /// A run directory that is never created or written.
    pub(crate) fn disabled(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            metrics: None,
            events: None,
            tracker: None,
        }
    }

    /// Tracks the run on an MLflow server from here on.
    pub(crate) fn track(&mut self, tracker: Tracker) {
        self.tracker = Some(tracker);
    }

    /// The run ended with `status` (`FINISHED`, `KILLED`): the tracker sends the rest and the
    /// files a finished run has. A run that ends otherwise is `FAILED` (the tracker's drop).
    pub(crate) fn end_tracking(&mut self, status: &'static str) {
        if let Some(tracker) = &mut self.tracker {
            tracker.finish(
                status,
                vec!["config.json", "summary.md", "curves.svg"],
                None,
            );
        }
    }

    /// The run failed with `error`: `FAILED`, the error as the tag `dsl.error`.
    pub(crate) fn fail_tracking(&mut self, error: &dyn std::fmt::Display) {
        // The rows of the failed epoch, which its end would have flushed, go too.
        if self.tracker.is_some() && self.flush().is_err() {
            return;
        }
        if let Some(tracker) = &mut self.tracker {
            tracker.finish("FAILED", vec!["config.json"], Some(error.to_string()));
        }
    }

    /// Whether files are written.
    pub(crate) fn enabled(&self) -> bool {
        self.metrics.is_some()
    }

    /// Writes `name` in the run directory atomically (`summary.md`, `curves.svg`).
    pub(crate) fn write_file(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        if self.enabled() {
            let path = self.path.join(name);
            replace_file(&path, bytes).map_err(|e| naming(&path, e))?;
        }
        Ok(())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A per-step value: `step` is the global, 1-based training step.
    pub(crate) fn step_row(
        &mut self,
        step: usize,
        epoch: usize,
        split: Split,
        metric: &str,
        value: f64,
    ) -> std::io::Result<()> {
        self.value(Some(step), epoch, split, metric, value)
    }

    /// An epoch's value: the `step` column is left empty.
    pub(crate) fn epoch_row(
        &mut self,
        epoch: usize,
        split: Split,
        metric: &str,
        value: f64,
    ) -> std::io::Result<()> {
        self.value(None, epoch, split, metric, value)
    }

    /// A value in both TensorBoard's events and `metrics.csv`.
    fn value(
        &mut self,
        step: Option<usize>,
        epoch: usize,
        split: Split,
        metric: &str,
        value: f64,
    ) -> std::io::Result<()> {
        if let Some(events) = &mut self.events {
            events
                .value(step, epoch, split.as_str(), metric, value)
                .map_err(|e| naming(&self.path.join(EVENTS_FILE), e))?;
        }
        self.row(Line {
            step,
            epoch,
            split: split.as_str(),
            metric,
            value,
        })
    }

    fn row(&mut self, row: Line) -> std::io::Result<()> {
        match &mut self.metrics {
            Some(csv) => {
                writeln!(csv, "{row}").map_err(|e| naming(&self.path.join("metrics.csv"), e))
            }
            None => Ok(()),
        }
    }

    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        if let Some(events) = &mut self.events {
            events
                .flush()
                .map_err(|e| naming(&self.path.join(EVENTS_FILE), e))?;
        }
        match &mut self.metrics {
            Some(csv) => {
                csv.flush()
                    .map_err(|e| naming(&self.path.join("metrics.csv"), e))?;
                if let Some(tracker) = &self.tracker {
                    tracker.sync();
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// `error` with the file it concerns, so that a full disk names the file that could not grow.
fn naming(file: &Path, error: std::io::Error) -> std::io::Error {
    std::io::Error::new(error.kind(), format!("{}: {error}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::RunWriter;
    use crate::history::{History, Split};
    use crate::output::metrics_csv::CsvValue;

    #[test]
    fn a_run_continuing_inside_an_epoch_keeps_its_rows_up_to_the_saved_step() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = RunWriter::create(dir.path(), b"{}", 0, None, &History::default()).unwrap();
        for step in 1..=4 {
            let epoch = 1 + (step - 1) / 2;
            run.step_row(step, epoch, Split::Train, "loss", 1.0 / step as f64)
                .unwrap();
            if step % 2 == 0 {
                run.epoch_row(epoch, Split::Train, "loss", 0.5).unwrap();
            }
        }
        run.flush().unwrap();
        drop(run);
        // A killed process left half a row.
        let csv_path = dir.path().join("metrics.csv");
        let mut text = std::fs::read_to_string(&csv_path).unwrap();
        text.push_str("5,1");
        std::fs::write(&csv_path, text).unwrap();
        // Saved inside epoch 2 after step 3: step 4 and epoch 2's value were written later.
        let run = RunWriter::create(dir.path(), b"{}", 1, Some(3), &History::default()).unwrap();
        drop(run);
        let csv = std::fs::read_to_string(dir.path().join("metrics.csv")).unwrap();
        assert_eq!(
            csv,
            "step,epoch,split,metric,value\n1,1,train,loss,1\n2,1,train,loss,0.5\n,1,train,loss,0.5\n3,2,train,loss,0.3333333333333333\n"
        );
    }

    #[test]
    fn values_round_trip_as_f64_and_losses_as_f32() {
        let loss = 0.861_488_76_f32;
        let text = CsvValue(f64::from(loss)).to_string();
        assert_eq!(text, f64::from(loss).to_string());
        assert_eq!(text.parse::<f64>().unwrap(), f64::from(loss));
        assert_eq!(text.parse::<f32>().unwrap().to_bits(), loss.to_bits());
        assert_eq!(CsvValue(0.1).to_string(), "0.1");
        let mean = 0.740_081_234_567_f64;
        assert_eq!(CsvValue(mean).to_string().parse::<f64>().unwrap(), mean);
    }
}
