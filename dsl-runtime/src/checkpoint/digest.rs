//! Detecting a damaged checkpoint file.
//!
//! A burnpack file cut short fails to parse, but flipped bytes inside a tensor still load as
//! different weights. Each file's length and FNV-1a hash go into the epoch's state file and are
//! checked before loading. Burn offers no checksum over a record, hence this hand-written one
//! (FNV-1a: a few lines, no dependency, enough to detect accidental damage).

use serde::{Deserialize, Serialize};

/// Length and hash of one file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    /// Length in bytes.
    pub len: u64,
    /// FNV-1a 64-bit hash.
    pub fnv1a: u64,
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        Self {
            len: bytes.len() as u64,
            fnv1a: hash,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Digest;

    #[test]
    fn one_flipped_bit_changes_the_digest() {
        let a = Digest::of(b"checkpoint bytes");
        let b = Digest::of(b"checkpoint bytez");
        assert_ne!(a, b);
        assert_eq!(a, Digest::of(b"checkpoint bytes"));
        assert_eq!(Digest::of(b"").fnv1a, 0xcbf2_9ce4_8422_2325);
    }
}
