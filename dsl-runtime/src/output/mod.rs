//! What a run shows and leaves behind: progress, console lines, the run directory, plots.

pub(crate) mod atomic;
pub(crate) mod console;
pub(crate) mod metrics_csv;
pub use metrics_csv::MetricsDamaged;
pub mod mlflow;
pub(crate) mod plot;
pub(crate) mod progress;
pub(crate) mod run_writer;
pub mod runs;
pub mod tensorboard;

pub use console::summary_table;
