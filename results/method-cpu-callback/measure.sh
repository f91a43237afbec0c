#!/usr/bin/env bash
# The CPU measurement (results/method-cpu-callback/README.md): the Keras stacks' progress forms, interleaved.
# Per round and stack, the three forms run one after another, their order rotating by round (a Latin square:
# round 1 default, bar, none; round 2 bar, none, default; round 3 none, default, bar), each a `make bench-<stack>`
# of mnist_mlp and mnist_cnn at smoke size, synthetic data, 5 epochs (4 steady epochs for ms/step).
# default: the 2017 notebooks' fit(verbose=0) + a per-batch callback reading the logs (progress=keras_tqdm);
# progress=bar: fit(verbose=1), the old default; progress=none: fit(verbose=0), no callback.
# Run from the repository root after `make build DEVICE=cpu STACKS="keras2-tf keras3-tf keras3-jax keras3-torch"`;
# the local settings of .ci/run (BASE_IMAGE, CA_BUNDLE, DOCKER, COMPOSE, PYTHON) pass through the environment.
# It writes results/method-cpu-callback/{runs/,callback-cpu.csv,callback-cpu.jsonl,report.md,plots/}; then
# `python results/method-cpu-callback/summarise.py results/method-cpu-callback/callback-cpu.csv`.
set -x
cd "$(dirname "$0")/../.."
keras="keras2-tf keras3-tf keras3-jax keras3-torch"
common=(DEVICE=cpu RESULTS_DIR="$PWD/results/method-cpu-callback" REPEATS=3 SEED=1 RUN=callback-cpu
        STACKS="$keras" WORKLOADS="mnist_mlp mnist_cnn" EPOCHS=5 DATA=synthetic HISTORY=off)
forms=("" "progress=bar" "progress=none")
one() {  # one ROUND STACK FORM: FORM empty is the default
    make --no-print-directory bench-$2 "${common[@]}" ROUND=$1 ${3:+SET=$3}
}
date
for r in 1 2 3; do
  for s in $keras; do
    for i in 0 1 2; do one $r $s "${forms[$(( (i + r - 1) % 3 ))]}"; done
  done
done
date
make --no-print-directory collect "${common[@]}"
date
echo MEASURE-DONE
