//! What a rerun needs to know to reproduce a run, saved under `provenance` in `config.json`:
//! the versions that built it, the project's git state, and a fingerprint of each dataset.
//! `--verify` compares these with the rerun's when the losses differ, to name the cause.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;

use burn::data::dataset::Dataset;
use serde::{Deserialize, Serialize};

/// The Burn release the runtime is pinned to (`=0.22.1` in the workspace's `Cargo.toml`; a
/// test keeps the two equal). Burn exports no version constant.
pub const BURN_VERSION: &str = "0.22.1";

/// Items hashed per dataset at most: evenly spaced over the dataset, so a large dataset costs
/// the same as a small one at start-up.
pub const SAMPLED_ITEMS: usize = 1024;

/// Versions, git state and data fingerprints of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// This crate's version.
    pub dsl_runtime: String,
    /// Burn's version.
    pub burn: String,
    /// `rustc --version` of the compiler that built the binary.
    pub rustc: String,
    /// The commit of the experiment's project, `None` outside a git work tree.
    pub git: Option<GitState>,
    /// A fingerprint of each split (`train`, `valid`, `test`).
    pub data: BTreeMap<String, DataFingerprint>,
}

/// The git state of the project at the start of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GitState {
    /// `git rev-parse HEAD`.
    pub commit: String,
    /// Whether tracked files differed from that commit.
    pub dirty: bool,
}

/// The number of items of a dataset and, when its items implement `Debug`, a CRC-32C of the
/// `Debug` text of up to [`SAMPLED_ITEMS`] of them, evenly spaced and in dataset order: a
/// cheap proxy that catches changed, reordered, added or removed items, though a change to an
/// item outside the sample goes unseen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataFingerprint {
    /// `Dataset::len`.
    pub items: usize,
    /// The hash in hex; `None` when the items do not implement `Debug`.
    pub hash: Option<String>,
}

impl std::fmt::Display for DataFingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.hash {
            Some(hash) => write!(f, "{} items, hash {hash}", self.items),
            None => write!(f, "{} items (not `Debug`: not hashed)", self.items),
        }
    }
}

impl Provenance {
    /// The versions of this build and the git state of `project` (the experiment crate's
    /// folder); data fingerprints are added with [`Provenance::data`].
    pub fn new(project: &Path) -> Self {
        Self {
            dsl_runtime: env!("CARGO_PKG_VERSION").to_owned(),
            burn: BURN_VERSION.to_owned(),
            rustc: env!("DSL_RUSTC_VERSION").to_owned(),
            git: git_state(project),
            data: BTreeMap::new(),
        }
    }

    /// Adds the fingerprint of split `split`.
    pub fn data(mut self, split: &str, fingerprint: DataFingerprint) -> Self {
        self.data.insert(split.to_owned(), fingerprint);
        self
    }

    /// Each fact of `self` (a recorded run) that differs in `now`, as `what: was → now`.
    pub fn differences(&self, now: &Self) -> Vec<String> {
        let mut out = Vec::new();
        let mut compare = |what: &str, was: String, is: String| {
            if was != is {
                out.push(format!("{what}: {was} → {is}"));
            }
        };
        compare(
            "dsl-runtime",
            self.dsl_runtime.clone(),
            now.dsl_runtime.clone(),
        );
        compare("burn", self.burn.clone(), now.burn.clone());
        compare("rustc", self.rustc.clone(), now.rustc.clone());
        let git = |g: &Option<GitState>| match g {
            Some(g) if g.dirty => format!("{} with uncommitted changes", g.commit),
            Some(g) => g.commit.clone(),
            None => "not in git".to_owned(),
        };
        compare("git commit", git(&self.git), git(&now.git));
        let splits: std::collections::BTreeSet<&String> =
            self.data.keys().chain(now.data.keys()).collect();
        let show =
            |f: Option<&DataFingerprint>| f.map_or_else(|| "absent".to_owned(), |f| f.to_string());
        for split in splits {
            compare(
                &format!("data `{split}`"),
                show(self.data.get(split)),
                show(now.data.get(split)),
            );
        }
        out
    }
}

fn git_state(project: &Path) -> Option<GitState> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(project)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    let status = git(&["status", "--porcelain", "--untracked-files=no"])?;
    Some(GitState {
        commit,
        dirty: !status.is_empty(),
    })
}

/// A dataset to fingerprint. `training!` calls `(&Probe(dataset)).fingerprint()` with
/// [`ByDebug`] and [`ByCount`] in scope: method lookup tries `ByDebug`'s receiver first and
/// takes it when the items implement `Debug`, else falls back to `ByCount` one auto-reference
/// later ("autoref specialization", which works on the concrete types of an expansion).
pub struct Probe<'a, I>(pub &'a dyn Dataset<I>);

/// The fingerprint of a dataset of `Debug` items: count and hash.
pub trait ByDebug {
    /// See [`DataFingerprint`].
    fn fingerprint(&self) -> DataFingerprint;
}

/// The fingerprint of a dataset of other items: the count alone.
pub trait ByCount {
    /// See [`DataFingerprint`].
    fn fingerprint(&self) -> DataFingerprint;
}

impl<I: Debug> ByDebug for Probe<'_, I> {
    fn fingerprint(&self) -> DataFingerprint {
        let items = self.0.len();
        let mut crc = 0;
        for index in sampled(items) {
            let text = format!("{:?}", self.0.get(index));
            crc = crc32c::crc32c_append(crc, text.as_bytes());
        }
        DataFingerprint {
            items,
            hash: Some(format!("{crc:08x}")),
        }
    }
}

impl<I> ByCount for &Probe<'_, I> {
    fn fingerprint(&self) -> DataFingerprint {
        DataFingerprint {
            items: self.0.len(),
            hash: None,
        }
    }
}

/// Up to [`SAMPLED_ITEMS`] indices of `0..len`, evenly spaced, the first and last included.
fn sampled(len: usize) -> impl Iterator<Item = usize> {
    let n = len.min(SAMPLED_ITEMS);
    (0..n).map(move |k| if n == 1 { 0 } else { k * (len - 1) / (n - 1) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::data::dataset::InMemDataset;

    #[test]
    fn the_pinned_burn_version_is_the_one_recorded() {
        let manifest = include_str!("../../Cargo.toml");
        assert!(
            manifest.contains(&format!("burn = {{ version = \"={BURN_VERSION}\"")),
            "BURN_VERSION is out of date with the workspace's burn dependency"
        );
    }

    #[test]
    fn debug_items_are_hashed_and_a_changed_item_changes_the_hash() {
        let data = InMemDataset::new(vec![1.0_f32, 2.0, 3.0]);
        let before = Probe(&data).fingerprint();
        let changed = InMemDataset::new(vec![1.0_f32, 2.5, 3.0]);
        let after = Probe(&changed).fingerprint();
        assert_eq!(before.items, 3);
        assert!(before.hash.is_some());
        assert_ne!(before.hash, after.hash);
        let reordered = InMemDataset::new(vec![2.0_f32, 1.0, 3.0]);
        assert_ne!(before.hash, Probe(&reordered).fingerprint().hash);
    }

    #[test]
    fn other_items_are_counted() {
        #[derive(Clone)]
        struct Opaque;
        let data = InMemDataset::new(vec![Opaque, Opaque]);
        let print = (&Probe(&data)).fingerprint();
        assert_eq!(
            print,
            DataFingerprint {
                items: 2,
                hash: None
            }
        );
    }

    #[test]
    fn large_datasets_are_sampled_evenly() {
        let indices: Vec<usize> = sampled(10_000).collect();
        assert_eq!(indices.len(), SAMPLED_ITEMS);
        assert_eq!((indices[0], indices[SAMPLED_ITEMS - 1]), (0, 9_999));
        assert_eq!(sampled(3).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(sampled(0).count(), 0);
    }

    #[test]
    fn differences_name_each_fact() {
        let was = Provenance::new(Path::new("/")).data(
            "train",
            DataFingerprint {
                items: 3,
                hash: Some("aa".into()),
            },
        );
        let mut now = was.clone();
        now.burn = "0.23.0".into();
        now.data.get_mut("train").unwrap().hash = Some("bb".into());
        assert_eq!(
            was.differences(&now),
            [
                "burn: 0.22.1 → 0.23.0",
                "data `train`: 3 items, hash aa → 3 items, hash bb"
            ]
        );
        assert!(was.differences(&was).is_empty());
    }
}
