#!/usr/bin/env bash
# The ring GAN declared (`gan`, two optimizers, checkpoints and metrics written) against its
# hand-written Burn loop (`gan-hand`, nothing written), whole processes in release builds:
# median wall time of RUNS alternating runs of each, and their ratio. Burn's
# `SupervisedTraining` has no form for two optimizers, so it is not in this comparison.
# Usage: examples/gan/bench.sh [RUNS, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
cargo build --release -p gan --bins --quiet
work=$(mktemp -d /tmp/gan-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
declared=() hand=()
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  target/release/gan --quiet --artifacts "$work/run-$i" >/dev/null
  declared+=("$(echo "$(date +%s.%N) - $start" | bc)")
  start=$(date +%s.%N)
  target/release/gan-hand >/dev/null
  hand+=("$(echo "$(date +%s.%N) - $start" | bc)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(median "${declared[@]}") h=$(median "${hand[@]}")
printf 'declared %.2f s, hand loop %.2f s (medians of %d), ratio %.3f\n' "$d" "$h" "$runs" "$(echo "$d / $h" | bc -l)"
