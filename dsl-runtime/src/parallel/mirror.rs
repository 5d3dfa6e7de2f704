//! A resumed run's directory on every rank, without a shared filesystem: rank 0 reads its run
//! directory and sends it; the other ranks write it to a private temporary folder, where the
//! fit loop's resume reads it as rank 0 reads the original, and remove it when done.

use std::path::{Path, PathBuf};

use super::Collective;

/// The run directory a rank resumes from.
pub(crate) struct Mirror {
    path: PathBuf,
    /// Removed on drop: a copy of rank 0's files.
    temporary: bool,
}

impl Mirror {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rank 0's `run_dir` (read on rank 0 only) on every rank.
    pub fn share(group: &dyn Collective, run_dir: &Path) -> std::io::Result<Self> {
        let bytes = if group.rank() == 0 {
            let mut files = Vec::new();
            collect(run_dir, run_dir, &mut files)?;
            encode(&files)
        } else {
            Vec::new()
        };
        let bytes = group.broadcast(bytes);
        if group.rank() == 0 {
            return Ok(Self {
                path: run_dir.to_owned(),
                temporary: false,
            });
        }
        reclaim(&std::env::temp_dir());
        let path = Self::private(group.rank());
        let mirror = Self {
            path,
            temporary: true,
        };
        for (relative, contents) in decode(&bytes).map_err(std::io::Error::other)? {
            let file = mirror.path.join(relative);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(file, contents)?;
        }
        Ok(mirror)
    }

    /// Where a rank other than 0 keeps its copy; a run that resumes nothing never creates it.
    pub fn private(rank: usize) -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        std::env::temp_dir().join(format!("dsl-rank{rank}-{}-{nanos}", std::process::id()))
    }
}

/// Removes the copies in `dir` of ranks whose process is gone: a rank killed (or ended by
/// another rank's abort) while it held one never ran its `Drop`. A copy names its process
/// (`dsl-rank{rank}-{pid}-{nanos}`); where `/proc` does not list processes, nothing is removed.
fn reclaim(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("dsl-rank"))
            .and_then(|rest| rest.split('-').nth(1))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Every file under `dir` but TensorBoard's event files, which a resume does not read.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "tensorboard" {
                collect(root, &path, out)?;
            }
        } else if let Ok(relative) = path.strip_prefix(root) {
            out.push((
                relative.to_string_lossy().into_owned(),
                crate::read::bytes(&path, crate::read::METRICS)?,
            ));
        }
    }
    Ok(())
}

fn encode(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    put(&(files.len() as u64).to_le_bytes());
    for (path, contents) in files {
        put(path.as_bytes());
        put(contents);
    }
    out
}

fn decode(mut bytes: &[u8]) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut next = || -> Result<&[u8], String> {
        let (len, rest) = bytes.split_at_checked(8).ok_or("cut short")?;
        let len = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
        let (field, rest) = rest.split_at_checked(len).ok_or("cut short")?;
        bytes = rest;
        Ok(field)
    };
    let count = u64::from_le_bytes(next()?.try_into().map_err(|_| "bad count")?);
    (0..count)
        .map(|_| {
            let path = PathBuf::from(String::from_utf8_lossy(next()?).into_owned());
            // Only paths below the folder: the sender is the same binary, but a copy must
            // never write elsewhere.
            if path.is_absolute() || path.components().any(|c| c.as_os_str() == "..") {
                return Err(format!("{} is outside the run directory", path.display()));
            }
            Ok((path, next()?.to_vec()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{decode, encode, reclaim};

    #[test]
    fn copies_of_ranks_that_are_gone_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // No process has a pid this large (Linux caps them at 2^22).
        let gone = dir.path().join("dsl-rank1-99999999-17");
        let live = dir
            .path()
            .join(format!("dsl-rank1-{}-18", std::process::id()));
        let other = dir.path().join("dsl-rankings");
        for folder in [&gone, &live, &other] {
            std::fs::create_dir_all(folder.join("checkpoint")).unwrap();
        }
        reclaim(dir.path());
        assert!(!gone.exists());
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn files_read_back_as_sent_and_never_outside_the_folder() {
        let files = vec![
            ("config.json".to_owned(), b"{}".to_vec()),
            (
                "checkpoints/epoch-1/model.bpk".to_owned(),
                vec![0, 1, 2, 255],
            ),
        ];
        let back = decode(&encode(&files)).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].0.to_str(), Some("checkpoints/epoch-1/model.bpk"));
        assert_eq!(back[1].1, vec![0, 1, 2, 255]);
        let escaping = encode(&[("../x".to_owned(), vec![])]);
        assert!(decode(&escaping).unwrap_err().contains("outside"));
        assert!(decode(&encode(&files)[..20]).is_err());
    }
}
