#!/usr/bin/env bash
# Incremental release rebuild after touching one source file, for the `training!` example and
# its two hand-written baselines, interleaved; prints each run and the medians, and writes the
# medians with the ratios to docs/src/compile-cost.txt, which the book's benchmark page
# includes (so the page shows the last measurement, with its commit), and rewrites the README's
# line on rebuild time with them.
# Usage: examples/bench/compile-cost.sh [rounds, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
targets=(
  "classification examples/classification/main.rs -p classification"
  "hand-classification examples/bench/hand_classification.rs -p bench --bin hand-classification"
  "hand-checkpointing examples/bench/hand_checkpointing.rs -p bench --bin hand-checkpointing"
)
for target in "${targets[@]}"; do
  read -r _ _ args <<<"$target"
  cargo build --release --quiet $args
done
declare -A times
for ((round = 1; round <= rounds; round++)); do
  for target in "${targets[@]}"; do
    read -r name file args <<<"$target"
    touch "$file"
    start=$(date +%s.%N)
    cargo build --release --quiet $args
    took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    times[$name]+="$took "
    printf '%-20s round %d: %.2f s\n' "$name" "$round" "$took"
  done
done
declare -A medians
for target in "${targets[@]}"; do
  read -r name _ <<<"$target"
  median=$(tr ' ' '\n' <<<"${times[$name]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  medians[$name]=$median
  printf '%-20s median %.2f s\n' "$name" "$median"
done
ratio() { awk -v a="${medians[classification]}" -v b="${medians[$1]}" 'BEGIN { printf "%.2f", a / b }'; }
{
  printf 'median of %d rounds, %s, commit %s\n' "$rounds" "$(date -u +%Y-%m-%d)" "$(git rev-parse --short HEAD)"
  for target in "${targets[@]}"; do
    read -r name _ <<<"$target"
    printf '%-20s %.2f s\n' "$name" "${medians[$name]}"
  done
  printf 'classification / hand-classification: %sx\n' "$(ratio hand-classification)"
  printf 'classification / hand-checkpointing:  %sx\n' "$(ratio hand-checkpointing)"
} > docs/src/compile-cost.txt
# The README's line, rewritten with the same figures.
sentence="A release rebuild after editing an experiment takes **$(ratio hand-checkpointing)×** the time of a hand-written Burn loop that checkpoints ($(printf '%.2f' "${medians[classification]}") s against $(printf '%.2f' "${medians[hand-checkpointing]}") s; \`examples/bench/compile-cost.sh\` measures it and rewrites this line)."
awk -v line="$sentence" '/^A release rebuild after editing an experiment/ { print line; next } { print }' README.md > README.md.new
mv README.md.new README.md
