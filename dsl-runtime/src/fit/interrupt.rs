//! Ctrl-C and SIGTERM during a run: finish the step, stop cleanly, stay resumable.
//!
//! The handlers exist only while a run that writes checkpoints is in progress and are removed
//! when it ends, so no signal disposition of the host program changes for good.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::SigId;
use signal_hook::consts::{SIGINT, SIGTERM};

/// A flag raised by SIGINT or SIGTERM while it lives.
pub(super) struct Interrupt {
    flag: Arc<AtomicBool>,
    handlers: Vec<SigId>,
}

impl Interrupt {
    pub(super) fn install() -> std::io::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let handlers = [SIGINT, SIGTERM]
            .into_iter()
            .map(|signal| signal_hook::flag::register(signal, flag.clone()))
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self { flag, handlers })
    }

    /// The flag the training loop polls after each step.
    pub(super) fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    pub(super) fn raised(flag: &AtomicBool) -> bool {
        flag.load(Ordering::Relaxed)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for id in self.handlers.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
