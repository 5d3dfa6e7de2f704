//! Training steps whose values are not written yet: the loss stays on the device and is read
//! with the next steps' in one transfer (`read_every`), and each step's row of `metrics.csv`,
//! its progress and its callbacks follow, in step order, once it is read.
//!
//! Every step's value still reaches `metrics.csv`, bit for bit: only when it is read changes.
//! A run with callbacks reads every step, so that `step_end` sees a step before the next one
//! is trained (a callback may stop the run there).

/// One step's value of one metric.
#[derive(Clone, Copy)]
pub(super) enum Cell {
    /// The metric was not fed (another step's output, in a several-optimizer run).
    Absent,
    /// Read on update.
    Now(f64),
    /// On the device, in the metric's deferred values.
    Later,
}

/// A step trained and not yet written.
pub(super) struct Step {
    pub epoch: usize,
    pub step: usize,
    /// Whether an optimizer step followed (callbacks hear only of those).
    pub stepped: bool,
    /// The learning rate the step used.
    pub lr: f64,
    /// Each training metric's value, in the metrics' order.
    pub cells: Vec<Cell>,
}

/// The steps waiting for their values.
pub(super) struct Deferred {
    /// Steps read at a time.
    pub every: usize,
    pub steps: Vec<Step>,
}

impl Deferred {
    pub fn new(every: usize) -> Self {
        Self {
            every: every.max(1),
            steps: Vec::new(),
        }
    }

    /// Whether the steps waiting must be read now: `every` of them, or a reason not to wait.
    pub fn due(&self, callbacks: bool, interrupted: bool) -> bool {
        self.steps.len() >= self.every || callbacks || interrupted
    }
}
