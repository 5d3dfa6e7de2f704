//! The layout page's promise: what the prelude gives an experiment file is also at the crate
//! root. A name missing there fails this file's build.

#[allow(unused_imports)]
use burn_experiment::{
    Batch, Callback, Control, Data, EpochEnd, Evaluation, Fit, FitError, FitOptions, FitReport,
    History, RunEnd, RunStart, Split, StepEnd, StepOutput, metric, rand, training,
};
