//! The environment of a training process without a display.

/// Turns off Mesa's Vulkan device-selection layer when no display is set.
///
/// The Vulkan loader runs that layer in every process that opens Vulkan, as wgpu does to list
/// its adapters. The layer picks the default GPU by asking the display server which one drives
/// the screen; with no display, libwayland prints `XDG_RUNTIME_DIR is invalid or not set in the
/// environment` at each try, four lines at the start of every headless wgpu run. wgpu lists and
/// orders adapters itself (`--device wgpu:N` picks one), so nothing is lost without the layer.
/// A `NODEVICE_SELECT` the user set is left as it is.
#[cfg(feature = "wgpu")]
pub fn quiet_headless_vulkan() {
    let display = ["WAYLAND_DISPLAY", "DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    if !display && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: called first thing in `main`, before the run starts a thread; no other code
        // reads the environment concurrently.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}
