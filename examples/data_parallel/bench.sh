#!/usr/bin/env bash
# Data-parallel cost: `mpirun -n 2` against one process with `grad_accumulation: 2` (the same
# run, checked below), one thread per process, whole process timed (start-up included),
# medians of RUNS runs (default 5). Three cases: the benchmark's medium task (MLP 784→256→10,
# 8,192 items, batch 64) at 2 and at 10 epochs, a compute-bound MLP (784→768→768→10,
# batch 128, `bin/deep.rs`) at 4 epochs, and the same binary reading 256 features, whose
# 768x768 matrix then holds 74 % of the values (256→768→768→10, `--set inputs=256`), at 8
# epochs. Prints per case the wall-time ratio, rank
# 0's summary line (bytes sent per step, the share of the optimizer state rank 0 keeps, and
# where each rank's training time went) and the peak RSS of one process and of each rank.
# Open MPI runs with `--mca pml ob1`: on one node its default UCX layer adds 0.2 s to every
# start (MPI_Init + MPI_Finalize of an empty C program: 0.35 s, 0.14 s with ob1).
# Needs Open MPI: apt-get install openmpi-bin libopenmpi-dev libclang-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
cargo build --release -q -p data_parallel --bin medium --bin deep --features mpi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export RAYON_NUM_THREADS=1
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Runs "$@" with stderr to $out/stderr; prints the wall seconds.
seconds() { local s=$(date +%s.%N); "$@" >/dev/null 2>"$out/stderr"; echo "$(date +%s.%N) - $s" | bc; }
# Peak resident set (KB) of each process of the last run, as `/usr/bin/time` reported it.
peaks() { grep -o 'peak-rss [0-9]*' "$out/stderr" | awk '{print $2}' | tr '\n' ' '; }

case_() {
    local label=$1 bin=target/release/$2 name=$3 epochs=$4 set=${5:-}
    local one=() two=() one_rss=() rank_rss=() summary=""
    for i in $(seq "$runs"); do
        one+=("$(seconds /usr/bin/time -f 'peak-rss %M' "$bin" --artifacts "$out/one-$i" \
            --epochs "$epochs" ${set:+--set "$set"} --set grad_accumulation=2 --quiet)")
        one_rss+=("$(peaks)")
        two+=("$(seconds mpirun --allow-run-as-root --oversubscribe --mca pml ob1 -n 2 \
            sh -c "exec /usr/bin/time -f \"peak-rss %M\" $bin --artifacts $out/two-$i --epochs $epochs ${set:+--set $set}")")
        rank_rss+=("$(peaks)")
        summary=$(grep '^data parallel' "$out/stderr")
    done
    cmp -s "$out/one-1/$name/run-1/metrics.csv" "$out/two-1/$name/run-1/metrics.csv" \
        || { echo "$label: the two runs differ" >&2; exit 1; }
    local m1 m2
    m1=$(printf '%s\n' "${one[@]}" | median)
    m2=$(printf '%s\n' "${two[@]}" | median)
    echo "== $label, $epochs epochs"
    echo "one process, grad_accumulation 2: ${m1} s (median of $runs); peak RSS KB: ${one_rss[*]}"
    echo "mpirun -n 2:                       ${m2} s (median of $runs); peak RSS KB per rank: ${rank_rss[*]}"
    echo "ratio: $(echo "scale=2; $m2 / $m1" | bc)"
    echo "rank 0: $summary"
    rm -rf "$out"/one-* "$out"/two-*
}

case_ medium medium medium_parallel 2
case_ medium medium medium_parallel 10
case_ deep deep deep_parallel 4
case_ dominant deep deep_parallel 8 inputs=256
