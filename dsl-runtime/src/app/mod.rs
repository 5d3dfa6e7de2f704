//! The application layer, above the fit loop: the command line (`cli`), sweeps (`sweep`) and
//! `--verify` (`verify`).

pub mod cli;
pub mod sweep;
pub mod verify;
