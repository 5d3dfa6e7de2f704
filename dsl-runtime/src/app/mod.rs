//! The application layer, above the fit loop: the command line (`cli`), sweeps (`sweep`),
//! searches (`search`) and `--verify` (`verify`).

pub mod cli;
pub mod search;
pub mod sweep;
pub mod verify;
