//! The GAN example's tests, one binary (one link of Burn): the hand loops, resumes after kill -9
//! and SIGTERM, the command line, and (feature `figure`) the trained example's figure.

mod cli;
#[cfg(feature = "figure")]
mod figure;
mod hand_loop;
mod resume;
