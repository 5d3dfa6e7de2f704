//! Frozen parameters: Burn's `freeze_group`/`unfreeze_group` on the group the `freeze` paths
//! name, from the first epoch until `unfreeze`.

use burn::module::{Module, ParamGroup};

use crate::erased::{AnyModule, ModelRef};
use crate::{config::options::FitOptions, error::FitError};

/// The parameters a run keeps frozen, and the epoch they train again from.
pub(super) struct Freeze {
    group: ParamGroup,
    until: Option<usize>,
}

impl Freeze {
    /// The run's frozen group, `None` when `freeze` is empty; a path that names no parameter of
    /// `model` is an error listing its parameters.
    pub fn new(model: ModelRef<'_>, options: &FitOptions) -> Result<Option<Self>, FitError> {
        if options.freeze.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            group: crate::model::tuning::group(model, "freeze", &options.freeze)?,
            until: options.unfreeze,
        }))
    }

    /// `model` as it trains in `epoch`, the first of this call (a resumed run may start after
    /// the unfreeze epoch).
    pub fn start(&self, model: AnyModule, epoch: usize) -> AnyModule {
        if self.until.is_none_or(|until| epoch < until) {
            model.freeze_group(self.group.clone())
        } else {
            model
        }
    }

    /// Whether parameter `id` (at `path`) stays frozen for the whole run.
    pub fn holds_for_good(&self, id: &burn::module::ParamId, path: &str) -> bool {
        self.until.is_none() && self.group.matches(id, Some(path))
    }

    /// Whether `epoch` is the one the frozen parameters train again from.
    pub fn unfreezes_at(&self, epoch: usize) -> bool {
        self.until == Some(epoch)
    }

    /// `model` with the frozen parameters trained again.
    pub fn unfreeze(&self, model: AnyModule) -> AnyModule {
        model.unfreeze_group(self.group.clone())
    }
}
