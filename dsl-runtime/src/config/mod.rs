//! The config layer: the settings of a run (`FitOptions`), the serde forms of the experiment's
//! config values (optimizers, schedules, clipping, early stopping, LoRA), and device names.
//! Reads `dsl-vocabulary`; below everything that trains.

pub mod device;
pub(crate) mod options;
pub mod precision;
pub mod spec;
