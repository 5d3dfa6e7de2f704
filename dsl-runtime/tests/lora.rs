//! The LoRA test in a process of its own (see `runtime/lora.rs` for why).

// The helpers of the `runtime` binary, of which this test uses a few (the module allows the
// unused ones itself; its re-exports too, here).
#[allow(unused_imports)]
#[path = "runtime/common/mod.rs"]
mod common;
#[path = "runtime/lora.rs"]
mod lora;
#[path = "runtime/tuned.rs"]
mod tuned;
