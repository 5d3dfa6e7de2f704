//! An f16 run's dynamic loss scale, which checkpoints save so that a resume continues it.

use serde::{Deserialize, Serialize};

/// Good steps in a row after which the f16 loss scale doubles (PyTorch's default).
pub const GROWTH_INTERVAL: u32 = 2000;

/// The f16 loss scale at a run's start: 2^15, not PyTorch's 2^16, because here the loss itself
/// is usually an f16 value, and the gradient of the loss with respect to itself is the scale,
/// which must be an f16 number (the largest is 65504).
pub const INITIAL_SCALE: f32 = 32768.0;

/// The dynamic loss scale of an f16 run, as its checkpoints save it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossScale {
    /// What the loss is multiplied by before the backward pass: a power of two, so that
    /// scaling and unscaling change no gradient's bits beyond what f16 rounds.
    pub scale: f32,
    /// Good steps since the scale last changed.
    pub good_steps: u32,
    /// Optimizer steps skipped since the run's start (their gradients overflowed), for
    /// `summary.md`; absent from checkpoints written before it was counted.
    #[serde(default)]
    pub skipped: u64,
}

impl Default for LossScale {
    fn default() -> Self {
        Self {
            scale: INITIAL_SCALE,
            good_steps: 0,
            skipped: 0,
        }
    }
}

impl LossScale {
    /// After an optimizer step whose gradients were all finite (`finite`), or one skipped
    /// because some were not.
    pub fn update(&mut self, finite: bool) {
        if finite {
            self.good_steps += 1;
            if self.good_steps == GROWTH_INTERVAL {
                self.scale *= 2.0;
                self.good_steps = 0;
            }
        } else {
            self.scale *= 0.5;
            self.good_steps = 0;
            self.skipped += 1;
        }
    }
}
