//! Live progress: a bar per epoch on a terminal, plain epoch lines elsewhere.
//!
//! On a terminal the bar shows batches, it/s, ETA and the running mean of the training loss;
//! it is drawn on stderr by `indicatif`, which redraws below anything the program prints.
//! Off a terminal (CI, pipes) there is no bar, only the line each epoch ends with.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress output of one run.
pub(crate) struct Progress {
    quiet: bool,
    bar: Option<ProgressBar>,
    loss_sum: f64,
    loss_count: usize,
}

impl Progress {
    pub(crate) fn new(quiet: bool) -> Self {
        Self {
            quiet,
            bar: None,
            loss_sum: 0.0,
            loss_count: 0,
        }
    }

    /// Starts the bar of an epoch of `batches` training batches, when stderr is a terminal.
    pub(crate) fn epoch_start(&mut self, epoch: usize, last_epoch: usize, batches: usize) {
        self.loss_sum = 0.0;
        self.loss_count = 0;
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(batches as u64), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "epoch {prefix} [{bar:30}] {pos}/{len} {rate} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.1} it/s", state.per_sec());
            },
        )
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(format!("{epoch}/{last_epoch}"));
        self.bar = Some(bar);
    }

    /// One training step done; `loss` is its loss when `train.loss` is recorded.
    pub(crate) fn step(&mut self, loss: Option<f64>) {
        let Some(bar) = &self.bar else { return };
        if let Some(loss) = loss {
            self.loss_sum += loss;
            self.loss_count += 1;
            bar.set_message(format!(
                "loss {:.4}",
                self.loss_sum / self.loss_count as f64
            ));
        }
        bar.inc(1);
    }

    /// Replaces the bar with the epoch's line, formatted only when it is shown.
    pub(crate) fn epoch_end(&mut self, line: impl FnOnce() -> String) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if !self.quiet {
            say!("{}", line());
        }
    }
}
