#!/usr/bin/env bash
# One experiment built against the runtime of two commits, measured from outside: the medium
# task (MLP 784→256→10, 2 epochs of 8,192 items, checkpoints as the benchmark's) written as a
# user would, in a crate of its own outside this workspace, depending on `dsl-runtime` of
# commit REV and of the working tree. Prints the whole-process wall time of each (medians of
# RUNS alternating runs) with their ratio, and the instructions of one run of each under
# `valgrind --tool=callgrind`. Both builds use this workspace's Burn (same version, same
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
dsl-runtime = { path = "$2/dsl-runtime" }
$burn

[workspace]
EOF
  cp Cargo.lock "$1/"
  cat >"$1/src/main.rs" <<'EOF'
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn::train::ClassificationOutput;
use dsl_runtime::prelude::*;

#[derive(Clone, Debug)]
pub struct Digit {
    x: Vec<f32>,
    class: i64,
}

fn noise(a: u64, b: u64) -> f32 {
    let mut z = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_add(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn digits(range: std::ops::Range<usize>) -> Arc<InMemDataset<Digit>> {
    let items = range
        .map(|k| Digit {
            x: (0..784)
                .map(|j| 0.5 * noise((k % 10) as u64, j as u64) + noise(k as u64, 1_000_000 + j as u64))
                .collect(),
            class: (k % 10) as i64,
        })
        .collect();
    Arc::new(InMemDataset::new(items))
}

#[derive(Clone, Debug)]
pub struct DigitBatch {
    x: Tensor<2>,
    classes: Tensor<1, Int>,
}

#[derive(Clone, Debug, Default)]
pub struct DigitBatcher;

impl Batcher<Digit, DigitBatch> for DigitBatcher {
    fn batch(&self, items: Vec<Digit>, device: &Device) -> DigitBatch {
        let n = items.len();
        let xs: Vec<f32> = items.iter().flat_map(|d| d.x.iter().copied()).collect();
        let classes: Vec<i64> = items.iter().map(|d| d.class).collect();
        DigitBatch {
            x: Tensor::from_data(TensorData::new(xs, [n, 784]), device),
            classes: Tensor::from_data(TensorData::new(classes, [n]), device),
        }
    }
}

#[derive(Module, Debug)]
pub struct Medium {
    fc1: Linear,
    act: Relu,
    fc2: Linear,
}

impl Medium {
    fn new(device: &Device) -> Self {
        device.seed(42);
        Self {
            fc1: LinearConfig::new(784, 256).init(device),
            act: Relu::new(),
            fc2: LinearConfig::new(256, 10).init(device),
        }
    }

    fn forward_classification(&self, batch: DigitBatch) -> ClassificationOutput {
        let logits = self.fc2.forward(self.act.forward(self.fc1.forward(batch.x)));
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.classes.clone());
        ClassificationOutput::new(loss, logits, batch.classes)
    }
}

training! {
    name: HeldOut,
    model: Medium = Medium::new(device),
    step: |model, batch: DigitBatch| -> ClassificationOutput { model.forward_classification(batch) },
    loader: { train: digits(0..8192), valid: digits(8192..10240), batcher: DigitBatcher, batch_size: 64 },
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
