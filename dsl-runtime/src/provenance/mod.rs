//! What a rerun needs to know to reproduce a run, saved under `provenance` in `config.json`:
//! the versions that built it, the project's git state, and a fingerprint of each dataset.
//! `--verify` compares these with the rerun's when the losses differ, to name the cause.

mod fingerprint;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use fingerprint::{
    BYTE_BUDGET, ByCount, ByDebug, ByValues, Fingerprint, ItemHasher, MIN_SAMPLED,
    MIN_SAMPLED_TEXT, Probe, SAMPLED_ITEMS, TEXT_BUDGET,
};

/// The Burn release the runtime is pinned to (`=0.22.1` in the workspace's `Cargo.toml`; a
/// test keeps the two equal). Burn exports no version constant.
pub const BURN_VERSION: &str = "0.22.1";

/// Versions, git state and data fingerprints of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// This crate's version (`dsl_runtime` in the records of 0.1, before the crate's rename).
    #[serde(alias = "dsl_runtime")]
    pub burn_experiment: String,
    /// This crate's commit when it was built from a git work tree (a path or git dependency),
    /// with `+dirty` when its tracked files differed from it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "dsl_runtime_commit"
    )]
    pub burn_experiment_commit: Option<String>,
    /// Burn's version.
    pub burn: String,
    /// `rustc --version` of the compiler that built the binary.
    pub rustc: String,
    /// The vector instructions of the CPU it ran on ([`cpu_level`]); absent in records made
    /// before it was kept, and then not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The commit of the experiment's project, `None` outside a git work tree.
    pub git: Option<GitState>,
    /// A fingerprint of each split (`train`, `valid`, `test`).
    pub data: BTreeMap<String, DataFingerprint>,
}

/// The git state of the project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GitState {
    /// The commit `HEAD` names.
    pub commit: String,
    /// Whether tracked files differed from that commit when the experiment was compiled
    /// ([`Provenance::built_from`]); `None` when not known (a [`Fit`](crate::fit::Fit) run without
    /// `training!`).
    pub dirty: Option<bool>,
}

/// The number of items of a dataset and, when its items can be read (their values through
/// [`Fingerprint`], else their `Debug` text), a CRC-32C of evenly spaced items in dataset
/// order, within a fixed budget of bytes (`provenance/fingerprint.rs` says how): a cheap
/// proxy that catches changed, reordered, added or removed items, though a change to an item
/// outside the sample, or past its share of the budget, goes unseen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataFingerprint {
    /// `Dataset::len`.
    pub items: usize,
    /// The hash in hex; `None` when the items implement neither [`Fingerprint`] nor `Debug`.
    pub hash: Option<String>,
}

impl std::fmt::Display for DataFingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.hash {
            Some(hash) => write!(f, "{} items, hash {hash}", self.items),
            None => write!(
                f,
                "{} items (not hashed: neither `Fingerprint` nor `Debug`)",
                self.items
            ),
        }
    }
}

impl Provenance {
    /// The versions of this build and the commit of `project` (the experiment crate's folder)
    /// at run time, without a dirty flag; data fingerprints are added with
    /// [`Provenance::data`].
    pub fn new(project: &Path) -> Self {
        Self::with_git(head_commit(project).map(|commit| GitState {
            commit,
            dirty: None,
        }))
    }

    /// The versions of this build and the git state `training!` found when it compiled the
    /// experiment: the commit the binary was built from, and whether tracked files differed
    /// from it then. (Asking `git` at run time would cost a process, milliseconds, as much as
    /// a whole small training run.)
    pub fn built_from(commit: &str, dirty: bool) -> Self {
        Self::with_git(Some(GitState {
            commit: commit.to_owned(),
            dirty: Some(dirty),
        }))
    }

    /// The versions of this build, for an experiment crate that sits in a git work tree whose
    /// repository does not track it: no commit names its sources.
    pub fn untracked() -> Self {
        Self::with_git(None)
    }

    fn with_git(git: Option<GitState>) -> Self {
        Self {
            burn_experiment: env!("CARGO_PKG_VERSION").to_owned(),
            burn_experiment_commit: option_env!("DSL_RUNTIME_COMMIT").map(str::to_owned),
            burn: BURN_VERSION.to_owned(),
            rustc: env!("DSL_RUSTC_VERSION").to_owned(),
            cpu: Some(cpu_level().to_owned()),
            git,
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
            "burn-experiment",
            self.burn_experiment.clone(),
            now.burn_experiment.clone(),
        );
        let commit = |c: &Option<String>| c.clone().unwrap_or_else(|| "not from git".to_owned());
        compare(
            "burn-experiment commit",
            commit(&self.burn_experiment_commit),
            commit(&now.burn_experiment_commit),
        );
        compare("burn", self.burn.clone(), now.burn.clone());
        compare("rustc", self.rustc.clone(), now.rustc.clone());
        if let (Some(was), Some(is)) = (&self.cpu, &now.cpu) {
            compare("CPU vector instructions", was.clone(), is.clone());
        }
        // A flag not known on either side (a run that did not end) is not compared.
        let known = |g: &Option<GitState>| g.as_ref().and_then(|g| g.dirty).is_some();
        let compare_dirty = known(&self.git) && known(&now.git);
        let git = |g: &Option<GitState>| match g {
            Some(g) if compare_dirty && g.dirty == Some(true) => {
                format!("{} with uncommitted changes", g.commit)
            }
            Some(g) => g.commit.clone(),
            None => "sources not tracked by git".to_owned(),
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

/// The widest vector instructions of this CPU that Burn's CPU backend (`flex`, through the
/// `macerator` crate) picks at run time: a sum over 32 floats is 2 registers of 16 lanes on
/// x86-64-v4 (AVX-512) and 4 of 8 on x86-64-v3 (AVX2), added in another order, so the same run
/// differs in the last bits between the two (seen: `--batch-size 8` or `32` of the seed task;
/// 16 agrees). A run reproduces bit for bit on a CPU of the same level.
pub fn cpu_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            "x86-64-v4 (AVX-512)"
        } else if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            "x86-64-v3 (AVX2)"
        } else if std::arch::is_x86_feature_detected!("sse4.2") {
            "x86-64-v2 (SSE4.2)"
        } else {
            "x86-64 (no vector extensions past SSE2)"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH
    }
}

/// The commit `HEAD` names, read from the repository's files: no `git` process (see
/// [`Provenance::built_from`] for why), and no git library for three small files. Handles
/// a `.git` folder or file (worktrees, submodules), loose and packed refs, a detached `HEAD`.
fn head_commit(project: &Path) -> Option<String> {
    let dot_git = project
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|p| p.exists())?;
    let git_dir = if dot_git.is_file() {
        let text = crate::read::text(&dot_git, crate::read::SMALL).ok()?;
        let linked = Path::new(text.strip_prefix("gitdir:")?.trim());
        dot_git.parent()?.join(linked)
    } else {
        dot_git
    };
    // A worktree keeps its own HEAD and the shared refs in the common folder.
    let common = match crate::read::text(&git_dir.join("commondir"), crate::read::SMALL) {
        Ok(dir) => git_dir.join(dir.trim()),
        Err(_) => git_dir.clone(),
    };
    let head = crate::read::text(&git_dir.join("HEAD"), crate::read::SMALL).ok()?;
    let Some(name) = head.trim().strip_prefix("ref:").map(str::trim) else {
        return Some(head.trim().to_owned());
    };
    for dir in [&git_dir, &common] {
        if let Ok(commit) = crate::read::text(&dir.join(name), crate::read::SMALL) {
            return Some(commit.trim().to_owned());
        }
    }
    let packed = crate::read::text(&common.join("packed-refs"), crate::read::SMALL).ok()?;
    packed.lines().find_map(|line| {
        let (commit, reference) = line.split_once(' ')?;
        (reference == name).then(|| commit.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run recorded by 0.1, when the crate was `dsl-runtime`, reads the same.
    #[test]
    fn a_record_of_the_crate_under_its_old_name_reads_the_same() {
        let now = Provenance::untracked();
        let mut old = serde_json::to_value(&now).unwrap();
        let map = old.as_object_mut().unwrap();
        let version = map.remove("burn_experiment").unwrap();
        map.insert("dsl_runtime".to_owned(), version);
        map.remove("burn_experiment_commit");
        map.insert("dsl_runtime_commit".to_owned(), "abc+dirty".into());
        let read: Provenance = serde_json::from_value(old).unwrap();
        assert_eq!(read.burn_experiment, now.burn_experiment);
        assert_eq!(read.burn_experiment_commit.as_deref(), Some("abc+dirty"));
    }

    #[test]
    fn the_pinned_burn_version_is_the_one_recorded() {
        let manifest = include_str!("../../../Cargo.toml");
        assert!(
            manifest.contains(&format!("burn = {{ version = \"={BURN_VERSION}\"")),
            "BURN_VERSION is out of date with the workspace's burn dependency"
        );
    }

    #[test]
    fn the_commit_is_read_from_the_repository_files() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let project = dir.path().join("crates/exp");
        std::fs::create_dir_all(&project).unwrap();
        assert_eq!(head_commit(&project), None, "no such ref yet");
        std::fs::write(
            git.join("packed-refs"),
            "# pack-refs\nabc123 refs/heads/main\n",
        )
        .unwrap();
        assert_eq!(head_commit(&project).as_deref(), Some("abc123"));
        std::fs::write(git.join("refs/heads/main"), "def456\n").unwrap();
        assert_eq!(head_commit(&project).as_deref(), Some("def456"));
        std::fs::write(git.join("HEAD"), "0123abcd\n").unwrap();
        assert_eq!(head_commit(&project).as_deref(), Some("0123abcd"));
        // This crate's own repository, if it is in one, agrees with git.
        let ours = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .output();
        if let Ok(out) = ours
            && out.status.success()
        {
            let expected = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            assert_eq!(
                head_commit(Path::new(env!("CARGO_MANIFEST_DIR"))),
                Some(expected)
            );
        }
    }

    #[test]
    fn untracked_sources_have_no_commit_and_the_runtime_names_its_own() {
        let untracked = Provenance::untracked();
        assert_eq!(untracked.git, None);
        let tracked = Provenance::built_from("abc123", false);
        assert_eq!(
            untracked.differences(&tracked),
            ["git commit: sources not tracked by git → abc123"]
        );
        // This runtime, built from its repository, records that repository's commit.
        let ours = std::process::Command::new("git")
            .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
            .output();
        if let Ok(out) = ours
            && out.status.success()
        {
            let head = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            let recorded = untracked.burn_experiment_commit.unwrap();
            assert_eq!(recorded.trim_end_matches("+dirty").len(), head.len());
        }
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
        now.cpu = Some("aarch64".into());
        now.data.get_mut("train").unwrap().hash = Some("bb".into());
        assert_eq!(
            was.differences(&now),
            [
                "burn: 0.22.1 → 0.23.0",
                &format!("CPU vector instructions: {} → aarch64", cpu_level())[..],
                "data `train`: 3 items, hash aa → 3 items, hash bb"
            ]
        );
        assert!(was.differences(&was).is_empty());
        // A record from before the CPU was kept claims no difference of it.
        let old = Provenance {
            cpu: None,
            ..now.clone()
        };
        assert!(old.differences(&now).is_empty());
        assert!(now.differences(&old).is_empty());
    }
}
