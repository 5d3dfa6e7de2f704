//! The runtime's integration tests as one binary: every test binary links Burn, and one link
//! instead of eight saves most of the suite's build time.

mod common;

mod augmentation;
mod backends;
mod callbacks;
mod checkpoints;
mod derives;
mod ema;
mod engines;
mod fine_tuning;
mod host_reads;
mod long_run;
mod macro_equivalence;
mod module_graph;
mod precision;
mod predict_export;
mod public_surface;
mod reproduce;
mod run_outputs;
mod seed_classification;
mod seed_regression;
mod several_optimizers;
mod study;
mod test_split;
mod training_controls;
mod tuned;
mod untrusted;
