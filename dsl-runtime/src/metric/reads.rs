//! Host reads: each time the run waits for the device to hand it a value. On a GPU backend a
//! read drains the device's queue, and the CPU cannot record the next step until it returns,
//! so the fit loop reads the loss in one transfer every `read_every` steps rather than every
//! step; this counts what is left, for `summary.md` and the tests that bound it.
//!
//! Counted per thread: a run trains on one thread (loader workers build batches, they read
//! nothing back), so runs side by side in one test binary count their own. A Burn metric's
//! update (accuracy and the like) reads inside Burn: it is counted as one read per update,
//! the fewest it makes.

use std::cell::Cell;

thread_local! {
    static READS: Cell<u64> = const { Cell::new(0) };
}

/// One more host read on this thread.
pub(crate) fn count() {
    READS.with(|reads| reads.set(reads.get() + 1));
}

/// Host reads on this thread so far.
pub(crate) fn so_far() -> u64 {
    READS.with(Cell::get)
}
