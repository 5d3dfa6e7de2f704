//! Detecting a damaged checkpoint file, or a `metrics.csv` that no longer starts as its checkpoint saw it.
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
    /// The digest of no bytes, to [`Digest::update`] as a file grows.
    pub const EMPTY: Digest = Digest {
        len: 0,
        fnv1a: 0xcbf2_9ce4_8422_2325,
    };

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut digest = Self::EMPTY;
        digest.update(bytes);
        digest
    }

    /// The digest of what this one covers followed by `bytes`: how `metrics.csv`, which only
    /// grows, is digested row by row as it is written.
    pub fn update(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.fnv1a ^= u64::from(*byte);
            self.fnv1a = self.fnv1a.wrapping_mul(0x0100_0000_01b3);
        }
        self.len += bytes.len() as u64;
    }
}

/// The start of a state file, before its 16-digit hash.
const SEALED_HEAD: &[u8] = b"{\"fnv1a\":\"";
/// Between the hash and the state's JSON.
const SEALED_MIDDLE: &[u8] = b"\",\"state\":";

/// `json` (the state of a checkpoint) with its own hash in front, still one JSON object:
/// `{"fnv1a":"<16 hex digits>","state":<json>}`. The records' digests live in the state, so
/// this covers every byte a resume reads.
pub(crate) fn seal(json: &[u8]) -> Vec<u8> {
    let hash = format!("{:016x}", Digest::of(json).fnv1a);
    [SEALED_HEAD, hash.as_bytes(), SEALED_MIDDLE, json, b"}"].concat()
}

/// The state's JSON inside a file [`seal`] wrote, if its hash matches; what is wrong otherwise.
pub(crate) fn unseal(file: &[u8]) -> Result<&[u8], String> {
    let rest = file
        .strip_prefix(SEALED_HEAD)
        .ok_or("it does not start with its hash")?;
    let (hash, rest) = rest.split_at_checked(16).ok_or("it is cut short")?;
    let json = rest
        .strip_prefix(SEALED_MIDDLE)
        .and_then(|rest| rest.strip_suffix(b"}"))
        .ok_or("it is cut short or extended")?;
    // Compared as written: every byte of the file is covered, the hash's spelling included.
    let actual = format!("{:016x}", Digest::of(json).fnv1a);
    if hash != actual.as_bytes() {
        return Err(format!(
            "its content hashes to {actual}, but the file says {}",
            String::from_utf8_lossy(hash)
        ));
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::{Digest, seal, unseal};

    #[test]
    fn a_sealed_state_opens_only_unchanged() {
        let json = br#"{"epoch":3}"#;
        let sealed = seal(json);
        assert!(serde_json::from_slice::<serde_json::Value>(&sealed).is_ok());
        assert_eq!(unseal(&sealed).unwrap(), json);
        let mut edited = sealed.clone();
        let at = edited.len() - 3;
        edited[at] = b'4';
        assert!(unseal(&edited).unwrap_err().contains("hashes to"));
        assert!(unseal(&sealed[..sealed.len() - 1]).is_err());
        assert!(unseal(json).is_err());
        // The same hash in capitals is still a changed byte.
        let upper = String::from_utf8(sealed.clone()).unwrap().replacen(
            &format!("{:016x}", Digest::of(json).fnv1a),
            &format!("{:016X}", Digest::of(json).fnv1a),
            1,
        );
        assert!(unseal(upper.as_bytes()).is_err());
    }

    #[test]
    fn one_flipped_bit_changes_the_digest() {
        let a = Digest::of(b"checkpoint bytes");
        let b = Digest::of(b"checkpoint bytez");
        assert_ne!(a, b);
        assert_eq!(a, Digest::of(b"checkpoint bytes"));
        assert_eq!(Digest::of(b"").fnv1a, 0xcbf2_9ce4_8422_2325);
    }

    #[test]
    fn a_digest_updated_piece_by_piece_is_the_digest_of_the_whole() {
        let mut grown = Digest::EMPTY;
        grown.update(b"step,epoch\n");
        grown.update(b"1,1\n");
        assert_eq!(grown, Digest::of(b"step,epoch\n1,1\n"));
        assert_eq!(grown.len, 15);
    }
}
