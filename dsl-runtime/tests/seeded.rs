//! The tests whose runs draw from Burn's global RNG after seeding it, in a process of their own
//! and one at a time: the `runtime` binary's tests, running in parallel threads, draw from the
//! same RNG, and a draw of theirs between a seed and a run's draws changes the run's numbers.

use std::sync::{Mutex, MutexGuard};

// The helpers of the `runtime` binary, of which these tests use a few (the module allows the
// unused ones itself; its re-exports too, here).
#[allow(unused_imports)]
#[path = "runtime/common/mod.rs"]
mod common;
#[path = "runtime/lora.rs"]
mod lora;
#[path = "runtime/seeding.rs"]
mod seeding;
#[path = "runtime/tuned.rs"]
mod tuned;

/// Held by each test of this binary for its whole length.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
