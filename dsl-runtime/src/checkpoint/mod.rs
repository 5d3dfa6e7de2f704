//! Checkpoints: which epochs to keep, how they are written so that a crash never leaves a
//! half-written one, and how a run resumes from them.

pub mod loss_scale;
mod policy;
mod store;

pub use crate::digest::Digest;
pub use policy::{Policy, retained};
pub use store::{
    CheckpointDir, CheckpointError, Loaded, Records, SavedState, Slot, Within, Writer,
};

use serde::{Deserialize, Serialize};

use crate::via_value::via_value;

via_value!(Resume);

/// Where a run continues from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case")]
pub enum Resume {
    /// The newest intact checkpoint (the step an interrupted run saved, unless an epoch ended
    /// after it); a fresh start when there is none.
    Latest,
    /// The checkpoint of this epoch; an error when it is missing or damaged.
    Epoch(usize),
}
