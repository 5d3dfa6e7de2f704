//! A 16-bit run whose model mixes float types: Burn panics when an operation meets a 16-bit
//! tensor and an f32 one (`dtype mismatch`, from inside its backend), which a model gets by
//! building a tensor itself (`Tensor::zeros(shape, &device)`, `mask.float()`): such tensors
//! take the device's default type, f32, whatever the run computes in. The run stops instead
//! with an error that says where such tensors come from and the fix.
//!
//! Written by hand because Burn reports the mismatch only as a panic. The panic is caught on
//! the thread that trains, and its message silenced there by a hook that hands every other
//! panic to the hook before it.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Once;

use crate::error::SettingError;

thread_local! {
    /// Whether this thread is inside [`catching`], where a mismatch's panic is ours to report.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Whether a panic's message is Burn's on mixed float types.
fn is_mismatch(message: Option<&str>) -> bool {
    message.is_some_and(|m| m.contains("dtype mismatch"))
}

/// `work` (a step or a validation pass of a run in precision `name`), with Burn's panic on
/// mixed float types turned into an error naming the fix; any other panic goes on as it was.
pub(crate) fn catching<T>(name: &str, work: impl FnOnce() -> T) -> Result<T, SettingError> {
    HOOK.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ours = CATCHING.with(Cell::get) && is_mismatch(info.payload_as_str());
            if !ours {
                before(info);
            }
        }));
    });
    let was = CATCHING.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(work));
    CATCHING.with(|c| c.set(was));
    let payload = match result {
        Ok(out) => return Ok(out),
        Err(payload) => payload,
    };
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    if !is_mismatch(message) {
        resume_unwind(payload);
    }
    Err(SettingError {
        option: "precision",
        message: format!(
            "is {name}, and the model met a {name} tensor with an f32 one (Burn: `{}`): a tensor \
             the model builds itself (`Tensor::zeros(shape, &device)`, `Tensor::from_data(..)`, \
             `mask.float()`) takes the device's default type, f32; give it the type of what it \
             meets, e.g. `mask.float().cast(x.dtype())`, or train in f32",
            message.unwrap_or_default().trim()
        ),
    })
}
