#!/usr/bin/env bash
# What MLflow tracking costs a run: the resumable example (6 steps an epoch, a checkpoint each
# epoch), whole process, release, medians of N alternating runs, untracked, tracked on a live
# server and tracked on a server that is down (a closed port), each at 300 and 1200 epochs: the
# difference between the two lengths is the cost per step, the rest a cost per run (the
# server's answers at the start and the end, which the run waits for).
# The run's own CPU time (user + system, the tracking thread included) is measured too: on one
# machine the server's work competes with training for the same cores, which a server
# elsewhere does not.
# Usage: examples/checkpointing/bench-mlflow.sh http://127.0.0.1:5000 [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
server="${1:?the URI of a running mlflow server}"
runs="${2:-5}"
cargo build --release --quiet -p checkpointing
bin=target/release/train
down="http://127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
time_run() { # variant epochs uri
    local start end
    rm -rf "$work/run"
    start=$(date +%s%N)
    if [ -n "$3" ]; then
        MLFLOW_TRACKING_URI="$3" MLFLOW_EXPERIMENT_NAME=bench /usr/bin/time -f "%U %S" -o "$work/cpu" \
            "$bin" --epochs "$2" --quiet --artifacts "$work/run" 2>/dev/null
    else
        env -u MLFLOW_TRACKING_URI /usr/bin/time -f "%U %S" -o "$work/cpu" \
            "$bin" --epochs "$2" --quiet --artifacts "$work/run" 2>/dev/null
    fi
    end=$(date +%s%N)
    echo $(((end - start) / 1000000)) >>"$work/$1-$2.ms"
    awk '{printf "%d\n", ($1 + $2) * 1000}' "$work/cpu" >>"$work/$1-$2.cpu"
}
for _ in $(seq "$runs"); do
    for epochs in 300 1200; do
        time_run untracked "$epochs" ""
        time_run live "$epochs" "$server"
        time_run down "$epochs" "$down"
    done
done
median() { sort -n "$work/$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for what in ms cpu; do
    echo
    echo "$what: | variant | 300 epochs (ms) | 1200 epochs (ms) | per step over untracked | per run over untracked |"
    echo "|---|---|---|---|---|"
    for v in untracked live down; do
        python3 - "$v" "$(median untracked-300.$what)" "$(median untracked-1200.$what)" \
            "$(median $v-300.$what)" "$(median $v-1200.$what)" <<'PY'
import sys
v, u3, u12, s, l = sys.argv[1], *map(int, sys.argv[2:])
steps = (1200 - 300) * 6
per_step = ((l - u12) - (s - u3)) / steps * 1000
per_run = (s - u3) - per_step * 300 * 6 / 1000
print(f"| {v} | {s} | {l} | {per_step:.1f} µs | {per_run:.0f} ms |")
PY
    done
done
