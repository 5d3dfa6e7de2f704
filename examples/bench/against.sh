#!/usr/bin/env bash
# One experiment built against the runtime of two commits, measured from outside: the
# benchmark's medium task (MLP 784→256→10, 2 epochs of 8,192 items, checkpoints) written as a
# user would, with `cli()`, in a crate of its own outside this workspace, depending on
# `burn-experiment` of commit REV and of the working tree. Prints the whole-process wall time of
# each (medians of RUNS alternating runs) with their ratio, and the instructions of one run of
# each under `valgrind --tool=callgrind`. Both builds use this workspace's Burn (same version, same
# features), so the difference is the runtime's. They build in target/against: a checkout of
# another commit built in this workspace's target directory would overwrite its crates'
# artifacts (cargo names them by their path inside the workspace, the same in both).
# Usage: examples/bench/against.sh REV [RUNS, default 7]; CALLGRIND=0 skips the instruction
# counts (several minutes each under valgrind).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rev=${1:?usage: against.sh REV [RUNS]}
runs=${2:-7}
work=$(mktemp -d /tmp/against.XXXXXX)
trap 'git -C "$root" worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --quiet --detach "$work/tree" "$rev"
burn=$(grep '^burn = ' Cargo.toml)

crate() { # crate DIR RUNTIME_DIR
  mkdir -p "$1/src"
  cat >"$1/Cargo.toml" <<EOF
[package]
name = "heldout"
version = "0.1.0"
edition = "2024"

[dependencies]
burn-experiment = { path = "$2/dsl-runtime" }
$burn

[workspace]
EOF
  cp Cargo.lock "$1/"
  cat >"$1/src/main.rs" <<EOF
//! The benchmark's medium task (its data, model and batcher are \`examples/bench/tasks.rs\`).

#[allow(dead_code)]
#[path = "$root/examples/bench/tasks.rs"]
mod tasks;

use burn::train::ClassificationOutput;
use burn_experiment::prelude::*;
use tasks::{DigitBatch, DigitBatcher, Medium, medium_data};

training! {
    name: HeldOut,
    model: Medium = Medium::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: medium_data().0, valid: medium_data().1, batcher: DigitBatcher::default(), batch_size: 64 },
    optimizer: adam(lr = 1e-3),
    epochs: 2,
    metrics: [train.loss, valid.loss, valid.accuracy],
    checkpoint: keep_last(2) | best(valid.loss),
}

fn main() -> std::process::ExitCode {
    HeldOut::cli()
}
EOF
}

for side in before now; do
  case $side in before) runtime=$work/tree ;; now) runtime=$root ;; esac
  crate "$work/$side" "$runtime"
  CARGO_TARGET_DIR=$root/target/against cargo build --quiet --release --manifest-path "$work/$side/Cargo.toml"
  cp "$root/target/against/release/heldout" "$work/heldout-$side"
done

run() { # run SIDE: whole-process milliseconds of one run
  local dir=$work/runs-$1
  rm -rf "$dir"
  local start end
  start=$(date +%s%N)
  "$work/heldout-$1" --artifacts "$dir" >/dev/null 2>&1
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
declare -A times
for ((i = 1; i <= runs; i++)); do
  for side in before now; do
    times[$side]+="$(run $side) "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
before=$(median "${times[before]}")
now=$(median "${times[now]}")
echo "whole process, medians of $runs alternating runs: $rev ${before} ms, now ${now} ms ($(awk -v a="$now" -v b="$before" 'BEGIN { printf "%.2f", a / b }')x)"
[ "${CALLGRIND:-1}" = 0 ] && exit 0
for side in before now; do
  rm -rf "$work/runs-$side"
  valgrind --tool=callgrind --callgrind-out-file="$work/$side.out" \
    "$work/heldout-$side" --artifacts "$work/runs-$side" >/dev/null 2>"$work/$side.log"
  instructions=$(grep -E '^(summary|totals):' "$work/$side.out" | head -1 | awk '{print $2}')
  printf 'instructions (callgrind, one run), %s: %s\n' "$side" "$instructions"
done
