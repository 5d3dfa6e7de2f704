//! The runs of one experiment: `<artifacts>/<name>/run-<N>/`, numbered from 1 in the order they
//! started, as Lightning's `version_N`. A fresh run always gets a new directory, so nothing an
//! earlier run wrote is ever deleted or overwritten; the newest is the one with the highest
//! number.

use std::path::{Path, PathBuf};

const PREFIX: &str = "run-";

/// The folder holding an experiment's runs.
#[derive(Clone, Debug)]
pub struct ExperimentRuns {
    dir: PathBuf,
}

impl ExperimentRuns {
    /// The runs of experiment `name` under `artifacts`.
    pub fn new(artifacts: &Path, name: &str) -> Self {
        Self {
            dir: artifacts.join(name),
        }
    }

    /// `<artifacts>/<name>`.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The numbers of the existing runs, oldest first.
    pub fn numbers(&self) -> std::io::Result<Vec<usize>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut numbers: Vec<usize> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|entry| parse(&entry.file_name().to_string_lossy()))
            .collect();
        numbers.sort_unstable();
        Ok(numbers)
    }

    /// The newest run's directory, if any run exists.
    pub fn newest(&self) -> std::io::Result<Option<PathBuf>> {
        Ok(self.numbers()?.last().map(|&n| self.run(n)))
    }

    /// The directory of run `id` (`run-3` or `3`), whether or not it exists; `None` when `id`
    /// is neither form.
    pub fn named(&self, id: &str) -> Option<PathBuf> {
        parse(id)
            .or_else(|| id.parse().ok().filter(|&n| n > 0))
            .map(|n| self.run(n))
    }

    /// Creates the directory of a new run, numbered after the newest. Two processes starting at
    /// once get different numbers: the directory is created exclusively and the next number
    /// tried when another process took it.
    pub fn create_next(&self) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        refuse_link(&self.dir)?;
        let mut next = self.numbers()?.last().map_or(1, |n| n + 1);
        loop {
            let path = self.run(next);
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => next += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The directory the next run would get, without creating it (for a run that writes no
    /// file).
    pub fn next(&self) -> std::io::Result<PathBuf> {
        Ok(self.run(self.numbers()?.last().map_or(1, |n| n + 1)))
    }

    fn run(&self, n: usize) -> PathBuf {
        self.dir.join(format!("{PREFIX}{n}"))
    }
}

/// A symbolic link where a run's folder should be would send its files outside the artifacts
/// folder the user chose.
pub(crate) fn refuse_link(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link: runs are written only inside the artifacts folder; remove the link or choose another --artifacts",
                path.display()
            ),
        ));
    }
    Ok(())
}

fn parse(name: &str) -> Option<usize> {
    name.strip_prefix(PREFIX)?.parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::ExperimentRuns;

    #[test]
    fn runs_are_numbered_and_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let runs = ExperimentRuns::new(dir.path(), "seed");
        assert_eq!(runs.newest().unwrap(), None);
        let first = runs.create_next().unwrap();
        let second = runs.create_next().unwrap();
        assert_eq!(first, dir.path().join("seed/run-1"));
        assert_eq!(second, dir.path().join("seed/run-2"));
        assert_eq!(runs.newest().unwrap(), Some(second.clone()));
        assert_eq!(runs.named("1"), Some(first.clone()));
        assert_eq!(runs.named("run-2"), Some(second));
        assert_eq!(runs.named("latest"), None);
        // Other entries do not count as runs.
        std::fs::create_dir(dir.path().join("seed/run-x")).unwrap();
        std::fs::write(dir.path().join("seed/run-9"), b"a file").unwrap();
        assert_eq!(runs.numbers().unwrap(), [1, 2]);
        assert_eq!(runs.next().unwrap(), dir.path().join("seed/run-3"));
    }

    #[test]
    fn a_link_in_place_of_the_runs_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("seed")).unwrap();
        let err = ExperimentRuns::new(dir.path(), "seed")
            .create_next()
            .unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none()
        );
    }
}
