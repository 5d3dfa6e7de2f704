#!/usr/bin/env bash
# The benchmark on GPUs: the medium and large tasks with our loop, the hand-written loop and
# Burn's Learner on each device named, the same ratio table as the CPU benchmark (whole
# process, medians; `main.rs` says what each column is). Meant for a machine with a GPU (the
# library's `device` tool, when a task is lent one); the `wgpu` rows also run on lavapipe, which
# checks the script, not a GPU.
#
# Usage: examples/bench/gpu.sh [iterations, default 5]
#   FEATURES  backends built in, default `cuda,wgpu` (`wgpu` alone where CUDA cannot be built)
#   DEVICES   devices measured, default the backends in FEATURES (e.g. `cuda wgpu`)
#   TASKS     default `medium,large,cnn64` (cnn64: f32, bf16 and f16, whose peak-RSS column is
#             host memory only: on a GPU the activations are device memory)
#   BENCH_BIN a bench binary built elsewhere (`cargo build --release -p bench --features
#             burn-experiment/cuda,burn-experiment/wgpu`), for a machine without cargo
# Building `cuda` runs a build script that downloads an LLVM bundle: build where that download
# is reachable, or set DOCS_RS=1 to skip it (the kernels are compiled at run time by NVRTC).
set -euo pipefail
cd "$(dirname "$0")/../.."
iterations=${1:-5}
features=${FEATURES:-cuda,wgpu}
devices=${DEVICES:-${features//,/ }}
tasks=${TASKS:-medium,large,cnn64}
bin=${BENCH_BIN:-}
if [ -z "$bin" ]; then
    flags=$(echo "$features" | sed 's/[^,]*/burn-experiment\/&/g')
    cargo build --release --quiet -p bench --bin bench --features "$flags"
    bin=target/release/bench
fi
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fi
for device in $devices; do
    "$bin" --iterations "$iterations" --tasks "$tasks" --device "$device"
done
