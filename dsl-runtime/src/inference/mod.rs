//! The inference layer: a model in inference mode over a dataset, reduced to metrics
//! (`evaluate`, shared with the fit loop's validation) or kept as outputs (`predict`).

pub mod evaluate;
pub mod predict;
