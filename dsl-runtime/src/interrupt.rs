//! Ctrl-C and SIGTERM during a run: finish the step, stop cleanly, stay resumable; a second
//! signal ends the process at once.
//!
//! The handler is installed while a run that writes checkpoints is in progress, and the
//! process's previous dispositions (whatever the host program had: the default, its own
//! handler, ignored) are put back when the last such run ends — unless the process is the
//! command line's ([`keep_until_exit`]), which keeps it to the end. `signal-hook` cannot give a
//! disposition back (its `unregister` leaves its own handler in place, and the process deaf to
//! Ctrl-C), hence these few lines over `sigaction`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Raised by the first signal; every run in progress polls it.
static RAISED: AtomicBool = AtomicBool::new(false);

/// ExperimentRuns holding the handler, and the dispositions to restore when the last one ends.
static HELD: Mutex<Option<Held>> = Mutex::new(None);

/// Set by [`keep_until_exit`]: the last run's end leaves the handler installed.
static KEEP: AtomicBool = AtomicBool::new(false);

/// For a process the command line owns: once a run has installed the handler, it stays until
/// the process exits. Restored at the run's end, a SIGTERM sent as the last epoch is saved
/// could land in the teardown after it (the test split, the report, a GPU device's release,
/// `main`'s return) and end a finished run by the signal (exit 143); kept, it only raises the
/// flag nobody polls any more, and the run's own exit code stands. A run that never installed
/// the handler (no checkpoints to keep resumable) still leaves Ctrl-C at the default.
pub(crate) fn keep_until_exit() {
    KEEP.store(true, Ordering::SeqCst);
}

struct Held {
    runs: usize,
    previous: [libc::sigaction; 2],
}

// SAFETY: `sigaction` structs are plain data (a handler address, flags and a mask).
unsafe impl Send for Held {}

/// The first signal raises the flag; a second one, while the flag is up, takes the default
/// action (the process ends, as a second Ctrl-C is meant to). Only async-signal-safe calls.
extern "C" fn on_signal(signal: libc::c_int) {
    if RAISED.swap(true, Ordering::SeqCst) {
        // SAFETY: `signal` and `raise` are async-signal-safe.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

/// The handler, held for one run.
pub(crate) struct Interrupt(());

impl Interrupt {
    /// Installs the handler (or joins the runs already holding it).
    pub(crate) fn install() -> std::io::Result<Self> {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        match held.as_mut() {
            Some(held) => held.runs += 1,
            None => {
                RAISED.store(false, Ordering::SeqCst);
                // SAFETY: zeroed `sigaction` structs are valid values; `sigaction` only reads
                // `action` and writes `previous`.
                let mut previous: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
                let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                for (signal, previous) in SIGNALS.iter().zip(&mut previous) {
                    // SAFETY: valid pointers to initialised structs.
                    if unsafe { libc::sigaction(*signal, &action, previous) } != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                *held = Some(Held { runs: 1, previous });
            }
        }
        Ok(Self(()))
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = held.as_mut() else { return };
        state.runs -= 1;
        if state.runs == 0 && !KEEP.load(Ordering::SeqCst) {
            RAISED.store(false, Ordering::SeqCst);
            for (signal, previous) in SIGNALS.iter().zip(&state.previous) {
                // SAFETY: `previous` is what `sigaction` returned for this signal.
                unsafe { libc::sigaction(*signal, previous, std::ptr::null_mut()) };
            }
            *held = None;
        }
    }
}

/// Whether Ctrl-C or SIGTERM arrived since the handler was installed.
pub(crate) fn raised() -> bool {
    RAISED.load(Ordering::Relaxed)
}

/// Held by every test that raises signals or holds the handler, so they do not overlap.
#[cfg(test)]
pub(crate) static SIGNAL_TESTS: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    fn handler_of(signal: libc::c_int) -> usize {
        // SAFETY: a null new action only reads the current one.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut current);
            current.sa_sigaction
        }
    }

    #[test]
    fn the_previous_dispositions_come_back_when_the_last_run_ends() {
        let _serial = SIGNAL_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: setting SIGTERM to ignored in this test process, then checking it.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
        let before = (handler_of(libc::SIGINT), handler_of(libc::SIGTERM));
        assert_eq!(before.1, libc::SIG_IGN);
        let first = Interrupt::install().unwrap();
        let second = Interrupt::install().unwrap();
        assert_eq!(
            handler_of(libc::SIGTERM),
            on_signal as extern "C" fn(libc::c_int) as usize
        );
        drop(first);
        // One run still holds it.
        assert_ne!(handler_of(libc::SIGTERM), libc::SIG_IGN);
        // SAFETY: raising SIGTERM in this process runs `on_signal`, installed above.
        unsafe { libc::raise(libc::SIGTERM) };
        assert!(raised());
        drop(second);
        assert_eq!(
            (handler_of(libc::SIGINT), handler_of(libc::SIGTERM)),
            before
        );
        // Installed again for a later run, the flag starts lowered.
        let again = Interrupt::install().unwrap();
        assert!(!raised());
        drop(again);
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_DFL) };
    }

    /// In a child process: with [`keep_until_exit`], the handler outlives the last run, so a
    /// SIGTERM after it raises the flag instead of ending the process.
    #[test]
    fn kept_until_exit_a_signal_after_the_run_does_not_end_the_process() {
        const CHILD: &str = "DSL_INTERRUPT_KEEP_CHILD";
        if std::env::var_os(CHILD).is_some() {
            keep_until_exit();
            drop(Interrupt::install().unwrap());
            assert_eq!(
                handler_of(libc::SIGTERM),
                on_signal as extern "C" fn(libc::c_int) as usize
            );
            // SAFETY: raising SIGTERM in this child process, which still holds `on_signal`.
            unsafe { libc::raise(libc::SIGTERM) };
            assert!(raised());
            std::process::exit(7);
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "interrupt::tests::kept_until_exit_a_signal_after_the_run_does_not_end_the_process",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap()
            .status;
        assert_eq!(status.code(), Some(7), "{status:?}");
    }

    /// In a child process (this test binary run again): a second SIGTERM while the first is
    /// being handled ends the process by the signal, as a second Ctrl-C should.
    #[test]
    fn a_second_signal_ends_the_process_at_once() {
        const CHILD: &str = "DSL_INTERRUPT_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let _held = Interrupt::install().unwrap();
            // SAFETY: raising SIGTERM in this child process, which holds `on_signal`.
            unsafe { libc::raise(libc::SIGTERM) };
            assert!(raised(), "the first signal only raises the flag");
            unsafe { libc::raise(libc::SIGTERM) };
            std::process::exit(0); // not reached when the second signal works
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "interrupt::tests::a_second_signal_ends_the_process_at_once",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap()
            .status;
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    }
}
