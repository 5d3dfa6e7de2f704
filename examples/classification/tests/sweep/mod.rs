//! The sweep folder a sweep of the example writes: shared by the CLI tests and the Slurm job
//! array's.

use std::path::{Path, PathBuf};

/// The one `sweep-<grid>` folder of the experiment under `artifacts`.
pub fn sweep_dir(artifacts: &Path) -> PathBuf {
    let sweeps: Vec<PathBuf> = std::fs::read_dir(artifacts.join("three_class"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("sweep-")
        })
        .collect();
    let [sweep] = &sweeps[..] else {
        panic!("one sweep folder: {sweeps:?}")
    };
    sweep.clone()
}
