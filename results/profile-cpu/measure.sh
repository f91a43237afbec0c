#!/usr/bin/env bash
# Profiled against unprofiled: the same smoke cell of each stack installed natively (no Docker), ROUNDS rounds, each
# round running every stack's cell once without and once with --profile, the pair's order alternating by round
# (AB, BA, AB, BA), each run its own `bench run` (one repeat: the one a profile runs in). At the lowest CPU priority.
# Usage (from the repository root): results/profile-cpu/measure.sh [ROUNDS]   (PYTHON: the interpreter, default python)
set -euo pipefail
ROUNDS=${1:-4}
PY=${PYTHON:-python}
OUT=results/profile-cpu/runs
STACKS=(pytorch jax keras3-jax keras3-torch keras3-tf)
for round in $(seq 1 "$ROUNDS"); do
  if (( round % 2 )); then order=(plain profiled); else order=(profiled plain); fi
  for stack in "${STACKS[@]}"; do
    for kind in "${order[@]}"; do
      flag=(); [[ $kind == profiled ]] && flag=(--profile)
      nice -n 19 "$PY" -m bench run --device cpu --stack "$stack" --workload mnist_cnn --repeats 1 --force \
        --out "$OUT/$kind-r$round" "${flag[@]}" | grep '^\[' || true
    done
  done
done
