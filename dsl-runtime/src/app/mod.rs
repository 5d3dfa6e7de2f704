//! The application layer, above the fit loop: the command line (`cli`), sweeps (`sweep`),
//! searches (`search`), `--verify` (`verify`) and
//! `--find-lr` (`lr_find`).

pub mod cli;
pub mod lr_find;
pub mod search;
pub mod sweep;
pub mod verify;
