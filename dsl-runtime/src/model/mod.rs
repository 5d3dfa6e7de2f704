//! The model layer: what a step output must be (`contract`), the model's weights in files
//! (`weights`), where its initial weights are drawn (`placement`), and the parts of it a run
//! trains (`tuning`: freezing, groups, LoRA).

pub mod contract;
pub mod placement;
pub(crate) mod precision;
pub mod tuning;
pub mod weights;
