//! The runtime's integration tests as one binary: every test binary links Burn, and one link
//! instead of eight saves most of the suite's build time.

mod common;

mod checkpoints;
mod derives;
mod engines;
mod macro_equivalence;
mod run_outputs;
mod seed_classification;
mod seed_regression;
mod training_controls;
mod untrusted;
