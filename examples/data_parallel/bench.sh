#!/usr/bin/env bash
# Data-parallel cost on the benchmark's medium task: `mpirun -n 2` against one process with
# `grad_accumulation: 2` (the same run, checked below), one thread per process, whole process
# timed (start-up included), medians of RUNS runs (default 5) of EPOCHS epochs (default 2, the
# benchmark's). Open MPI runs with `--mca pml ob1`: on one node its default UCX layer adds
# 0.2 s to every start (MPI_Init + MPI_Finalize of an empty C program: 0.35 s, 0.14 s with
# ob1). Prints the wall-time ratio, the
# share of training time the exchanges took on rank 0, and the bytes each rank sends per step.
# Needs Open MPI: apt-get install openmpi-bin libopenmpi-dev libclang-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
epochs=${2:-2}
cargo build --release -q -p data_parallel --bin medium --features mpi
bin=target/release/medium
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export RAYON_NUM_THREADS=1
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds() { local s=$(date +%s.%N); "$@" >/dev/null 2>"$out/stderr"; echo "$(date +%s.%N) - $s" | bc; }
one=(); two=()
for i in $(seq "$runs"); do
    one+=("$(seconds "$bin" --artifacts "$out/one-$i" --epochs "$epochs" --set grad_accumulation=2 --quiet)")
    two+=("$(seconds mpirun --allow-run-as-root --oversubscribe --mca pml ob1 -n 2 "$bin" --artifacts "$out/two-$i" --epochs "$epochs")")
    summary=$(grep '^data parallel' "$out/stderr")
done
cmp -s "$out/one-1/medium_parallel/run-1/metrics.csv" "$out/two-1/medium_parallel/run-1/metrics.csv" \
    || { echo "the two runs differ" >&2; exit 1; }
m1=$(printf '%s\n' "${one[@]}" | median)
m2=$(printf '%s\n' "${two[@]}" | median)
echo "$epochs epochs"
echo "one process, grad_accumulation 2: ${m1} s (median of $runs)"
echo "mpirun -n 2:                       ${m2} s (median of $runs)"
echo "ratio: $(echo "scale=2; $m2 / $m1" | bc)"
echo "rank 0: $summary"
