#!/usr/bin/env bash
# keras3-torch alone, re-measured (README.md, "keras3-torch re-measurement"): the same design as measure.sh (3 rounds,
# the three progress forms in an order rotating by round, mnist_mlp and mnist_cnn at smoke size, synthetic data,
# 5 epochs), with nothing else running on the machine. The first pass's keras3-torch records, taken while other work
# shared the two cores, are kept under runs/callback-cpu-contended/. Run from the repository root after
# `make build-keras3-torch DEVICE=cpu` (and the local settings of .ci/run in the environment), then
# `make collect ...` as measure.sh does and `python results/method-cpu-callback/summarise.py ...`.
set -x
cd "$(dirname "$0")/../.."
keras="keras2-tf keras3-tf keras3-jax keras3-torch"
common=(DEVICE=cpu RESULTS_DIR="$PWD/results/method-cpu-callback" REPEATS=3 SEED=1 RUN=callback-cpu
        STACKS="$keras" WORKLOADS="mnist_mlp mnist_cnn" EPOCHS=5 DATA=synthetic HISTORY=off)
forms=("" "progress=bar" "progress=none")
date
for r in 1 2 3; do
  for i in 0 1 2; do
    make --no-print-directory bench-keras3-torch "${common[@]}" ROUND=$r ${forms[$(( (i + r - 1) % 3 ))]:+SET=${forms[$(( (i + r - 1) % 3 ))]}}
  done
done
date
make --no-print-directory collect "${common[@]}"
date
echo MEASURE-DONE
