//! Lines for the terminal that a closed pipe cannot stop: `train | head -2`, or a log reader
//! that exits, closes stdout or stderr while the run goes on. `eprintln!` would panic at the
//! next line (Rust ignores SIGPIPE, so the write fails with EPIPE) and end the training; here
//! the line is dropped, and the run's `summary.md` says once that output was lost.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a line could not be written since the process started.
static DROPPED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stderr, or drops it when stderr is closed.
pub(crate) fn stderr(text: std::fmt::Arguments) {
    if std::io::stderr().lock().write_fmt(text).is_err() {
        DROPPED.store(true, Ordering::Relaxed);
    }
}

/// Writes `text` to stdout and flushes, or drops it when stdout is closed.
pub(crate) fn stdout(text: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    if out.write_fmt(text).and_then(|()| out.flush()).is_err() {
        DROPPED.store(true, Ordering::Relaxed);
    }
}

/// Whether some output was dropped, for the note in `summary.md`.
pub(crate) fn dropped() -> bool {
    DROPPED.load(Ordering::Relaxed)
}

/// `eprintln!` that a closed stderr does not turn into a panic.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::terminal::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that a closed stderr does not turn into a panic.
macro_rules! say_part {
    ($($arg:tt)*) => {
        $crate::terminal::stderr(format_args!($($arg)*))
    };
}

/// `println!` that a closed stdout does not turn into a panic.
macro_rules! show {
    ($($arg:tt)*) => {
        $crate::terminal::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
