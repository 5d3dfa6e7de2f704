//! Writing a file so that a crash leaves either the old content or the new, never half of it.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` through a temporary file in the same directory, renamed over the
/// target: a killed process leaves the old file or the new one, never half of one. Nothing is
/// synced here; a power loss can lose the last version unless the caller syncs (checkpoints
/// are synced in batches by their writer thread, see `checkpoint::store`).
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
    // Named for this process and call, so that two writers of one file (two processes, or two
    // threads of one) never write into each other's temporary file.
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Runs `f` holding an exclusive lock on `<dir>/.report.lock`. Processes that each read a
/// folder's records and rewrite a table from them (a job array's trials, ending together) take
/// turns: without it, one that read the records before another's landed could rename its
/// table over the newer one, and the table would lose a trial for good. The lock is released
/// when the process dies, so a killed writer never blocks the next.
pub fn with_report_lock<T>(
    dir: &Path,
    f: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    let lock = File::options()
        .create(true)
        .write(true)
        .truncate(false)
        .open(dir.join(".report.lock"))?;
    lock.lock()?;
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        replace_file(&path, b"old").unwrap();
        replace_file(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
