//! Reading the files a run reads back (`--config`, `config.json`, `metrics.csv`, checkpoint
//! state and records): each must be a regular file, is opened without blocking, and is read up
//! to a bound for its kind. A FIFO in place of a file would otherwise block a resume forever,
//! `/dev/zero` would be read until the kernel kills the process, and a sparse file of a gigabyte
//! would be taken whole; the bounds are stated in the book's files page.

use std::fs::File;
use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a kind of file may hold, and what to call it in an error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bound {
    /// What the file is, as an error names it (`a config file`).
    pub what: &'static str,
    /// Its size limit in bytes.
    pub bytes: u64,
}

/// `--config` and a run's `config.json`: a few kilobytes in any real run.
pub(crate) const CONFIG: Bound = Bound {
    what: "a config file",
    bytes: 4 << 20,
};

/// `state-N.json`: the epoch values of every metric and the run's settings, which grow with
/// epochs (not steps): 64 MiB holds a million epochs of a dozen metrics.
pub(crate) const STATE: Bound = Bound {
    what: "a checkpoint's state file",
    bytes: 64 << 20,
};

/// `metrics.csv`, read whole by `--verify` and the tracker's sync (about 40 bytes a row: 4 GiB
/// is a hundred million rows). A resume reads no more of it than its checkpoint says it held.
pub(crate) const METRICS: Bound = Bound {
    what: "a metrics file",
    bytes: 4 << 30,
};

/// A run's files sent to a tracking server (`config.json`, `summary.md`, `curves.svg`,
/// exported weights): what a server takes as one upload.
pub(crate) const ARTIFACT: Bound = Bound {
    what: "a file to upload",
    bytes: 2 << 30,
};

/// Small bookkeeping files: the tracker's ledger, git's refs for provenance, Burn's metric logs.
pub(crate) const SMALL: Bound = Bound {
    what: "a bookkeeping file",
    bytes: 16 << 20,
};

/// A checkpoint record of `bytes` (its length in the state's digest), read no further than that.
pub(crate) fn record(bytes: u64) -> Bound {
    Bound {
        what: "a checkpoint record",
        bytes,
    }
}

/// `path` opened for reading and its length, once it is known to be a regular file within
/// `bound`. The open does not block on a FIFO (`O_NONBLOCK`, then refused by its type).
pub(crate) fn open(path: &Path, bound: Bound) -> std::io::Result<(File, u64)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let is = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "a special file"
        };
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (it is {is}); put {} there, or remove it",
                path.display(),
                bound.what
            ),
        ));
    }
    if meta.len() > bound.bytes {
        return Err(too_large(path, meta.len(), bound));
    }
    Ok((file, meta.len()))
}

/// The bytes of `path`, a regular file within `bound`. A file that grows while it is read is
/// still cut at the bound.
pub(crate) fn bytes(path: &Path, bound: Bound) -> std::io::Result<Vec<u8>> {
    let (file, len) = open(path, bound)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(bound.bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bound.bytes {
        return Err(too_large(path, bytes.len() as u64, bound));
    }
    Ok(bytes)
}

/// The text of `path`, as [`bytes`] reads it; not UTF-8 is an `InvalidData` error.
pub(crate) fn text(path: &Path, bound: Bound) -> std::io::Result<String> {
    String::from_utf8(bytes(path, bound)?).map_err(|_| {
        Error::new(
            ErrorKind::InvalidData,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

fn too_large(path: &Path, len: u64, bound: Bound) -> Error {
    Error::new(
        ErrorKind::FileTooLarge,
        format!(
            "{} holds {len} bytes, more than the {} {} may hold",
            path.display(),
            bound.bytes,
            bound.what
        ),
    )
}

/// The JSON of the config file at `path` ([`bytes`] within [`CONFIG`], then [`json`]); JSON
/// that does not parse is an `InvalidData` error.
pub(crate) fn config(path: &Path) -> std::io::Result<serde_json::Value> {
    json(&bytes(path, CONFIG)?).map_err(|e| Error::new(ErrorKind::InvalidData, e))
}

/// JSON text as a value, refusing an object that names a key twice: serde_json keeps the last
/// of them silently, so `{"epochs": 3, "epochs": 4}` would train 4 epochs without a word.
pub(crate) fn json(text: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(text);
    let Unique(value) = Unique::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// A JSON value whose objects each name a key once.
struct Unique(serde_json::Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(items.into())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{}` appears twice; keep one",
                    shorten(&key)
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(object.into())
    }
}

/// `text` as an error may quote it: at most 200 characters, the rest counted, so a 64 MiB
/// string in a config file is not echoed whole to the terminal.
pub(crate) fn shorten(text: &str) -> std::borrow::Cow<'_, str> {
    const KEEP: usize = 200;
    match text.char_indices().nth(KEEP) {
        None => text.into(),
        Some((end, _)) => format!(
            "{}… ({} more characters)",
            &text[..end],
            text[end..].chars().count()
        )
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_blocking_and_large_ones_by_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = bytes(&fifo, CONFIG).unwrap_err();
        assert!(
            err.to_string()
                .contains("not a regular file (it is a FIFO)"),
            "{err}"
        );
        let err = bytes(Path::new("/dev/zero"), CONFIG).unwrap_err();
        assert!(err.to_string().contains("(it is a device)"), "{err}");
        let sparse = dir.path().join("sparse");
        File::create(&sparse)
            .unwrap()
            .set_len(CONFIG.bytes + 1)
            .unwrap();
        let err = bytes(&sparse, CONFIG).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("a config file may hold"), "{err}");
        std::fs::write(&sparse, b"{}").unwrap();
        assert_eq!(bytes(&sparse, CONFIG).unwrap(), b"{}");
    }

    #[test]
    fn a_key_named_twice_is_refused_at_any_depth() {
        assert!(json(br#"{"epochs": 3, "lr": [1, {"a": null}]}"#).is_ok());
        let err = json(br#"{"epochs": 3, "epochs": 4}"#).unwrap_err();
        assert!(err.to_string().contains("`epochs` appears twice"), "{err}");
        assert!(json(br#"{"o": {"kind": "adam", "kind": "sgd"}}"#).is_err());
        assert!(json(br#"{"a": 1} x"#).is_err(), "trailing text");
        let value = json(br#"{"b": 1.5, "a": -2, "c": 18446744073709551615}"#).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"b": 1.5, "a": -2, "c": 18446744073709551615_u64})
        );
    }

    #[test]
    fn long_text_is_cut_in_messages() {
        assert_eq!(shorten("short"), "short");
        let long = "x".repeat(1000);
        let cut = shorten(&long);
        assert!(
            cut.len() < 250 && cut.ends_with("(800 more characters)"),
            "{cut}"
        );
    }
}
