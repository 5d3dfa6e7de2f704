//! What a run leaves behind: console lines, the run directory, atomic writes.

pub(crate) mod atomic;
pub(crate) mod console;
pub(crate) mod run_dir;

pub use console::summary_table;
