//! The run directory: `config.json`, `metrics.csv` and its TensorBoard twin
//! (`events.out.tfevents.run`), and the end-of-run `summary.md` and `curves.svg`.
//!
//! Five files per run besides checkpoints (Burn's Learner writes one file per metric per
//! epoch): `metrics.csv` stays open and is flushed at the end of every epoch.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::atomic::replace_file;
use super::metrics_csv::{HEADER, Line};
use super::mlflow::Tracker;
use super::tensorboard::{EVENTS_FILE, EventWriter};
use crate::digest::Digest;
use crate::history::{History, Split};

/// An open run directory; a disabled one (a smoke test) writes nothing.
pub(crate) struct RunWriter {
    path: PathBuf,
    metrics: Option<BufWriter<File>>,
    /// The digest of every byte written to `metrics.csv`, which a checkpoint records.
    written: Digest,
    /// One row's text, reused for every row.
    line: String,
    events: Option<EventWriter>,
    /// With MLflow tracking: told of every flush of `metrics.csv` and of the run's end.
    tracker: Option<Tracker>,
}

impl RunWriter {
    /// Creates `path`, writes `config.json`, opens `metrics.csv` and the event file. A run that
    /// continues passes the digest of what the file holds (`continues`: the checkpoint's
    /// record, to which [`metrics_csv::resume`] cut the file, or the whole file of a run
    /// continued in-process); the file is then appended to. Fails before any training when
    /// the directory is not writable.
    pub(crate) fn create(
        path: &Path,
        config_json: &[u8],
        continues: Option<Digest>,
        history: &History,
    ) -> std::io::Result<Self> {
        std::fs::create_dir_all(path)?;
        replace_file(&path.join("config.json"), config_json)?;
        let csv_path = path.join("metrics.csv");
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(continues.is_some())
            .truncate(continues.is_none())
            .open(&csv_path)?;
        let mut run = Self {
            path: path.to_owned(),
            metrics: Some(BufWriter::new(file)),
            written: continues.unwrap_or(Digest::EMPTY),
            line: String::new(),
            // Rewritten from the values restored with the run, so a resumed run shows each once.
            events: Some(EventWriter::create(
                &path.join(EVENTS_FILE),
                config_json,
                history,
            )?),
            tracker: None,
        };
        if continues.is_none() {
            run.write_line(format_args!("{HEADER}"))?;
        }
        Ok(run)
    }

    /// The length and hash of what this run's `metrics.csv` holds so far, rows still in the
    /// buffer included: a checkpoint taken after [`RunWriter::flush`] records it.
    pub(crate) fn written(&self) -> Digest {
        self.written
    }

    /// A run directory that is never created or written.
    pub(crate) fn disabled(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            metrics: None,
            written: Digest::EMPTY,
            line: String::new(),
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
        self.write_line(format_args!("{row}"))
    }

    /// One line of `metrics.csv`, digested as it is written.
    fn write_line(&mut self, line: std::fmt::Arguments) -> std::io::Result<()> {
        let Some(csv) = &mut self.metrics else {
            return Ok(());
        };
        self.line.clear();
        std::fmt::Write::write_fmt(&mut self.line, line).expect("a String takes any text");
        self.line.push('\n');
        csv.write_all(self.line.as_bytes())
            .map_err(|e| naming(&self.path.join("metrics.csv"), e))?;
        self.written.update(self.line.as_bytes());
        Ok(())
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
    use std::path::Path;

    use super::RunWriter;
    use crate::digest::Digest;
    use crate::history::{History, Split};
    use crate::output::metrics_csv::{self, CsvValue};

    /// A run of two epochs of two steps, with a checkpoint after step 3, and what a killed
    /// process left after it: step 4, epoch 2's value, half a row.
    fn interrupted_run(dir: &Path) -> Digest {
        let mut run = RunWriter::create(dir, b"{}", None, &History::default()).unwrap();
        let mut mark = None;
        for step in 1..=4 {
            let epoch = 1 + (step - 1) / 2;
            run.step_row(step, epoch, Split::Train, "loss", 1.0 / step as f64)
                .unwrap();
            if step % 2 == 0 {
                run.epoch_row(epoch, Split::Train, "loss", 0.5).unwrap();
            }
            if step == 3 {
                run.flush().unwrap();
                mark = Some(run.written());
            }
        }
        run.flush().unwrap();
        drop(run);
        let csv_path = dir.join("metrics.csv");
        let mut text = std::fs::read_to_string(&csv_path).unwrap();
        text.push_str("5,1");
        std::fs::write(&csv_path, text).unwrap();
        mark.unwrap()
    }

    fn declared() -> History {
        let mut history = History::default();
        history.declare(Split::Train, "loss", false);
        history
    }

    #[test]
    fn a_run_continuing_from_a_checkpoint_keeps_its_rows_and_reads_its_steps_back() {
        let dir = tempfile::tempdir().unwrap();
        let mark = interrupted_run(dir.path());
        let csv_path = dir.path().join("metrics.csv");
        let mut history = declared();
        metrics_csv::resume(&csv_path, mark, &mut history).unwrap();
        let steps = &history.get(Split::Train, "loss").unwrap().steps;
        assert_eq!(steps, &[1.0, 0.5, 1.0 / 3.0]);
        let mut run = RunWriter::create(dir.path(), b"{}", Some(mark), &history).unwrap();
        run.step_row(4, 2, Split::Train, "loss", 0.25).unwrap();
        run.flush().unwrap();
        let written = run.written();
        drop(run);
        let csv = std::fs::read(&csv_path).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&csv),
            "step,epoch,split,metric,value\n1,1,train,loss,1\n2,1,train,loss,0.5\n,1,train,loss,0.5\n3,2,train,loss,0.3333333333333333\n4,2,train,loss,0.25\n"
        );
        assert_eq!(written, Digest::of(&csv), "the digest follows the file");
    }

    #[test]
    fn a_metrics_file_that_lost_or_changed_rows_is_refused_never_shortened() {
        let dir = tempfile::tempdir().unwrap();
        let mark = interrupted_run(dir.path());
        let csv_path = dir.path().join("metrics.csv");
        let original = std::fs::read(&csv_path).unwrap();
        let refused = |expect: &str| {
            let err = metrics_csv::resume(&csv_path, mark, &mut declared()).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(expect) && message.contains("help: restore"),
                "{message}"
            );
        };
        // Cut short: rows the checkpoint recorded are gone.
        std::fs::write(&csv_path, &original[..40]).unwrap();
        refused("rows are missing");
        // One value edited.
        std::fs::write(
            &csv_path,
            String::from_utf8_lossy(&original).replace("0.5", "0.6"),
        )
        .unwrap();
        refused("were changed after the checkpoint");
        // Replaced by a sparse file of a gigabyte: only the checkpoint's length is read.
        std::fs::remove_file(&csv_path).unwrap();
        std::fs::File::create(&csv_path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        refused("were changed after the checkpoint");
        assert_eq!(
            std::fs::metadata(&csv_path).unwrap().len(),
            1 << 30,
            "left as found"
        );
        std::fs::remove_file(&csv_path).unwrap();
        refused("the file is missing");
        let c = std::ffi::CString::new(csv_path.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        refused("not a regular file (it is a FIFO)");
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
